"""README.md's "Supported versions" table is the one scripts/supported-versions writes from the
torch matrix's results (docs/supported-versions.json): nobody edits it by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_readme_table_is_generated_from_the_matrix_results():
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "supported-versions"), "table", "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
