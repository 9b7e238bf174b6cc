"""New export targets for candidates (server/fixits/candidates.py): "Add <Name> as an ONNX
export target" (one) and `onnxlens init` / the offer when a workspace has no config (many).

The edits, as plain insertions (server/fixits/edits.py):

* in the config: a `[[tool.onnxlens.target]]` per candidate appended at the end of
  pyproject.toml (the file created when there is none, `[tool.onnxlens]` added when it has no
  such table), or a `[[target]]` in onnxlens.toml when the workspace has that file. The user's
  bytes stay as they are: text is only appended, and the result must parse as TOML with the new
  targets in it, or there is no fix (an inline `tool.onnxlens = {...}` cannot be extended so);
* in the model's file, after the class or function: `example_inputs_<name>()`, and, for a
  class whose constructor needs arguments (or a factory that does), a `build_<name>()`: the
  model built as the workspace builds it (server/fixits/model_usage.py's recipe), or from the
  constructor's signature with `...` where nothing tells a value and a NotImplementedError on
  the line before naming each (the export reports it there). `import torch` is added when the
  file lacks it.

Example inputs: the workspace's own call of the model (server/fixits/model_usage.py) when it has one;
else per parameter of forward without a default (when every parameter has one, the first:
`input_ids=None` models need it): token ids (a parameter forward feeds to an nn.Embedding, or
named `input_ids`, `*_ids`, `tokens`) are `torch.randint(0, V, (2, 16))` with V the embedding's
size as the model is built (else 1000, marked TODO), `attention_mask` is ones, an image of a
model whose constructor says its size (`img_size`, `image_size`; channels from `in_chans`,
`in_channels`, `channels`) is `torch.randn(B, C, H, W)` (B 1 from LARGE_IMAGE pixels, else 2),
an `Optional[...]` parameter is None, the first other tensor follows the first layer (Linear:
(2, in), Conv2d: (2, C, 32, 32), Conv1d: (2, C, 64)), and anything else is `torch.randn(2, 8)`
marked TODO. docs/cli.md is the user's statement of these rules.

Torch-free and LSP-free.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onnxlens.exporter import references
from onnxlens.server.fixits.edits import Insertion, apply_insertions
from onnxlens.server.fixits.fix import Fix
from onnxlens.server.fixits.model_usage import ExampleCall, Recipe, Usage, file_index, module_name, value_of
from onnxlens.server.fixits.candidates import Candidate, Parameter

PYPROJECT, ONNXLENS_TOML = "pyproject.toml", "onnxlens.toml"
DEFAULT_VOCABULARY = 1000
_TOKEN_NAME = re.compile(r"^(input_ids|tokens?|token_ids|ids|.*_ids)$")
_SCALARS = {"int": "1", "float": "1.0", "bool": "False", "str": '""'}
# Constructor parameters that give an image's size and channels (timm, segment-anything,
# vit-pytorch and torchvision spell them so).
IMAGE_SIZE_PARAMETERS = ("img_size", "image_size")
CHANNEL_PARAMETERS = ("in_chans", "in_channels", "channels", "num_channels")
VIDEO_PARAMETERS = ("frames", "num_frames")  # a constructor that takes them makes a video model
LARGE_IMAGE = 512 * 512  # pixels from which an example image has batch 1, not 2


class NewTargetsError(Exception):
    """Why no target can be added (shown by `onnxlens init`; the editor just offers nothing)."""


@dataclass(frozen=True)
class Choice:
    """A candidate of a file, to become a target."""

    file: Path  # absolute
    candidate: Candidate
    usage: Usage | None = None  # how the workspace builds and calls it; None: read from its file alone


@dataclass(frozen=True)
class NewTarget:
    name: str
    model: str  # the reference written to the config
    inputs: str
    candidate: Candidate
    file: Path
    line: int  # 1-based line of `def example_inputs_<name>` once the edit is applied


@dataclass(frozen=True)
class NewTargets:
    """New targets planned for a workspace: the config file they go to, each target, and the
    edits adding them all (`fix`: as the one quick fix that applies them)."""

    config_file: Path
    targets: list[NewTarget]
    insertions: list[Insertion]

    @property
    def title(self) -> str:
        names = ", ".join(t.candidate.name for t in self.targets)
        if len(self.targets) == 1:
            return f"Add {names} as an ONNX export target"
        return f"Add {len(self.targets)} ONNX export targets ({names})"

    @property
    def fix(self) -> Fix:
        return Fix(self.title, self.insertions)


def config_file_for(root: Path) -> Path:
    """Where new targets of a workspace root go: its onnxlens.toml if it has one, else its
    pyproject.toml (existing or not)."""
    toml = root / ONNXLENS_TOML
    return toml if toml.is_file() else root / PYPROJECT


def configured_models(config_file: Path) -> set[tuple[str, str]]:
    """(resolved file, callable name) of every target's `model` in a config file (valid or not:
    a target with a mistake is still the user's); empty when the file is absent or unreadable."""
    table = _onnxlens_table(config_file)
    entries = table.get("target") if isinstance(table, dict) else None
    found = set()
    for entry in entries if isinstance(entries, list) else []:
        model = entry.get("model") if isinstance(entry, dict) else None
        parsed = references.parse(model) if isinstance(model, str) else None
        path = parsed.source_file(config_file.parent) if parsed else None
        if path is not None:
            found.add((str(path), parsed.name))
    return found


