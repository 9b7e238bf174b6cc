"""The quick fix "Write an ONNX translation for aten.X": where the stub goes and what changes.

An `unsupported-op` finding carries a stub per op (exporter/proposals/translation_stubs.py: the
function, its parameters from the op's schema). This module decides the edits that put it in
the target's custom-translations module, as a `Fix` (fix.py) the LSP layer turns into a code
action (server/lsp/features/code_actions.py, through registry.py); it knows nothing about LSP.

* The target has no `custom-translations`: a new module beside the model's file,
  `onnx_translations.py` (`onnx_translations_<target>.py` if that name is taken), with the
  function and a `translations` table, and the key added under the target's header in the
  config.
* The target's `custom-translations` names a dict assigned at the top level of a file of the
  workspace: the function goes before that assignment and its entry into the dict (or, when
  the dict literal's layout does not allow a clean insertion, a `NAME[op] = function` line
  after it); missing imports (`torch`, `op`, `Sequence`) are added after the last import.
* Anything else (a function building the table, a table in an installed package, an op the
  table already has): no fix; the finding's message still says what to do.
"""

from __future__ import annotations

import ast
from pathlib import Path

from onnxlens.exporter import references
from onnxlens.exporter.types import TargetSpec, TranslationStub
from onnxlens.server.fixits.edits import Insertion, dict_entry, editable_module
from onnxlens.server.fixits.fix import ConfiguredTarget, Fix, Show

TABLE = "translations"  # the table's name in a module the fix creates
OPEN_TITLE = "Open the translation"


def plan(target: ConfiguredTarget, stub: TranslationStub) -> Fix | None:
    """The edits that write `stub` into the target's custom-translations module, or None when
    there is no clean place for it. The fix shows the stub's `raise` line in the module once
    applied: where the user starts writing."""
    spec = target.spec
    title = f"Write an ONNX translation for {stub.op.rsplit('.', 1)[0] if stub.op.endswith('.default') else stub.op}"
    if spec.custom_translations is None:
        return _new_module(spec, target.config_file, target.header_line, stub, title)
    return _extend_module(spec, stub, title)


def _new_module(spec: TargetSpec, config_file: Path, target_line: int | None, stub: TranslationStub,
                title: str) -> Fix | None:
    if target_line is None:
        return None
    root = Path(spec.root)
    model_file = references.source_file(root, spec.model)
    folder = Path(model_file).parent if model_file and Path(model_file).is_relative_to(root.resolve()) else root.resolve()
    module = folder / "onnx_translations.py"
    if module.exists():
        module = folder / f"onnx_translations_{_python_name(spec.name)}.py"
        if module.exists():
            return None
    text = new_module_text(stub)
    reference = f"{module.relative_to(root.resolve()).as_posix()}:{TABLE}"
    key = f'custom-translations = "{reference}"  # ONNX translations of ops the exporter lacks\n'
    return Fix(title=title, show=Show(OPEN_TITLE, str(module), _raise_line(text, stub)),
               insertions=[Insertion(str(module), 1, 1, text, create=True),
                           Insertion(str(config_file), target_line + 1, 1, key)])


def new_module_text(stub: TranslationStub) -> str:
    imports = ["import torch", f"from onnxscript import opset{stub.opset} as op"]
    if stub.needs_sequence:
        imports.insert(0, "from collections.abc import Sequence")
    hint = (f"\n# torch's own decomposition of {stub.op}, worth reading first: {stub.decomposition}\n"
            if stub.decomposition else "")
    return (
        '"""ONNX translations of the ops the exporter has none for (this target\'s custom-translations).\n\n'
        "Each function builds an op's ONNX equivalent from `op.*` calls on its inputs; the table at\n"
        "the end maps the torch op to it. Started by onnxlens's quick fix; yours to edit.\n"
        '"""\n\n'
        + "\n".join(imports) + "\n\n\n"
        + hint + stub.source + "\n\n"
        + f"{TABLE} = {{\n    {stub.key}: {stub.function},\n}}\n"
    )


def _extend_module(spec: TargetSpec, stub: TranslationStub, title: str) -> Fix | None:
    module = editable_module(spec.root, spec.custom_translations)
    if module is None:
        return None
    file, text, tree, parsed = module.file, module.text, module.tree, module.reference
    table = _table_assignment(tree, parsed.attribute)
    if table is None or stub.key in text:
        return None
    lines = text.splitlines(keepends=True)
    statement, literal = table
    imports = _missing_imports(tree, stub, file)
    hint = f"# torch's own decomposition of {stub.op}, worth reading first: {stub.decomposition}\n" if stub.decomposition else ""
    function = Insertion(file, statement.lineno, 1, hint + stub.source + "\n\n")
    after = (statement.end_lineno or statement.lineno) + 1
    newline = "" if after <= len(lines) or text.endswith("\n") else "\n"  # the table ends the file, unterminated
    entry = dict_entry(file, literal, lines, f"{stub.key}: {stub.function}") or Insertion(
        file, after, 1, f"{newline}{parsed.attribute}[{stub.key}] = {stub.function}\n")
    # The stub's raise line once the edit is applied: the function starts where the table was,
    # after any imports inserted above it (same-position inserts apply in list order).
    above = sum(i.text.count("\n") for i in imports if i.line <= statement.lineno)
    focus = statement.lineno + above + hint.count("\n") + _raise_line(stub.source, stub) - 1
    return Fix(title=title, show=Show(OPEN_TITLE, file, focus), insertions=[*imports, function, entry])


def _table_assignment(tree: ast.Module, name: str) -> tuple[ast.stmt, ast.Dict | None] | None:
    """The last top-level statement assigning `name`, and its dict literal (None for `dict(...)`);
    None unless it is a dict."""
    found = None
    for statement in tree.body:
        targets = (statement.targets if isinstance(statement, ast.Assign)
                   else [statement.target] if isinstance(statement, ast.AnnAssign) else [])
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            value = statement.value
            if isinstance(value, ast.Dict):
                found = (statement, value)
            elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict":
                found = (statement, None)
            else:
                found = None
    return found


def _missing_imports(tree: ast.Module, stub: TranslationStub, file: str) -> list[Insertion]:
    bound = {alias.asname or alias.name.split(".")[0]
             for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
    wanted = [("torch", "import torch"), ("op", f"from onnxscript import opset{stub.opset} as op")]
    if stub.needs_sequence:
        wanted.insert(0, ("Sequence", "from collections.abc import Sequence"))
    missing = [line for name, line in wanted if name not in bound]
    if not missing:
        return []
    imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    if imports:
        line = (imports[-1].end_lineno or imports[-1].lineno) + 1
    elif tree.body and isinstance(tree.body[0], ast.Expr) and isinstance(getattr(tree.body[0], "value", None), ast.Constant):
        line = (tree.body[0].end_lineno or 1) + 1  # after the module docstring
    else:
        line = 1
    return [Insertion(file, line, 1, "".join(f"{m}\n" for m in missing))]


def _raise_line(text: str, stub: TranslationStub) -> int:
    """The 1-based line of the stub's `raise` in `text`."""
    marker = f'raise NotImplementedError("write the ONNX translation of {stub.op}")'
    for number, line in enumerate(text.splitlines(), start=1):
        if marker in line:
            return number
    return 1


def _python_name(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)
