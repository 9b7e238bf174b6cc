"""The fixes that exist for an object the model returns and torch.export cannot flatten.

Each found in the code, never by the name of a library, a type or an argument:

* **turn it off**: the call that constructed the object, or a `return` that handed it up, sits
  under `if` statements; a parameter of that function the condition tests for truth (`if
  use_cache and past_key_values is None:` tests `use_cache`) is a switch. The fix names it, the line of the target's inputs factory
  that passes it (when the inputs pass it), and the attribute of the model that holds its
  default (`model.config.use_cache`), when one does;
* **register the type**: a dataclass with `torch.export.register_dataclass`, any other type
  with torch's pytree registration — and the functions the type's own library has for that:
  its public module-level functions that call a pytree registration themselves
  (`register_pytree_node`, `register_dataclass`) and name the type or one of its base classes;
* **return only tensors**, always.

Plain Python on source text (ast) and the objects the job loaded.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import os
import sys
import textwrap
from dataclasses import dataclass
from typing import Any

from onnxlens.exporter.locations import Frame, source_line
from onnxlens.exporter.locations.names import short_path
from onnxlens.exporter.locations.syntax import enclosing_function, parsed
from onnxlens.exporter.types import Location

# The names of torch's pytree registrations a library's function calls to register a type.
_REGISTRATIONS = ("register_pytree_node", "register_dataclass")


@dataclass
class Switch:
    """A parameter whose truth decides that the object is built."""

    name: str
    condition: str  # the `if` statement's line
    at: Frame  # where the condition is
    passed: Location | None = None  # the inputs factory's line that passes it
    value: Any = None  # what the inputs pass
    default_holder: str | None = None  # `config`: the model attribute with the parameter's default


def switches(sites: list[Frame], forward: Any, kwargs: dict, inputs_factory: Any, model: Any) -> list[Switch]:
    """The switches of the `if` statements around `sites` (the call that constructed the value,
    the `return` statements that handed it up) that the model's forward takes or the model
    holds a default of."""
    accepts = _parameters(forward)
    found: list[Switch] = []
    for site in sites:
        tree = parsed(site.file)
        function = enclosing_function(tree, site.line) if tree is not None else None
        if function is None:
            continue
        parameters = {argument.arg for argument in function.args.args + function.args.kwonlyargs}
        for statement in _enclosing_ifs(function, site.line):
            for name in _truth_tested(statement.test):
                if name not in parameters or any(switch.name == name for switch in found):
                    continue
                switch = Switch(name, (source_line(site.file, statement.lineno) or "").strip(),
                                Frame(site.file, statement.lineno, function.name))
                switch.default_holder = _default_holder(model, name)
                if name in kwargs:
                    switch.value = kwargs[name]
                    switch.passed = _passing_line(inputs_factory, name)
                if name in accepts or "**" in accepts or switch.default_holder:
                    found.append(switch)
    return found


def describe_switch(switch: Switch, workspace: Any) -> str:
    where = f"`{switch.condition}`, {short_path(switch.at.file, workspace)}:{switch.at.line}"
    text = f"turn it off: it is only made or returned when `{switch.name}` is true ({where})"
    if switch.passed is not None and switch.value:
        return text + f"; your inputs pass {switch.name}={switch.value!r}: pass {switch.name}=False"
    options = [f"pass {switch.name}=False in the inputs"]
    if switch.default_holder:
        options.append(f"set model.{switch.default_holder}.{switch.name} = False in the model factory")
    return text + ": " + ", or ".join(options)


def registrations(cls: type) -> list[str]:
    """The public functions of `cls`'s library that register it, or a base of it, as a pytree
    node, as calls with their place: `` `pkg.module.register_types(model)` (pkg/module.py:12) ``."""
    package = cls.__module__.split(".", 1)[0]
    root = _package_dir(package)
    if root is None:
        return []
    names = {base.__name__ for base in cls.__mro__ if base is not object}
    found = []
    for path in _files_calling_registrations(root):
        module = ".".join([package, *os.path.relpath(path, root)[:-3].split(os.sep)])
        module = module.removesuffix(".__init__")
        for call, line in _registering_functions(path, frozenset(names)):
            found.append(f"`{module}.{call}` ({short_path(path)}:{line})")
    return found


def _package_dir(package: str) -> str | None:
    module = sys.modules.get(package)
    file = getattr(module, "__file__", None)
    if not file or os.path.basename(file) != "__init__.py":
        return None
    return os.path.dirname(os.path.realpath(file))


@functools.lru_cache(maxsize=16)
def _files_calling_registrations(root: str) -> tuple[str, ...]:
    """The library's source files that mention a pytree registration (read once a process)."""
    found = []
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(directory, name)
            try:
                with open(path, "rb") as handle:
                    text = handle.read()
            except OSError:
                continue
            if any(registration.encode() in text for registration in _REGISTRATIONS):
                found.append(path)
    return tuple(found)