def is_configured(file: Path, candidate: Candidate, siblings: list[Candidate], configured: set[tuple[str, str]]) -> bool:
    """The candidate is some target's model already, itself or through a factory of its file
    that returns it (`build_model` returning `Net`)."""
    where = str(file.resolve())
    if (where, candidate.name) in configured:
        return True
    return candidate.kind == "class" and any(
        s.kind == "factory" and s.model_class == candidate.name and (where, s.name) in configured for s in siblings)


def plan_targets(root: Path, choices: list[Choice], sources: dict[Path, str] | None = None) -> NewTargets:
    """The edits adding a target per choice to the workspace at `root`; NewTargetsError says why
    there are none (a model file outside the root, a config file that cannot be extended).
    `sources`: texts of model files as the editor has them (unsaved edits), by resolved path."""
    root = root.resolve()
    config_file = config_file_for(root)
    is_pyproject = config_file.name == PYPROJECT
    config_text = _read(config_file) if config_file.exists() else None
    taken = _target_names(config_text, is_pyproject)
    files: dict[Path, tuple[str, ast.Module, set[str]]] = {}  # text, tree, names bound so far
    insertions: list[Insertion] = []
    targets: list[NewTarget] = []
    imports_added: set[Path] = set()
    for choice in choices:
        file = choice.file.resolve()
        if not file.is_relative_to(root):
            raise NewTargetsError(f"{file} is outside the workspace {root}")
        if not choice.candidate.top_level:
            raise NewTargetsError(f"{choice.candidate.name} is not defined at the top level of {file.name}")
        if file not in files:
            text = (sources or {}).get(file)
            text = _read(file) if text is None else text
            try:
                tree = ast.parse(text)
            except SyntaxError as error:
                raise NewTargetsError(f"{file.name} does not parse: {error.msg} (line {error.lineno})") from None
            files[file] = (text, tree, _bound_names(tree))
        text, tree, bound = files[file]
        name = _unique(_target_name(choice.candidate.name), taken)
        taken.add(name)
        where = file.relative_to(root).as_posix()
        identifier = re.sub(r"\W", "_", name)
        inputs_function = _unique(f"example_inputs_{identifier}", bound, separator="_")
        bound.add(inputs_function)
        model = choice.candidate.name
        usage = choice.usage if choice.usage is not None else \
            file_index(where, text).usage(choice.candidate, tree, module_name(root, file))
        source = ""
        if choice.candidate.needs_arguments:
            model = _unique(f"build_{identifier}", bound, separator="_")
            bound.add(model)
            recipe = usage.recipe if choice.candidate.kind == "class" else None
            source += "\n\n" + (recipe_builder(model, name, choice.candidate, recipe) if recipe is not None
                                  else _builder(model, name, choice.candidate))
        source += "\n\n" + example_inputs_source(inputs_function, name, choice.candidate, usage)
        if not _binds_torch(tree) and file not in imports_added:
            imports_added.add(file)
            line = _import_line(tree)
            insertions.append(Insertion(str(file), line, 1, "import torch\n"))
        lines = text.splitlines(keepends=True)
        after = choice.candidate.end_line + 1
        ending = "" if after <= len(lines) or text.endswith("\n") or not text else "\n"
        insertions.append(Insertion(str(file), after, 1, ending + source))
        targets.append(NewTarget(name=name, model=f"{where}:{model}", inputs=f"{where}:{inputs_function}",
                                 candidate=choice.candidate, file=file, line=0))
    insertions.append(_config_insertion(config_file, config_text, is_pyproject, targets))
    _check_config(config_file, config_text, insertions[-1], is_pyproject, targets)
    texts = {str(f): t for f, (t, _, _) in files.items()}
    return NewTargets(config_file=config_file, targets=_with_lines(targets, insertions, texts), insertions=insertions)


