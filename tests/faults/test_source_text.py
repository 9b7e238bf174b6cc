"""Fault matrix, source-text rows: non-UTF-8 sources, very long lines and CRLF files still get
diagnostics on the right line AND column.

LSP columns count UTF-16 code units (the default position encoding); Python's traceback
columns count UTF-8 bytes. "😀é" before a `raise` is 2 characters, 3 UTF-16 units and 6 UTF-8
bytes, so a server that passes byte offsets through puts the squiggle in the wrong place.
"""

from __future__ import annotations

import pytest
import pytest_asyncio

from tests.support.faults import Session, pyproject
from tests.support.workspace import write

pytestmark = pytest.mark.slow  # the language server and the export worker as processes

TAIL = '''
    return nn.Linear(4, 4)


def example_inputs():
    return (torch.randn(2, 4),)
'''

HEAD = '''import torch
from torch import nn


def build_model():
'''


def _source(raising_line: str, *, head: str = HEAD, newline: str = "\n") -> str:
    return (head + raising_line + "  # FAULT" + TAIL).replace("\n", newline)


SOURCES: dict[str, bytes] = {
    # latin-1 with a coding cookie; non-ASCII before the raise on the failing line
    "latin1": _source('    nom = "caf\xe9 cr\xe8me"; raise ValueError("mauvais mod\xe8le")',
                      head='# -*- coding: latin-1 -*-\n"""Mod\xe8le \xe9crit en latin-1."""\n'
                           + HEAD).encode("latin-1"),
    # CRLF line endings, UTF-8 with a character outside the BMP (2 UTF-16 units) before the raise
    "crlf": _source('    s = "\U0001F600\xe9"; raise ValueError("boom")', newline="\r\n").encode(),
    # a 30,000-character line above, and the raise 9,000 columns into its own line
    "longline": _source('    pad = [' + "0, " * 3000 + '0]; raise ValueError("boom")',
                        head="# " + "x" * 30_000 + "\n" + HEAD).encode(),
}
# no coding cookie and a latin-1 byte in a string literal: Python refuses the file at that line
# (in a comment, Python 3.11 would accept it)
NON_UTF8 = b"import torch\nfrom torch import nn\n\nNAME = 'caf\xe9'\n\ndef build_model():\n" \
           b"    return nn.Linear(4, 4)\n\n\ndef example_inputs():\n    return (torch.randn(2, 4),)\n"

GOOD = (HEAD + "    return nn.Linear(4, 4)\n\n\ndef example_inputs():\n"
        "    return (torch.randn(2, 4),)\n")


def _expected_position(source: bytes, encoding: str) -> tuple[int, int]:
    """(1-based line, 0-based UTF-16 character) of the `raise` on the # FAULT line."""
    text = source.decode(encoding)
    for number, line in enumerate(text.splitlines(), 1):
        if "# FAULT" in line:
            before = line[: line.index("raise")]
            return number, len(before.encode("utf-16-le")) // 2
    raise AssertionError("no fault line")


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    root = tmp_path_factory.mktemp("source-text") / "ws"
    targets = []
    for name, data in {**SOURCES, "nonutf8": NON_UTF8}.items():
        write(root / "models" / f"{name}.py", data)
        targets.append({"name": name, "model": f"models/{name}.py:build_model",
                        "inputs": f"models/{name}.py:example_inputs"})
    write(root / "models" / "__init__.py", "")
    write(root / "pyproject.toml", pyproject(targets, **{"output-dir": ".onnxlens",
                                                         "verify": False}))
    return root.resolve()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def session(ws):
    session = await Session.launch(ws)
    yield session
    await session.close()


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("name, encoding", [("latin1", "latin-1"), ("crlf", "utf-8"),
                                            ("longline", "utf-8")])
async def test_setup_error_line_and_column(session: Session, ws, name, encoding):
    path = ws / "models" / f"{name}.py"
    session.open(path)
    session.save(path)
    line, character = _expected_position(SOURCES[name], encoding)

    diagnostic = await session.wait_diagnostic(path, "setup", line)
    assert diagnostic.range.start.character == character, (
        f"column: got {diagnostic.range.start.character}, expected {character} (UTF-16); "
        f"UTF-8 byte offset would be "
        f"{len(SOURCES[name].decode(encoding).splitlines()[line - 1][:character].encode())}")
    await session.ping(path)

    # the next normal save works (and clears the diagnostic)
    session.save(path, GOOD.replace("\n", "\r\n") if name == "crlf" else GOOD)
    onnx = ws / ".onnxlens" / f"{name}.onnx"
    await session.wait_for(lambda: onnx.exists() and not session.diagnostics_of(path),
                           f"{name} exported and its diagnostic cleared")


@pytest.mark.asyncio(loop_scope="module")
async def test_non_utf8_source_without_cookie_is_an_import_error_on_its_line(session: Session, ws):
    path = ws / "models" / "nonutf8.py"
    session.open(path)
    session.save(path)
    await session.wait_diagnostic(path, "import", 4)  # the line with the \xff byte
    await session.ping(path)

    session.save(path, GOOD)
    onnx = ws / ".onnxlens" / "nonutf8.onnx"
    await session.wait_for(lambda: onnx.exists() and not session.diagnostics_of(path),
                           "nonutf8 exported and its diagnostic cleared")


@pytest.mark.asyncio(loop_scope="module")
async def test_zz_shutdown_leaves_no_process(session: Session, ws):
    left = await session.leftovers_after_shutdown()
    assert not left, f"processes left after shutdown: {left}"
