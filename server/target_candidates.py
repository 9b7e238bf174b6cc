"""What in a Python file could become an ONNX export target: read with `ast`, never imported.

Candidates, in file order:

* classes that are `torch.nn` modules: a base spelled `nn.Module`, `torch.nn.Module` or a name
  imported from torch.nn (any aliases, any torch.nn module class such as `nn.Sequential`), or a
  candidate class of the same file. A class with its own `forward` whose base chain leaves the
  file (`BertModel(BertPreTrainedModel)`, `BertPreTrainedModel(PreTrainedModel)`) counts too:
  libraries put nn.Module behind their own base classes, which this file cannot see, and an
  imported base with a `forward` of ours is a module in practice (output dataclasses have none);
* top-level factory functions: `return Net(...)` (or `Net(...).eval()`) of a candidate class, or
  a return annotation `-> nn.Module` / `-> Net`.

For each: its header line, `forward`'s parameters (own or inherited within the file), whether
constructing it needs arguments, and the sizes its `__init__` spells as literals (the first
Linear/Conv1d/Conv2d's input size, the first Embedding's vocabulary), from which
server/target_fix.py writes example inputs.

Torch-free and LSP-free: text in, plain data out; a file that does not parse has no candidates.
`readable_source` says which files are worth reading at all.
"""

from __future__ import annotations

import ast
import stat
from dataclasses import dataclass, field
from pathlib import Path

TORCH_NN = "torch.nn"
# A generated or vendored blob is no model of the user's: files (and buffers, in characters)
# larger than this are not searched for candidates, by the workspace scan nor the code action.
MAX_FILE_BYTES = 2_000_000
# torch.nn names that are not modules (a class deriving from them is not a model).
_NOT_MODULES = frozenset({"Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"})
# The layers whose first argument tells the input's size, by torch.nn name.
LAYERS = {"Linear": "in_features", "Conv1d": "in_channels", "Conv2d": "in_channels", "Embedding": "num_embeddings"}


@dataclass(frozen=True)
class Parameter:
    name: str
    annotation: str | None  # the annotation's source text
    has_default: bool
    keyword_only: bool = False  # after `*` or `*args`: passed by name


@dataclass(frozen=True)
class Layer:
    """A torch.nn layer in `__init__` whose size argument is a literal int."""

    kind: str  # "Linear", "Conv1d", "Conv2d" or "Embedding"
    size: int  # in_features, in_channels or num_embeddings


@dataclass(frozen=True)
class Candidate:
    name: str
    kind: str  # "class" or "factory"
    line: int  # 1-based line of the `class`/`def` keyword (after decorators)
    end_line: int  # 1-based last line of the definition
    forward: tuple[Parameter, ...] | None  # None: unknown (a factory of something not in the file)
    needs_arguments: bool  # the class's __init__ (or the factory) has required parameters
    required_arguments: tuple[str, ...] = ()  # their names
    first_layer: Layer | None = None  # the first Linear/Conv1d/Conv2d with a literal size
    vocabulary: int | None = None  # the first Embedding's literal num_embeddings
    model_class: str | None = None  # a factory: the candidate class it returns, if any
    top_level: bool = True

    @property
    def required_inputs(self) -> list[Parameter]:
        return [p for p in self.forward or () if not p.has_default]