# --- the model's file ----------------------------------------------------------------------

def example_inputs_source(function: str, target: str, candidate: Candidate, usage: Usage | None = None) -> str:
    """`def <function>():` returning example inputs for the candidate's forward: the workspace's
    own call of the model when it has one, else a tensor per parameter (module docstring)."""
    described = f"{candidate.name}.forward" if candidate.kind == "class" else \
        f"{candidate.model_class}.forward" if candidate.model_class else "the model's forward"
    if usage is not None and usage.example is not None:
        return _example_call_source(function, target, described, usage.example)
    parameters = candidate.required_inputs
    if not parameters and candidate.forward:
        parameters = [candidate.forward[0]]  # all optional (input_ids=None): the first is the input
    arguments = usage.arguments if usage is not None else {}
    body: list[str] = []
    positional: list[str] = []
    keywords: list[str] = []
    shaped = False  # the first layer's size went to a parameter already
    if candidate.forward is None:
        body.append("    x = torch.randn(2, 8)  # TODO: the shape forward expects (its class is not in this file)")
        positional.append("x")
    for parameter in parameters:
        value, shaped = _value(parameter, candidate, arguments, shaped)
        body.append(f"    {parameter.name} = {value}")
        (keywords if parameter.keyword_only else positional).append(parameter.name)
    args = f"({positional[0]},)" if len(positional) == 1 else f"({', '.join(positional)})"
    kwargs = "{" + ", ".join(f'"{k}": {k}' for k in keywords) + "}"
    result = f"{args}, {kwargs}" if keywords else args
    return (f"def {function}():\n"
            f'    """Example inputs of the ONNX export target `{target}` ({described}): shapes to adjust."""\n'
            + "\n".join(body) + ("\n" if body else "")
            + f"    return {result}\n")


def _example_call_source(function: str, target: str, described: str, example: ExampleCall) -> str:
    body = "".join(f"    {line}\n" for statement in example.statements for line in statement.splitlines())
    args = f"({example.arguments[0]},)" if len(example.arguments) == 1 else f"({', '.join(example.arguments)})"
    kwargs = "{" + ", ".join(f'"{k}": {v}' for k, v in example.keywords) + "}"
    result = f"{args}, {kwargs}" if example.keywords else args
    return (f"def {function}():\n"
            f'    """Example inputs of the ONNX export target `{target}` ({described}), as {example.origin} calls it."""\n'
            + body + f"    return {result}\n")


def _value(parameter: Parameter, candidate: Candidate, arguments: dict[str, Any], shaped: bool) -> tuple[str, bool]:
    name, annotation = parameter.name, (parameter.annotation or "").replace("torch.", "")
    if annotation in _SCALARS:
        return f"{_SCALARS[annotation]}  # TODO: the value forward expects", shaped
    if annotation.startswith("Optional[") or annotation.endswith("| None") or annotation.startswith("None |"):
        return "None  # TODO: optional; give a value to export that path", shaped
    embedding = dict(candidate.token_inputs).get(name)
    if embedding is not None or _TOKEN_NAME.match(name):
        size = _positive_int(value_of(embedding, arguments, {})) if embedding is not None else None
        if size is None and embedding is None:
            size = candidate.vocabulary
        if size is not None:
            return f"torch.randint(0, {size}, (2, 16))  # token ids below the vocabulary size, {size}", shaped
        below = f"{embedding}, the size of the nn.Embedding it goes to" if embedding else "the vocabulary size"
        return f"torch.randint(0, {DEFAULT_VOCABULARY}, (2, 16))  # TODO: token ids below {below}", shaped
    if name == "attention_mask":
        return "torch.ones(2, 16, dtype=torch.long)", shaped
    image = None if shaped else _image_shape(candidate, arguments)
    if image is not None:
        return image, True
    layer = candidate.first_layer
    if layer is not None and not shaped:
        shape = {"Linear": f"(2, {layer.size})", "Conv2d": f"(2, {layer.size}, 32, 32)",
                 "Conv1d": f"(2, {layer.size}, 64)"}[layer.kind]
        return f"torch.randn{shape}  # batch 2; the first nn.{layer.kind} takes {layer.size}", True
    return "torch.randn(2, 8)  # TODO: the shape forward expects", shaped


