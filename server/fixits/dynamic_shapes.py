"""The quick fix "Declare dynamic shapes": the factory the worker proposed (ShapesProposal,
exporter/proposals/dynamic_shapes.py) written beside the target's example inputs, and the
`dynamic-shapes` key under the target's header in the config.

* The factory goes after the example-inputs function, in its file (which must be in the
  workspace), named `dynamic_shapes` or, when the file already has that name,
  `dynamic_shapes_<target>`.
* The key names it the way the target names its inputs (`FILE.py:NAME` or `package.module:NAME`).
* A target that declares dynamic shapes already: the inputs the proposal would declare and the
  factory's returned dict literal does not name are added to it (nothing else of the user's
  factory changes; no fix when it returns anything but a dict literal with string keys).

Torch-free and LSP-free: plain insertions (edits.py) in a `Fix` (fix.py).
"""

from __future__ import annotations

import ast

from onnxlens.exporter.types import ShapesProposal, TargetSpec
from onnxlens.server.fixits.edits import Insertion, dict_entry, editable_module
from onnxlens.server.fixits.fix import ConfiguredTarget, Fix

KEY = "dynamic-shapes"


def plan(target: ConfiguredTarget, proposal: ShapesProposal) -> Fix | None:
    """The edits declaring `proposal`'s dynamic dimensions for the target, or None when there is
    no clean place for them."""
    spec, config_file, target_line = target.spec, target.config_file, target.header_line
    if spec.dynamic_shapes:
        return _extend(spec, proposal)
    module = editable_module(spec.root, spec.inputs) if target_line is not None else None
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
    return Fix(title=title,
               insertions=[Insertion(file, after, 1, f"{ending}\n\n{source}"),
                           Insertion(str(config_file), target_line + 1, 1, key)])


def _free_name(tree: ast.Module, wanted: str, target: str) -> str:
    """`wanted`, or `wanted_<target>` when the module binds `wanted` at its top level already."""
    bound = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    bound |= {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)}
    if wanted not in bound:
        return wanted
    return f"{wanted}_{''.join(c if c.isalnum() else '_' for c in target)}"


def _extend(spec: TargetSpec, proposal: ShapesProposal) -> Fix | None:
    """The proposal's inputs the target's factory does not declare, added to the dict literal the
    factory returns; None when it declares them all, or returns something else."""
    module = editable_module(spec.root, spec.dynamic_shapes)
    if module is None:
        return None
    factory = next((node for node in module.tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and node.name == module.reference.attribute), None)
    returned = [node.value for node in ast.walk(factory) if isinstance(node, ast.Return)] if factory else []
    if len(returned) != 1 or not isinstance(returned[0], ast.Dict):
        return None
    literal = returned[0]
    if not all(isinstance(key, ast.Constant) and isinstance(key.value, str) for key in literal.keys):
        return None
    declared = {key.value for key in literal.keys}
    missing = {name: entry for name, entry in proposal.entries.items() if entry != "None" and name not in declared}
    if not missing:
        return None
    lines = module.text.splitlines(keepends=True)
    insertion = dict_entry(module.file, literal, lines, ",\n".join(f'"{name}": {entry}' for name, entry in missing.items()))
    if insertion is None:
        return None
    # One insertion for all entries: each line gets the indentation of the first.
    indent = insertion.text[:len(insertion.text) - len(insertion.text.lstrip())]
    text = "".join(f'{indent}"{name}": {entry},\n' for name, entry in missing.items())
    title = f"Declare dynamic shapes for {spec.name}: add {', '.join(missing)}"
    return Fix(title=title, insertions=[Insertion(insertion.file, insertion.line, insertion.column, text)])
