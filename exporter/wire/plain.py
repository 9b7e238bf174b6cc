"""Plain data: dataclasses of str/int/float/bool/bytes/list/tuple/dict and of each other, which
cross the msgpack pipe and the JSON output as dicts. Torch-free (the server imports it).

`to_dict` is `dataclasses.asdict` unless a class says otherwise (optional details absent rather
than null in the JSON output). `decode` is the one decoder: it rebuilds a dataclass from a dict
by its fields' type hints, so a nested field (a `Location`, a `list[Finding]`, a
`tuple[Finding, ...]`, `VerificationSummary | None`) comes back typed without a hand-written
`from_dict` per class.

Rules of `decode` (forward compatible, never stricter than the data's producer):
* keys the class does not know are ignored (a newer peer's fields); missing ones take the
  field's default (a missing required field is a TypeError, as the constructor raises);
* a dict where the hint names a dataclass (alone, in `X | None`, or as the element type of a
  list, tuple or dict value) becomes that dataclass; a list where the hint is a tuple becomes one;
* anything else is kept as it came: values are not checked against their hints.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, TypeVar, Union

T = TypeVar("T")


class Plain:
    """Base of plain data classes: `to_dict` for the wire and the JSON output, `from_dict` (the
    generic `decode`) back."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls: type[T], data: dict[str, Any]) -> T:
        return decode(cls, data)


def decode(cls: type[T], data: dict[str, Any]) -> T:
    """`cls` rebuilt from `data` (the rules in the module's docstring)."""
    known = _fields(cls)
    return cls(**{name: _value(known[name], value) for name, value in data.items() if name in known})


@functools.cache
def _fields(cls: type) -> dict[str, Any]:
    """Field name -> its resolved type hint (init fields only; ClassVars are not fields)."""
    hints = typing.get_type_hints(cls)
    return {field.name: hints[field.name] for field in dataclasses.fields(cls) if field.init}


def _value(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return decode(hint, value) if isinstance(value, dict) else value
    origin = typing.get_origin(hint)
    arguments = typing.get_args(hint)
    if origin in (Union, types.UnionType):
        classes = [argument for argument in arguments
                   if isinstance(argument, type) and dataclasses.is_dataclass(argument)]
        if len(classes) == 1 and isinstance(value, dict):
            return decode(classes[0], value)
        containers = [argument for argument in arguments if typing.get_origin(argument) in (list, tuple, dict)]
        return _value(containers[0], value) if len(containers) == 1 else value
    if origin is list and arguments and isinstance(value, list):
        return [_value(arguments[0], item) for item in value]
    if origin is tuple and arguments and isinstance(value, (list, tuple)):
        return tuple(_value(arguments[0], item) for item in value)
    if origin is dict and len(arguments) == 2 and isinstance(value, dict):
        if _is_plain_hint(arguments[1]):
            return value
        return {key: _value(arguments[1], item) for key, item in value.items()}
    return value


@functools.cache
def _is_plain_hint(hint: Any) -> bool:
    """No dataclass anywhere inside: a value of it is kept as it came."""
    if isinstance(hint, type):
        return not dataclasses.is_dataclass(hint)
    return all(_is_plain_hint(argument) for argument in typing.get_args(hint) if argument is not Ellipsis)
