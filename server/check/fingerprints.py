"""A finding's identity across commits: the one rule, for SARIF's `partialFingerprints`, the JSON
output's `fingerprint` and the regression gate (which findings are new, which are fixed).

A fingerprint hashes what stays when the code around a finding moves:
* the target (none for config findings) and the code;
* the file, workspace-relative (as every output shows it), so a checkout elsewhere keeps it;
* the text of the finding's line, whitespace-trimmed: not its number, so lines inserted above
  keep it, while an edit of the line itself makes it another finding;
* the message with every number replaced and the workspace root removed: numbers in messages are
  line numbers of other frames, sizes and measured differences, which move without the problem
  changing.
Findings whose parts are all equal (the same call on two identical lines) are told apart by their
order: the n-th of them has `:n` appended.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter

# The key in SARIF `partialFingerprints` (GitHub computes its own `primaryLocationLineHash` beside it).
SARIF_KEY = "onnxlensFinding/v1"

_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?", re.IGNORECASE)
_SPACE = re.compile(r"\s+")


def _normal_message(message: str, root: str) -> str:
    for prefix in {root.rstrip(os.sep) + os.sep, os.path.realpath(root).rstrip(os.sep) + os.sep}:
        message = message.replace(prefix, "")
    return _SPACE.sub(" ", _NUMBER.sub("#", message)).strip()


def fingerprint_base(*, target: str | None, code: str, path: str, line_text: str | None, message: str,
                     root: str) -> str:
    """The hash of one finding's lasting parts (`path` as the outputs show it, workspace-relative)."""
    parts = [target or "", code, path, _SPACE.sub(" ", (line_text or "").strip()), _normal_message(message, root)]
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:32]


def numbered(bases: list[str]) -> list[str]:
    """The fingerprints of a run's findings, in order: each base with its occurrence (`:1`, `:2`)."""
    seen: Counter[str] = Counter()
    out = []
    for base in bases:
        seen[base] += 1
        out.append(f"{base}:{seen[base]}")
    return out
