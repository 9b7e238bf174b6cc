"""The syntax tree of a source file, for the rules that read the user's code (never run it):
parsed once per version of the file (its mtime), and the function around a line."""

from __future__ import annotations

import ast
import functools
import os


def parsed(path: str) -> ast.Module | None:
    """The file's syntax tree; None when it cannot be read or parsed."""
    try:
        mtime = os.stat(path).st_mtime
    except (OSError, ValueError):
        return None
    return _parse(path, mtime)


def enclosing_function(tree: ast.AST, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The innermost function whose body holds `line`."""
    around = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
              and node.lineno <= line <= (node.end_lineno or node.lineno)]
    return max(around, key=lambda function: function.lineno) if around else None


@functools.lru_cache(maxsize=64)
def _parse(path: str, mtime: float) -> ast.Module | None:  # mtime: the cache key only
    try:
        with open(path, encoding="utf-8") as handle:
            return ast.parse(handle.read(), filename=path)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None
