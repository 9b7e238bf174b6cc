"""Where the lines an export saw are in the edited buffer (server/lsp/exported_text.py): files
on disk as the export read them, the buffer's text as an editor holds it."""

from __future__ import annotations

from pathlib import Path

from onnxlens.exporter.types import ExportResult, LineInfo
from onnxlens.server.lsp.exported_text import ExportedText, unchanged_lines

MODEL = """class Block(nn.Module):
    def forward(self, x):
        h = self.norm(x)
        x = x + self.attn(h)
        return x + self.ff(x)
"""
OWNER = ("pyproject.toml", "encoder")


def _setup(tmp_path: Path) -> tuple[str, dict[str, str], ExportedText]:
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    buffers: dict[str, str] = {}  # open documents: path -> text
    texts = ExportedText(lambda p: Path(p).read_text(),
                         lambda p: (buffers.get(p) if p in buffers else Path(p).read_text()).splitlines())
    lines = [LineInfo(file=str(path), line=n, code=MODEL.splitlines()[n - 1].strip(), produced=["[2, 4] f32"])
             for n in (3, 4, 5)]
    texts.remember(OWNER, ExportResult(target="encoder", status="ok", lines=lines))
    return str(path.resolve()), buffers, texts


def test_lines_follow_the_edits_and_an_edited_line_has_none(tmp_path):
    path, buffers, texts = _setup(tmp_path)
    assert [texts.now(OWNER, path, n) for n in (3, 4, 5)] == [3, 4, 5]
    # Two lines typed above, the middle line edited (not saved: the buffer only).
    buffers[path] = MODEL.replace("    def forward(self, x):\n", "    def forward(self, x):\n        # a\n        # b\n") \
        .replace("x + self.attn(h)", "x + self.attn(h) * 2")
    assert [texts.now(OWNER, path, n) for n in (3, 4, 5)] == [5, None, 7]
    assert [texts.then(OWNER, path, n) for n in (5, 6, 7)] == [3, None, 5]  # hover's direction
    # Undone: back where they were.
    del buffers[path]
    assert [texts.now(OWNER, path, n) for n in (3, 4, 5)] == [3, 4, 5]


def test_a_line_changed_on_disk_before_the_result_came_has_none(tmp_path):
    """The export read `x = x + self.attn(h)`; a save during the export changed the file."""
    path = tmp_path / "model.py"
    path.write_text(MODEL.replace("x + self.attn(h)", "x + self.attn(h, h)"))
    texts = ExportedText(lambda p: Path(p).read_text(), lambda p: Path(p).read_text().splitlines())
    lines = [LineInfo(file=str(path), line=n, code=MODEL.splitlines()[n - 1].strip()) for n in (3, 4, 5)]
    texts.remember(OWNER, ExportResult(target="encoder", status="ok", lines=lines))
    resolved = str(path.resolve())
    assert [texts.now(OWNER, resolved, n) for n in (3, 4, 5)] == [3, None, 5]
    texts.forget(OWNER)
    assert texts.now(OWNER, resolved, 3) is None


def test_unchanged_lines_pairs_only_lines_an_edit_left_alone():
    before = ["a", "b", "c", "b"]
    assert unchanged_lines(before, before) == {1: 1, 2: 2, 3: 3, 4: 4}
    assert unchanged_lines(before, ["a", "x", "b", "c", "b"]) == {1: 1, 2: 3, 3: 4, 4: 5}
    assert unchanged_lines(before, ["a", "B", "c", "b"]) == {1: 1, 3: 3, 4: 4}
