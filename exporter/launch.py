"""How onnxlens starts a Python interpreter of its own (the export worker's zygote, the probe of
an interpreter's versions, the language server's source reader): never in the workspace.

`python -m X` and `python -c ...` put their working directory first on sys.path. A workspace
there would shadow the standard library and our dependencies with its own modules (a
`json.py`, `logging.py`, `typing.py`, `msgpack.py`) before any of our code runs, and
PYTHONSAFEPATH (-P), which leaves it off, is honoured from Python 3.11 only. A working
directory that was deleted (a workspace removed and created again) even breaks torch's
import. So such an interpreter starts in WORKING_DIRECTORY, the filesystem root: it always
exists and only its owner can put modules there; with PYTHONSAFEPATH it is not on sys.path
at all where Python honours it.

User code is imported by the worker's children, which change to the target's root and put it
on sys.path themselves. Processes the user's code starts get the user's PYTHONSAFEPATH back
(USER_VARIABLES: the children restore them).

Torch-free and LSP-free.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

WORKING_DIRECTORY = os.path.abspath(os.sep)
SAFE_PATH_VARIABLE = "PYTHONSAFEPATH"


def interpreter_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (default: ours) with PYTHONSAFEPATH set."""
    env = dict(os.environ if base is None else base)
    env[SAFE_PATH_VARIABLE] = "1"
    return env
