"""Features and their handler tables: what `create_language_server` (app.py) registers with pygls.

A feature is a small class made for one session; its methods marked `@handles(METHOD)` answer
LSP methods (or custom ones, "onnxlens/stats"), those marked `@command(NAME)` answer
workspace/executeCommand. `handlers()` is the table of the marked methods, bound.

pygls calls a handler with the params only (it passes the server only to functions whose first
parameter is `ls` or annotated with the server's type, and none is): what a feature needs it got
when it was made. pygls converts a command's arguments by its handler's type hints, so those must
resolve at run time (no typing-only names).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from onnxlens.server.lsp.session import Session

F = TypeVar("F", bound=Callable[..., Any])
_MARK = "onnxlens_handler"


@dataclass(frozen=True)
class Handler:
    method: str
    function: Callable[..., Any]
    options: Any = None  # the method's registration options (they go into the server's capabilities)


@dataclass(frozen=True)
class Command:
    name: str
    function: Callable[..., Any]


def handles(method: str, options: Any = None) -> Callable[[F], F]:
    """Marks a feature's method as the handler of an LSP method."""
    def mark(function: F) -> F:
        setattr(function, _MARK, Handler(method, function, options))
        return function
    return mark


def command(name: str) -> Callable[[F], F]:
    """Marks a feature's method as a workspace/executeCommand command."""
    def mark(function: F) -> F:
        setattr(function, _MARK, Command(name, function))
        return function
    return mark


@dataclass(eq=False)
class Feature:
    """Subclasses that need more than the session are dataclasses too, with fields for it."""

    session: Session

    def handlers(self) -> list[Handler | Command]:
        """The methods marked with `handles` or `command`, bound to this feature."""
        return [dataclasses.replace(mark, function=getattr(self, name))
                for name, function in inspect.getmembers(type(self), inspect.isfunction)
                if (mark := getattr(function, _MARK, None)) is not None]