def _image_shape(candidate: Candidate, arguments: dict[str, Any]) -> str | None:
    """`torch.randn(2, C, H, W)` when the constructor says the image size (img_size=1024)."""
    size_parameter = next((p for p in IMAGE_SIZE_PARAMETERS if p in arguments), None)
    if size_parameter is None or candidate.layers & {"Conv1d", "Conv3d"} \
            or any(p.name in VIDEO_PARAMETERS for p in candidate.constructor):
        return None  # no size, or not a 2-D image (a video's frames or Conv3d, a signal's Conv1d)
    size = arguments[size_parameter]
    height, width = (size, size) if isinstance(size, int) else size if isinstance(size, tuple) and len(size) == 2 \
        else (None, None)
    if _positive_int(height) is None or _positive_int(width) is None:
        return None
    channel_parameter = next((p for p in CHANNEL_PARAMETERS if _positive_int(arguments.get(p)) is not None), None)
    channels = arguments[channel_parameter] if channel_parameter else \
        candidate.first_layer.size if candidate.first_layer and candidate.first_layer.kind == "Conv2d" else 3
    told = f"{size_parameter}={size}" + (f", {channel_parameter}={channels}" if channel_parameter else "")
    batch = 1 if height * width >= LARGE_IMAGE else 2  # the export runs the model several times
    return f"torch.randn({batch}, {channels}, {height}, {width})  # batch {batch}; {told}"


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def recipe_builder(function: str, target: str, candidate: Candidate, recipe: Recipe) -> str:
    """A factory that builds the model as the workspace does (`recipe.origin`), or from its
    constructor's signature; what it cannot know is `...`, and a NotImplementedError names it."""
    where = f", built as {recipe.origin} builds it" if recipe.origin else ""
    lines = [f"def {function}():", f'    """The model of the ONNX export target `{target}`{where}; in eval mode."""']
    if recipe.missing:
        what = ", ".join(recipe.missing)
        lines.append(f"    # TODO: give the values marked ... below ({what}), then delete the raise.")
        lines.append(f'    raise NotImplementedError("{function}: give {candidate.name}\'s constructor arguments: {_escape(what)}")')
    lines += [f"    {line}" for statement in recipe.statements for line in statement.splitlines()]
    lines.append(f"    return {recipe.call}.eval()")
    return "\n".join(lines) + "\n"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _builder(function: str, target: str, candidate: Candidate) -> str:
    """A factory that says, when the export calls it, which arguments to give."""
    what = f"{candidate.name}'s constructor arguments" if candidate.kind == "class" else f"{candidate.name}'s arguments"
    arguments = ", ".join(f"{a}=..." for a in candidate.required_arguments)
    return (f"def {function}():\n"
            f'    """The model of the ONNX export target `{target}`."""\n'
            f"    # TODO: give {what} below, then delete the raise.\n"
            f'    raise NotImplementedError("give {what} in {function}")\n'
            f"    return {candidate.name}({arguments})\n")


def _binds_torch(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, ast.Import) and any(
                (alias.asname or alias.name.split(".")[0]) == "torch" for alias in node.names):
            return True
    return False


def _import_line(tree: ast.Module) -> int:
    """Where `import torch` goes: before the first import that is not `from __future__`, else
    after the docstring and the `__future__` imports."""
    after = 1
    for index, node in enumerate(tree.body):
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            after = (node.end_lineno or node.lineno) + 1
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            return node.lineno
        elif index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            after = (node.end_lineno or node.lineno) + 1
        else:
            break
    return after


