"""The diagnostic codes as documented: the rows of the code tables in docs/diagnostics.md.

docs/diagnostics.md is the one source of every code's help text: the SARIF rules (id, short and
full description, help) are read from its tables, and `tests/cli/test_sarif.py` checks that every
code onnxlens reports has a row. The package ships the page as `onnxlens/server/diagnostics.md`
(a link to docs/diagnostics.md in the source tree, a copy in the wheel and the sdist).

A table of codes is one whose header is `| code | severity | when |`; a code may have several
rows (`torch-export`: the error, and the warning for a dimension that came out static).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

DOCUMENT = Path(__file__).with_name("diagnostics.md")
DOCS_URL = "https://github.com/onnxlens/onnxlens/blob/main/docs/diagnostics.md"

_HEADER = re.compile(r"^\|\s*code\s*\|\s*severity\s*\|\s*when\s*\|\s*$")
_ROW = re.compile(r"^\|\s*`(?P<code>[a-z][a-z-]*)`\s*\|\s*(?P<severity>error|warning|info)\s*\|\s*(?P<when>.+?)\s*\|\s*$")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")


@dataclass(frozen=True)
class Rule:
    """One diagnostic code and what the documentation says of it, row by row."""

    code: str
    cases: tuple[tuple[str, str], ...]  # (severity, when: markdown as written) per table row

    @property
    def severity(self) -> str:
        """The first row's severity: the code's default."""
        return self.cases[0][0]

    @property
    def summary(self) -> str:
        """The first row's situation up to its first explanation (`:`, `;` or `(`), as the page
        words it (its first word may be a name written in lower case: torch.export, onnxruntime)."""
        text = plain(self.cases[0][1])
        return re.split(r": | \(|; ", text, maxsplit=1)[0].strip().rstrip(".") + "."

    @property
    def description(self) -> str:
        """Every row, as plain text."""
        if len(self.cases) == 1:
            return _sentence(plain(self.cases[0][1]))
        return " ".join(f"{severity}: {_sentence(plain(when))}" for severity, when in self.cases)

    @property
    def markdown(self) -> str:
        """Every row, as the documentation writes it, with a link to the page."""
        rows = [f"**{severity}**: {when}" for severity, when in self.cases]
        return "\n\n".join([f"`{self.code}`", *rows, f"[All diagnostic codes]({DOCS_URL}#codes)"])


def plain(markdown: str) -> str:
    """A table cell as plain text: no code spans, links as their text."""
    return _LINK.sub(r"\1", markdown).replace("`", "").replace("\\|", "|")


def _sentence(text: str) -> str:
    text = text.strip()
    return text + ("" if text.endswith(".") else ".")


def parse_rules(text: str) -> dict[str, Rule]:
    """The rows of every code table in `text`, by code, in the order the page lists them."""
    cases: dict[str, list[tuple[str, str]]] = {}
    in_table = False
    for line in text.splitlines():
        if _HEADER.match(line):
            in_table = True
            continue
        if in_table and not line.startswith("|"):
            in_table = False
        match = _ROW.match(line) if in_table else None
        if match:
            cases.setdefault(match["code"], []).append((match["severity"], match["when"]))
    return {code: Rule(code, tuple(rows)) for code, rows in cases.items()}


@functools.cache
def rules() -> dict[str, Rule]:
    """The documented codes (empty when the page is missing from an installation: the SARIF
    rules then name their codes only)."""
    try:
        return parse_rules(DOCUMENT.read_text(encoding="utf-8"))
    except OSError:
        return {}
