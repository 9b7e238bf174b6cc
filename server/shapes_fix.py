"""The quick fix "Declare dynamic shapes": the factory the worker proposed (ShapesProposal,
exporter/pipeline/shapes_proposal.py) written beside the target's example inputs, and the
`dynamic-shapes` key under the target's header in the config.

* The factory goes after the example-inputs function, in its file (which must be in the
  workspace), named `dynamic_shapes` or, when the file already has that name,
  `dynamic_shapes_<target>`.
* The key names it the way the target names its inputs (`FILE.py:NAME` or `package.module:NAME`).
* A target that declares dynamic shapes already gets no fix: its factory is the user's, and the
  export checks it (a dimension that came out static is a warning on the line that fixed it).

Torch-free and LSP-free: plain insertions (server/edits.py).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from onnxlens.exporter.types import ShapesProposal, TargetSpec
from onnxlens.server.edits import Insertion, editable_module

KEY = "dynamic-shapes"


@dataclass(frozen=True)
class ShapesFix:
    title: str
    insertions: list[Insertion]


def shapes_fix(spec: TargetSpec, config_file: Path, target_line: int | None,
               proposal: ShapesProposal) -> ShapesFix | None:
    """The edits declaring `proposal`'s dynamic dimensions for `spec`, or None when there is no
    clean place for them. `target_line`: the target's `[[...target]]` header line."""
    module = editable_module(spec.root, spec.inputs) if not spec.dynamic_shapes and target_line is not None else None
    if module is None:
        return None
    file, text, tree, parsed = module.file, module.text, module.tree, module.reference
    inputs = next((node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and node.name == parsed.attribute), None)
    if inputs is None or inputs.end_lineno is None:
        return None  # the inputs come from something else than a top-level function
    name = _free_name(tree, proposal.function, spec.name)
    source = proposal.source.replace(f"def {proposal.function}(", f"def {name}(", 1)
    after = inputs.end_lineno + 1
    lines = text.splitlines(keepends=True)
    ending = "" if after <= len(lines) or text.endswith("\n") else "\n"  # the function ends the file, unterminated
    where = parsed.where
    key = f'{KEY} = "{where}:{name}"  # the inputs\' dimensions that may vary\n'
    title = f"Declare dynamic shapes for {spec.name} ({', '.join(proposal.dims)})"
    return ShapesFix(title=title,
                     insertions=[Insertion(file, after, 1, f"{ending}\n\n{source}"),
                                 Insertion(str(config_file), target_line + 1, 1, key)])


def _free_name(tree: ast.Module, wanted: str, target: str) -> str:
    """`wanted`, or `wanted_<target>` when the module binds `wanted` at its top level already."""
    bound = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    bound |= {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)}
    if wanted not in bound:
        return wanted
    return f"{wanted}_{''.join(c if c.isalnum() else '_' for c in target)}"