@functools.lru_cache(maxsize=64)
def _registering_functions(path: str, names: frozenset[str]) -> list[tuple[str, int]]:
    """Public module-level functions of `path` that call a pytree registration themselves and
    name one of `names`: (how to call it, its line)."""
    tree = parsed(path)
    if tree is None:
        return []
    found = []
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        name = node.name
        if name.startswith("_") or name in _REGISTRATIONS or not _called_names(node) & set(_REGISTRATIONS):
            continue
        mentioned = {item.id for item in ast.walk(node) if isinstance(item, ast.Name)}
        mentioned |= {item.attr for item in ast.walk(node) if isinstance(item, ast.Attribute)}
        if mentioned & names:
            parameters = [argument.arg for argument in node.args.posonlyargs + node.args.args]
            found.append((f"{name}({', '.join(parameters)})", node.lineno))
    return found


def _called_names(function: ast.AST) -> set[str]:
    called = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            target = node.func
            if isinstance(target, ast.Name):
                called.add(target.id)
            elif isinstance(target, ast.Attribute):
                called.add(target.attr)
    return called


def _enclosing_ifs(function: ast.AST, line: int) -> list[ast.If]:
    """The `if` statements whose body (not their `else`) holds `line`, outermost first."""
    found = []
    for node in ast.walk(function):
        if isinstance(node, ast.If) and any(
                child.lineno <= line <= (child.end_lineno or child.lineno) for child in node.body):
            found.append(node)
    return sorted(found, key=lambda node: node.lineno)


def _truth_tested(test: ast.expr) -> list[str]:
    """Names a condition requires to be true: `flag`, and each `flag` of `flag and ...`."""
    if isinstance(test, ast.Name):
        return [test.id]
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [name for value in test.values for name in _truth_tested(value)]
    return []


def _parameters(function: Any) -> set[str]:
    """Parameter names; `**` when it takes any keyword."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return set()
    return {"**" if parameter.kind is parameter.VAR_KEYWORD else parameter.name for parameter in parameters}


def _default_holder(model: Any, name: str) -> str | None:
    """The model's attribute (not a module, tensor or container) that has `name`: where the
    parameter's default comes from (`model.config.use_cache`)."""
    for attribute, value in vars(model).items():
        if attribute.startswith("_") or isinstance(value, (dict, list, tuple, set, str, int, float, bool)):
            continue
        if type(value).__module__.startswith("torch"):
            continue
        if not callable(getattr(value, name, None)) and hasattr(value, name):
            return attribute
    return None


def _passing_line(factory: Any, name: str) -> Location | None:
    """The line of the inputs factory that passes `name` (a dict key or a keyword argument)."""
    try:
        function = inspect.unwrap(factory)
        path = inspect.getsourcefile(function)
        lines, start = inspect.getsourcelines(function)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return None
    if not path:
        return None
    for node in ast.walk(tree):
        key = None
        if isinstance(node, ast.Dict):
            key = next((item for item in node.keys if isinstance(item, ast.Constant) and item.value == name), None)
        elif isinstance(node, ast.Call):
            key = next((item for item in node.keywords if item.arg == name), None)
        if key is not None:
            line = start + key.lineno - 1
            text = source_line(path, line) or ""
            column = text.find(name)
            if column > 0 and text[column - 1] in "\"'":
                column -= 1  # the dict key's quote
            return Location(file=os.path.realpath(path), line=line, column=max(column, 0) + 1)
    return None


def is_dataclass_type(cls: Any) -> bool:
    return isinstance(cls, type) and dataclasses.is_dataclass(cls)
