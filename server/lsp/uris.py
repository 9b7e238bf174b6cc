"""file:// URIs <-> the one path spelling used as a key everywhere (project.norm)."""

from __future__ import annotations

from pathlib import Path

from pygls.uris import from_fs_path, to_fs_path

from onnxlens.server.lsp.exporting.project import norm


def uri_of(path: str) -> str:
    return from_fs_path(str(path)) or Path(path).as_uri()


def path_of(uri: str) -> str:
    return norm(to_fs_path(uri) or uri)