@dataclass
class _Imports:
    """What the file's names mean: local name -> dotted origin (`nn` -> torch.nn)."""

    names: dict[str, str] = field(default_factory=dict)

    def add(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.names[alias.asname] = alias.name
                else:  # `import torch.nn` binds `torch`
                    head = alias.name.split(".")[0]
                    self.names[head] = head
        elif node.module and not node.level:
            for alias in node.names:
                self.names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        else:  # a relative import: a library's own base classes (transformers, diffusers)
            for alias in node.names:
                self.names[alias.asname or alias.name] = f"{'.' * node.level}{node.module or ''}.{alias.name}"

    def resolve(self, expression: ast.expr) -> str | None:
        """The dotted origin of a name or attribute chain; None for anything else."""
        parts = []
        while isinstance(expression, ast.Attribute):
            parts.append(expression.attr)
            expression = expression.value
        if not isinstance(expression, ast.Name):
            return None
        head = self.names.get(expression.id)
        return ".".join([head, *reversed(parts)]) if head else None

    def imported(self, expression: ast.expr) -> bool:
        return self.resolve(expression) is not None


def is_torch_nn_module(origin: str | None) -> bool:
    """`torch.nn.Module`, `torch.nn.Sequential`, `torch.nn.modules.conv.Conv2d` ..."""
    if not origin or not origin.startswith(TORCH_NN + "."):
        return False
    name = origin.rsplit(".", 1)[-1]
    return name[:1].isupper() and name not in _NOT_MODULES


def readable_source(path: Path) -> bool:
    """A file worth searching for candidates: a regular file (a FIFO or a device named `.py`
    would block the read) of at most MAX_FILE_BYTES."""
    try:
        status = path.stat()
    except OSError:
        return False
    return stat.S_ISREG(status.st_mode) and status.st_size <= MAX_FILE_BYTES


def find_candidates(text: str) -> list[Candidate]:
    """The candidates of a file's source text, in file order; none if it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    return _Finder(tree).candidates()


class _Finder:
    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.imports = _Imports()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.imports.add(node)
        # Every class of the file by name (top-level first: a nested class does not shadow it).
        self.classes: dict[str, ast.ClassDef] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                self.classes.setdefault(node.name, node)
        self._module_cache: dict[str, bool] = {}

    # --- classes ---------------------------------------------------------------------------

    def is_module(self, node: ast.ClassDef, seen: frozenset[str] = frozenset()) -> bool:
        if node.name in self._module_cache:
            return self._module_cache[node.name]
        result = False
        for base in node.bases:
            if is_torch_nn_module(self.imports.resolve(base)):
                result = True
            elif isinstance(base, ast.Name) and base.id in self.classes and base.id not in seen:
                result = self.is_module(self.classes[base.id], seen | {node.name})
            if result:
                break
        if not result and _method(node, "forward") is not None:
            result = self._reaches_imported_base(node, seen | {node.name})
        self._module_cache[node.name] = result
        return result

    def _reaches_imported_base(self, node: ast.ClassDef, seen: frozenset[str]) -> bool:
        """A base chain that leaves the file through an import (a library's own base class)."""
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id in self.classes and base.id not in seen:
                if self._reaches_imported_base(self.classes[base.id], seen | {base.id}):
                    return True
            elif self.imports.imported(base):
                origin = self.imports.resolve(base) or ""
                # Not a module: typing/abc/dataclass-ish bases, and enum/exception hierarchies.
                if origin.split(".")[0] not in {"typing", "abc", "enum", "dataclasses", "collections",
                                                "typing_extensions", "pydantic"}:
                    return True
        return False

    def _inherited(self, node: ast.ClassDef, name: str, seen: frozenset[str] = frozenset()
                   ) -> tuple[ast.FunctionDef | None, bool]:
        """The method `name` of the class or of its bases in this file, and whether the search
        left the file (a base from elsewhere may define it: then it is unknown)."""
        own = _method(node, name)
        if own is not None:
            return own, False
        left = False
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id in self.classes and base.id not in seen:
                found, base_left = self._inherited(self.classes[base.id], name, seen | {node.name})
                if found is not None:
                    return found, False
                left = left or base_left
            elif not is_torch_nn_module(self.imports.resolve(base)):
                left = True  # nn.Module's own __init__ takes nothing; anything else may
        return None, left

    def _class_candidate(self, node: ast.ClassDef, top_level: bool) -> Candidate:
        forward, _ = self._inherited(node, "forward")
        init, unknown_init = self._inherited(node, "__init__")
        required = tuple(p.name for p in _parameters(init) if not p.has_default) if init else ()
        first_layer, vocabulary = self._sizes(init)
        return Candidate(
            name=node.name, kind="class", line=node.lineno, end_line=node.end_lineno or node.lineno,
            forward=tuple(_parameters(forward)) if forward else None,
            needs_arguments=bool(required) or (init is None and unknown_init),
            required_arguments=required, first_layer=first_layer, vocabulary=vocabulary, top_level=top_level)

    def _sizes(self, init: ast.FunctionDef | None) -> tuple[Layer | None, int | None]:
        if init is None:
            return None, None
        calls = sorted((n for n in ast.walk(init) if isinstance(n, ast.Call)),
                       key=lambda n: (n.lineno, n.col_offset))
        first_layer = vocabulary = None
        for call in calls:
            origin = self.imports.resolve(call.func) or ""
            kind = origin.rsplit(".", 1)[-1]
            if not origin.startswith(TORCH_NN + ".") or kind not in LAYERS:
                continue
            size = _literal_int(call.args[0] if call.args else next(
                (k.value for k in call.keywords if k.arg == LAYERS[kind]), None))
            if size is None:
                continue
            if kind == "Embedding":
                vocabulary = vocabulary if vocabulary is not None else size
            elif first_layer is None:
                first_layer = Layer(kind, size)
        return first_layer, vocabulary

    # --- factories -------------------------------------------------------------------------

    def _returned_class(self, function: ast.FunctionDef, modules: dict[str, Candidate]) -> str | None:
        for node in _own_nodes(function):
            if isinstance(node, ast.Return) and node.value is not None:
                call = node.value
                # Net(...).eval() / .to(...) / .train(False): the class is the innermost call's.
                while isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                        and isinstance(call.func.value, ast.Call):
                    call = call.func.value
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in modules:
                    return call.func.id
        return None

    def _factory_candidate(self, node: ast.FunctionDef, modules: dict[str, Candidate]) -> Candidate | None:
        returned = self._returned_class(node, modules)
        annotated = None
        if node.returns is not None:
            if isinstance(node.returns, ast.Name) and node.returns.id in modules:
                annotated = node.returns.id
            elif is_torch_nn_module(self.imports.resolve(node.returns)):
                annotated = ""
            elif isinstance(node.returns, ast.Constant) and node.returns.value in modules:  # -> "Net"
                annotated = node.returns.value
        if returned is None and annotated is None:
            return None
        model_class = returned or annotated or None
        model = modules.get(model_class) if model_class else None
        required = tuple(p.name for p in _parameters(node) if not p.has_default)
        return Candidate(
            name=node.name, kind="factory", line=node.lineno, end_line=node.end_lineno or node.lineno,
            forward=model.forward if model else None, needs_arguments=bool(required),
            required_arguments=required, first_layer=model.first_layer if model else None,
            vocabulary=model.vocabulary if model else None, model_class=model_class)

    def candidates(self) -> list[Candidate]:
        top = set(id(n) for n in self.tree.body)
        found = {node.name: self._class_candidate(node, id(node) in top)
                 for node in ast.walk(self.tree) if isinstance(node, ast.ClassDef)
                 and self.classes.get(node.name) is node and self.is_module(node)}
        factories = [c for node in self.tree.body if isinstance(node, ast.FunctionDef)
                     if (c := self._factory_candidate(node, found)) is not None]
        return sorted([*found.values(), *factories], key=lambda c: c.line)


def _method(node: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    return next((item for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and item.name == name), None)


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef | None) -> list[Parameter]:
    """The named parameters after `self` (a method) or all (a function); *args and **kwargs
    are left out (they need nothing)."""
    if function is None:
        return []
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    defaults = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
    pairs = list(zip(positional, defaults))
    if pairs and pairs[0][0].arg in ("self", "cls") and not _is_staticmethod(function):
        pairs = pairs[1:]
    named = [(arg, default, False) for arg, default in pairs]
    named += [(arg, default, True) for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults)]
    return [Parameter(arg.arg, ast.unparse(arg.annotation) if arg.annotation else None, default is not None, keyword_only)
            for arg, default, keyword_only in named]


def _is_staticmethod(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list)


def _own_nodes(function: ast.FunctionDef):
    """The function's nodes, without those of functions and classes nested in it."""
    stack = list(function.body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def _literal_int(node: ast.expr | None) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool) \
            and node.value > 0:
        return node.value
    return None


def imports_torch(text: str) -> bool:
    """The file imports torch or a torch module (the workspace scan looks only at those)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "torch" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "torch":
            return True
    return False
