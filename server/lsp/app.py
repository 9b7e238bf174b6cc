"""The language server put together: the feature list, `create_language_server` and `serve()`.

The one module that knows every feature. The server class knows none (server.py); each feature
is a small class given what it needs (the session; lifecycle and documents also the triggers)
and hands back its handler table, which is registered here. Features never import each other.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from onnxlens.server.lsp.client import Client
from onnxlens.server.lsp.connection.server import OnnxlensServer
from onnxlens.server.lsp.exporting.triggers import Triggers
from onnxlens.server.lsp.features.code_actions import CodeActions
from onnxlens.server.lsp.features.code_lens import CodeLens
from onnxlens.server.lsp.features.commands import Commands
from onnxlens.server.lsp.features.documents import Documents
from onnxlens.server.lsp.features.hover import Hover
from onnxlens.server.lsp.features.inlay_hints import InlayHints
from onnxlens.server.lsp.features.lifecycle import Lifecycle
from onnxlens.server.lsp.features.stats import Stats
from onnxlens.server.lsp.handlers import Command, Feature
from onnxlens.server.lsp.session import Session

Server = TypeVar("Server", bound=OnnxlensServer)


def default_features(session: Session) -> list[Feature]:
    """onnxlens' features, made for one session."""
    triggers = Triggers(session)
    return [Lifecycle(session, triggers), Documents(session, triggers), Hover(session), CodeLens(session),
            InlayHints(session), CodeActions(session), Commands(session), Stats(session)]


def create_language_server(server_cls: type[Server] = OnnxlensServer,
                           features: Callable[[Session], Iterable[Feature]] = default_features) -> Server:
    """A server of `server_cls` with a new session and every feature's handlers registered."""
    server = server_cls()
    session = Session(Client(server))
    for feature in features(session):
        for handler in feature.handlers():
            if isinstance(handler, Command):
                server.command(handler.name)(_function(handler.function))
            else:
                server.feature(handler.method, handler.options)(_function(handler.function))
    server.on_disconnect = session.stop
    return server


def _function(method: Callable[..., Any]) -> Callable[..., Any]:
    """A function calling a feature's bound method: pygls marks the handlers it registers with
    attributes, which a bound method cannot take. It keeps the method's signature and type hints
    (pygls converts command arguments by them) and whether it is a coroutine function."""
    if inspect.iscoroutinefunction(method):
        async def call(*args: Any, **kwargs: Any) -> Any:
            return await method(*args, **kwargs)
    else:
        def call(*args: Any, **kwargs: Any) -> Any:
            return method(*args, **kwargs)
    return functools.wraps(method)(call)


def serve() -> None:
    """`onnxlens serve`: the language server on stdio."""
    logging.basicConfig(level=logging.INFO, format="onnxlens %(levelname)s %(name)s: %(message)s")
    logging.getLogger("pygls").setLevel(logging.WARNING)  # it logs every message at INFO
    create_language_server().start_io()