def _bound_names(tree: ast.Module) -> set[str]:
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    names |= {t.id for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
              for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
    names |= {(a.asname or a.name).split(".")[0] for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
              for a in n.names}
    return names


def _with_lines(targets: list[NewTarget], insertions: list[Insertion], originals: dict[str, str]) -> list[NewTarget]:
    """Each target's `def example_inputs_…` line in its file once every insertion is applied."""
    texts = {file: apply_insertions(original, [i for i in insertions if i.file == file])
             for file, original in originals.items()}
    placed = []
    for target in targets:
        function = target.inputs.rpartition(":")[2]
        lines = texts[str(target.file)].splitlines()
        line = next((n for n, text in enumerate(lines, 1) if text.startswith(f"def {function}(")), 0)
        placed.append(dataclasses.replace(target, line=line))
    return placed


# --- the config ------------------------------------------------------------------------------

def _config_insertion(config_file: Path, text: str | None, is_pyproject: bool, targets: list[NewTarget]) -> Insertion:
    header = "[[tool.onnxlens.target]]" if is_pyproject else "[[target]]"
    tables = "".join(f'\n{header}\nname = "{t.name}"\nmodel = "{t.model}"\ninputs = "{t.inputs}"\n' for t in targets)
    if text is None:  # a new pyproject.toml
        return Insertion(str(config_file), 1, 1, f"[tool.onnxlens]\n{tables}", create=True)
    has_table = _onnxlens_table_in(text, is_pyproject) is not None
    prefix = "" if has_table or not is_pyproject else "\n[tool.onnxlens]\n"
    lines = text.splitlines(keepends=True)
    if not lines:
        return Insertion(str(config_file), 1, 1, (prefix + tables).lstrip("\n"))
    if text.endswith(("\n", "\r")):
        return Insertion(str(config_file), len(lines) + 1, 1, prefix + tables)
    last = lines[-1]
    return Insertion(str(config_file), len(lines), len(last) + 1, "\n" + prefix + tables)


def _check_config(config_file: Path, text: str | None, insertion: Insertion, is_pyproject: bool,
                  targets: list[NewTarget]) -> None:
    """The config with the new tables must still parse and hold them (appending cannot extend an
    inline `tool.onnxlens = {...}` or `target = [...]`)."""
    after = apply_insertions(text or "", [insertion])
    try:
        table = _onnxlens_table_in(after, is_pyproject)
    except tomllib.TOMLDecodeError as error:
        raise NewTargetsError(f"{config_file.name} would not be valid TOML with the new target ({error}); "
                             "add it by hand") from None
    entries = table.get("target") if isinstance(table, dict) else None
    names = {e.get("name") for e in entries if isinstance(e, dict)} if isinstance(entries, list) else set()
    if not {t.name for t in targets} <= names:
        raise NewTargetsError(f"the targets cannot be appended to {config_file.name} "
                             "(its onnxlens table is written inline); add them by hand")


def _onnxlens_table(config_file: Path) -> Any:
    try:
        return _onnxlens_table_in(_read(config_file), config_file.name == PYPROJECT)
    except (NewTargetsError, tomllib.TOMLDecodeError):
        return None


def _onnxlens_table_in(text: str, is_pyproject: bool) -> Any:
    data = tomllib.loads(text)
    if not is_pyproject:
        return data
    tool = data.get("tool")
    return tool.get("onnxlens") if isinstance(tool, dict) else None


def _target_names(text: str | None, is_pyproject: bool) -> set[str]:
    """The names the config's targets take (given, or the model's callable lowercased)."""
    if text is None:
        return set()
    try:
        table = _onnxlens_table_in(text, is_pyproject)
    except tomllib.TOMLDecodeError as error:
        raise NewTargetsError(f"the config is not valid TOML ({error}): fix it first") from None
    entries = table.get("target") if isinstance(table, dict) else None
    names = set()
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict):
            name = entry.get("name") or str(entry.get("model", "")).rpartition(":")[2].lower()
            names.add(str(name))
    return names


def _target_name(callable_name: str) -> str:
    """The callable's name lowercased, as config.py names a target without `name`."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", callable_name.lower()) or "model"


def _unique(name: str, taken: set[str], separator: str = "-") -> str:
    if name not in taken:
        return name
    number = 2
    while f"{name}{separator}{number}" in taken:
        number += 1
    return f"{name}{separator}{number}"


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise NewTargetsError(f"cannot read {path}: {error}") from None
