"""Source locations: which frames are the user's, and where on a line the culprit is.

The one place that decides where a finding lands. Every finding kind goes through it:
unsupported ops, capture failures, errors that name a node, verification mismatches, crashes
and timeouts, import and setup errors, and the hover/lens lines.

    files.py    the rule: a file is the user's (the workspace), a library's (transformers ...:
                shown in the chain) or torch's own (never shown); `Workspace`, `classify`
    directories.py  the workspace's directories that hold none of the user's code (environments,
                VCS data, installed packages, caches): findings, the watcher and init's search
    frames.py   `Frame`, and one parser per source of frames (FX stack traces, Python
                tracebacks, faulthandler dumps, draft_export's user stacks)
    columns.py  byte offsets -> character columns; the call of an op or a module on a line
    place.py    `locate`: the primary location and the related chain (`Place`)
    nodes.py    an FX node's place named by module path (verification mismatches), its full trace
    names.py    how messages name places: short paths, the calling library function, module lists

Torch-free (plain text and ast): unit tests run it on recorded stack traces.
"""

from onnxlens.exporter.locations.columns import (call_names_for_op, character_column, find_call, node_span,
                                                 source_line, statement_at)
from onnxlens.exporter.locations.files import Origin, Workspace, classify, is_user_code, model_code
from onnxlens.exporter.locations.frames import Frame, from_faulthandler, from_stack_trace, from_traceback
from onnxlens.exporter.locations.nodes import (FULL_TRACE, locate_node, module_stack, node_trace, normalize_module_path,
                                               running_module)
from onnxlens.exporter.locations.place import Place, locate, primary_frame, primary_index

__all__ = [
    "FULL_TRACE", "Frame", "Origin", "Place", "Workspace", "call_names_for_op", "character_column", "classify",
    "find_call", "from_faulthandler", "from_stack_trace", "from_traceback",
    "is_user_code", "locate", "locate_node", "model_code", "module_stack", "node_trace", "node_span",
    "normalize_module_path", "primary_frame", "primary_index", "running_module", "source_line", "statement_at",
]
