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
server/fixits/new_targets.py writes example inputs.

Torch-free and LSP-free: text in, plain data out; a file that does not parse has no candidates.
`readable_source` says which files are worth reading at all.
"""

from __future__ import annotations

import ast
import dataclasses
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
    default: str | None = field(default=None, compare=False)  # the default's source text


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
    torch_base: str | None = None  # a class: the torch.nn class its base chain reaches (`Module`, `LayerNorm`)
    constructor: tuple[Parameter, ...] = ()  # a class: its __init__'s parameters (own or inherited in the file)
    # a class: the classes its __init__ calls, its building blocks: (where, name), where "" for this
    # file, else the module it is imported from as the import spells it (`.vit`, `pkg.layers`)
    parts: frozenset[tuple[str, str]] = frozenset()
    layers: frozenset[str] = frozenset()  # a class: the torch.nn layers it builds, its parts' included (`Conv3d`)
    # forward's parameters that go into an nn.Embedding, with the source of its num_embeddings in
    # __init__ (`config.vocab_size`, `50304`): token ids, integers below that size
    token_inputs: tuple[tuple[str, str], ...] = ()

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
    return candidates_of(tree)


def candidates_of(tree: ast.Module) -> list[Candidate]:
    """The candidates of a parsed file, in file order."""
    return _Finder(tree).candidates()


class _Finder:
    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.imports = _Imports()
        # Every class of the file by name (top-level first: a nested class does not shadow it).
        self.classes: dict[str, ast.ClassDef] = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.imports.add(node)
            elif isinstance(node, ast.ClassDef):
                self.classes.setdefault(node.name, node)
        self._module_cache: dict[str, bool] = {}
        self.functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}

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
                # Not a module: typing/abc/dataclass-ish bases, enum/exception hierarchies, and
                # torch's own classes other than nn modules (`torch.autograd.Function`).
                if origin.split(".")[0] not in {"typing", "abc", "enum", "dataclasses", "collections",
                                                "typing_extensions", "pydantic", "torch"}:
                    return True
        return False

    def _owner(self, node: ast.ClassDef, name: str, seen: frozenset[str] = frozenset()) -> ast.ClassDef:
        """The class of the file, `node` or a base, that defines the method `name` (`node` if none)."""
        if _method(node, name) is not None:
            return node
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id in self.classes and base.id not in seen:
                owner = self._owner(self.classes[base.id], name, seen | {node.name})
                if _method(owner, name) is not None:
                    return owner
        return node

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

    def torch_base(self, node: ast.ClassDef, seen: frozenset[str] = frozenset()) -> str | None:
        """The torch.nn class the base chain reaches within the file (`Module`, `LayerNorm`)."""
        for base in node.bases:
            origin = self.imports.resolve(base)
            if is_torch_nn_module(origin):
                return (origin or "").rsplit(".", 1)[-1]
            if isinstance(base, ast.Name) and base.id in self.classes and base.id not in seen:
                found = self.torch_base(self.classes[base.id], seen | {node.name})
                if found is not None:
                    return found
        return None

    def _parts(self, init: ast.FunctionDef | None) -> frozenset[tuple[str, str]]:
        """The classes `__init__` uses (`Block(config)`, `layers.Block(...)`, `norm = RMSNorm`,
        `partial(Block, ...)`), directly or through a top-level function of the file it calls
        (`MBConv(...)` returning `MBConvResidual(...)`), as (where, name): where is "" for a
        class of this file, else the module it is imported from as the import spells it
        (`.vit`, `pkg.layers`). torch's own and unbound names left out."""
        if init is None:
            return frozenset()
        found = set()
        functions = [init, *(self.functions[n] for w, n in self._referenced(init) if not w and n in self.functions)]
        for function in functions:
            found |= {(where, name) for where, name in self._referenced(function) if name[:1].isupper()}
        return frozenset(found)

    def _referenced(self, function: ast.FunctionDef) -> set[tuple[str, str]]:
        """The file's classes and functions, and the imported names, that a function's body
        names (its signature's annotations are no use: `vit: ViT` takes one built elsewhere)."""
        found = set()
        for node in (n for statement in function.body for n in ast.walk(statement)):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) \
                    and (node.id in self.classes or node.id in self.functions):
                found.add(("", node.id))
            elif isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
                origin = self.imports.resolve(node)
                if origin and not origin.startswith("torch.") and "." in origin:
                    where, _, name = origin.rpartition(".")
                    found.add((where, name))
        return found

    def _inits(self, node: ast.ClassDef, seen: frozenset[str] = frozenset()) -> list[ast.FunctionDef]:
        """The `__init__`s that build an instance: the class's own (or inherited) and those of
        its bases in this file that it calls through `super().__init__`."""
        owner = self._owner(node, "__init__")
        init = _method(owner, "__init__")
        if init is None:
            return []
        found = [init]
        if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "__init__"
               for n in ast.walk(init)):
            for base in owner.bases:
                if isinstance(base, ast.Name) and base.id in self.classes and base.id not in seen:
                    found += self._inits(self.classes[base.id], seen | {owner.name})
        return found

    def _token_inputs(self, init: ast.FunctionDef | list[ast.FunctionDef] | None, forward: ast.FunctionDef | None,
                      parameters: list[Parameter], methods: dict[str, ast.FunctionDef],
                      seen: frozenset[str] = frozenset()) -> tuple[tuple[str, str], ...]:
        """forward's parameters passed (as they are, or cast: `x.long()`) to an nn.Embedding of
        `__init__`, by the attribute it is bound to (`self.wte = nn.Embedding(...)`, `wte=` in a
        ModuleDict), or to a class of this file whose forward does so with its first parameter
        (`self.token_emb = TokenEmbedding(dim, num_tokens)`: its size in this `__init__`'s terms)."""
        inits = init if isinstance(init, list) else [init] if init is not None else []
        if not inits or forward is None:
            return ()
        sizes: dict[str, str] = {}  # attribute -> its embedding's size
        local: dict[str, str] = {}  # `emb = default(emb, TokenEmbedding(...))`: local name -> size
        nodes = [n for function in inits for n in ast.walk(function)]
        for node in sorted((n for n in nodes if isinstance(n, ast.Assign)), key=lambda n: n.lineno):
            size = self._size_within(node.value, seen)
            if size is None and isinstance(node.value, ast.Name):
                size = local.get(node.value.id)
            for target in node.targets:
                if size is not None and isinstance(target, ast.Name):
                    local.setdefault(target.id, size)
                elif size is not None and isinstance(target, ast.Attribute):
                    sizes.setdefault(target.attr, size)
        for node in nodes:
            pairs = []
            if isinstance(node, ast.Call):
                pairs = [(k.arg, k.value) for k in node.keywords if k.arg]
            elif isinstance(node, ast.Dict):
                pairs = [(k.value, v) for k, v in zip(node.keys, node.values)
                         if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            for name, value in pairs:
                size = self._embedding_size(value) or self._wrapped_embedding_size(value, seen)
                if size is not None:
                    sizes.setdefault(name, size)
        found: dict[str, str] = {}
        # forward itself, and the methods forward calls on self with its parameters (`self._embeds(text)`)
        scans = [(forward, {p.name: p.name for p in parameters})]
        for call in (n for n in ast.walk(forward) if isinstance(n, ast.Call)):
            method = methods.get(call.func.attr) if isinstance(call.func, ast.Attribute) \
                and isinstance(call.func.value, ast.Name) and call.func.value.id == "self" else None
            if method is not None and method is not forward:
                names = [p.name for p in parameters_of(method) if not p.keyword_only]
                given = {inner: _root_name(argument) for inner, argument in zip(names, call.args)}
                scans.append((method, {inner: outer for inner, outer in given.items()
                                       if outer in {p.name for p in parameters}}))
        for function, names in scans:
            for call in (n for n in ast.walk(function) if isinstance(n, ast.Call)):
                if isinstance(call.func, ast.Attribute) and call.func.attr in sizes and call.args:
                    argument = names.get(_root_name(call.args[0]) or "")
                    if argument is not None:
                        found.setdefault(argument, sizes[call.func.attr])
        return tuple(found.items())

    def _embedding_size(self, value: ast.expr) -> str | None:
        if not isinstance(value, ast.Call) or not (self.imports.resolve(value.func) or "").endswith(".Embedding"):
            return None
        size = value.args[0] if value.args else next(
            (k.value for k in value.keywords if k.arg == LAYERS["Embedding"]), None)
        return ast.unparse(size) if size is not None else None

    def _size_within(self, value: ast.expr, seen: frozenset[str]) -> str | None:
        """The size of the first embedding built anywhere in an expression (`default(x, nn.Embedding(...))`)."""
        for node in ast.walk(value):
            if isinstance(node, ast.Call):
                size = self._embedding_size(node) or self._wrapped_embedding_size(node, seen)
                if size is not None:
                    return size
        return None

    def _wrapped_embedding_size(self, value: ast.expr, seen: frozenset[str]) -> str | None:
        """`TokenEmbedding(dim, num_tokens)` of a file class whose forward's first parameter is a
        token input: its embedding's size, as the call's argument expression (or a literal)."""
        if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Name) \
                or value.func.id not in self.classes or value.func.id in seen:
            return None
        node = self.classes[value.func.id]
        init, _ = self._inherited(node, "__init__")
        forward, _ = self._inherited(node, "forward")
        forward_parameters = parameters_of(forward)
        if init is None or not forward_parameters:
            return None
        inner = dict(self._token_inputs(init, forward, forward_parameters, _methods(node), seen | {value.func.id}))
        size = inner.get(forward_parameters[0].name)
        if size is None:
            return None
        if _literal_int(parse_expression(size)) is not None:
            return size
        constructor = parameters_of(init)
        given = {p.name: a for p, a in zip([p for p in constructor if not p.keyword_only], value.args)}
        given |= {k.arg: k.value for k in value.keywords if k.arg}
        argument = given.get(size)
        if argument is not None:
            return ast.unparse(argument)
        default = next((p.default for p in constructor if p.name == size), None)
        return default if default is not None and _literal_int(parse_expression(default)) is not None else None

    def _forwarded(self, node: ast.ClassDef, init: ast.FunctionDef, seen: frozenset[str]) -> list[Parameter]:
        """`def __init__(self, **kwargs): super().__init__(causal=True, **kwargs)`: the base's
        parameters (of a base in this file) that reach it through **kwargs, as keyword-only."""
        spread = init.args.kwarg.arg if init.args.kwarg else None
        if spread is None:
            return []
        for call in (n for n in ast.walk(init) if isinstance(n, ast.Call)):
            function = call.func
            if not (isinstance(function, ast.Attribute) and function.attr == "__init__"
                    and any(k.arg is None and isinstance(k.value, ast.Name) and k.value.id == spread
                            for k in call.keywords)):
                continue
            base = next((b.id for b in node.bases if isinstance(b, ast.Name) and b.id in self.classes
                         and b.id not in seen), None)
            if base is None:
                return []
            base_init, _ = self._inherited(self.classes[base], "__init__")
            if base_init is None:
                return []
            given = {k.arg for k in call.keywords if k.arg}
            positional = len(call.args) - (1 if not isinstance(function.value, ast.Call) else 0)  # Base.__init__(self, ...)
            inherited = parameters_of(base_init)[max(positional, 0):]
            inherited += self._forwarded(self.classes[base], base_init, seen | {node.name})
            return [dataclasses.replace(p, keyword_only=True) for p in inherited
                    if p.name not in given and p.name not in {q.name for q in parameters_of(init)}]
        return []

    def _layers(self, node: ast.ClassDef, seen: frozenset[str] = frozenset()) -> frozenset[str]:
        """The torch.nn layers the class builds: in its `__init__`s, and in those of the classes
        of this file they build (a tokenizer's Conv3d is the model's too)."""
        found: set[str] = set()
        for init in self._inits(node):
            for call in (n for n in ast.walk(init) if isinstance(n, ast.Call)):
                origin = self.imports.resolve(call.func)
                if is_torch_nn_module(origin):
                    found.add((origin or "").rsplit(".", 1)[-1])
                elif isinstance(call.func, ast.Name) and call.func.id in self.classes \
                        and call.func.id not in seen | {node.name}:
                    found |= self._layers(self.classes[call.func.id], seen | {node.name})
        return frozenset(found)

    def _class_candidate(self, node: ast.ClassDef, top_level: bool) -> Candidate:
        forward, _ = self._inherited(node, "forward")
        init, unknown_init = self._inherited(node, "__init__")
        constructor = tuple(parameters_of(init)) if init else ()
        if init is not None:
            constructor += tuple(self._forwarded(self._owner(node, "__init__"), init, frozenset()))
        required = tuple(p.name for p in constructor if not p.has_default)
        first_layer, vocabulary = self._sizes(init)
        forward_parameters = parameters_of(forward)
        return Candidate(
            name=node.name, kind="class", line=node.lineno, end_line=node.end_lineno or node.lineno,
            forward=tuple(forward_parameters) if forward else None,
            needs_arguments=bool(required) or (init is None and unknown_init),
            required_arguments=required, first_layer=first_layer, vocabulary=vocabulary, top_level=top_level,
            torch_base=self.torch_base(node), constructor=constructor, parts=self._parts(init),
            layers=self._layers(node),
            token_inputs=self._token_inputs(self._inits(node), forward, forward_parameters,
                                            _methods(self._owner(node, "forward"))))

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
        required = tuple(p.name for p in parameters_of(node) if not p.has_default)
        return Candidate(
            name=node.name, kind="factory", line=node.lineno, end_line=node.end_lineno or node.lineno,
            forward=model.forward if model else None, needs_arguments=bool(required),
            required_arguments=required, first_layer=model.first_layer if model else None,
            vocabulary=model.vocabulary if model else None, model_class=model_class,
            constructor=tuple(parameters_of(node)), token_inputs=model.token_inputs if model else ())

    def candidates(self) -> list[Candidate]:
        top = set(id(n) for n in self.tree.body)
        found = {node.name: self._class_candidate(node, id(node) in top)
                 for node in ast.walk(self.tree) if isinstance(node, ast.ClassDef)
                 and self.classes.get(node.name) is node and self.is_module(node)}
        factories = [c for node in self.tree.body if isinstance(node, ast.FunctionDef)
                     if (c := self._factory_candidate(node, found)) is not None]
        return sorted([*found.values(), *factories], key=lambda c: c.line)


def _methods(node: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {item.name: item for item in node.body if isinstance(item, ast.FunctionDef)}


def _method(node: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    return next((item for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and item.name == name), None)


def parameters_of(function: ast.FunctionDef | ast.AsyncFunctionDef | None) -> list[Parameter]:
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
    return [Parameter(arg.arg, ast.unparse(arg.annotation) if arg.annotation else None, default is not None, keyword_only,
                      ast.unparse(default) if default is not None else None)
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


def _root_name(node: ast.expr) -> str | None:
    """`x`, `x.long()`, `x.to(dtype)`: the name the value comes from."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        node = node.func.value
    return node.id if isinstance(node, ast.Name) else None


def parse_expression(text: str | None) -> ast.expr | None:
    """An expression's source parsed; None when there is none or it does not parse."""
    if text is None:
        return None
    try:
        return ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError):
        return None


def absolute_module(spelled: str, module: str) -> str | None:
    """The module an import in `module` names (`.vit`, `..modeling`, `pkg.layers`; "" for
    `module` itself), as a dotted name from the root; None when it climbs above the root."""
    if not spelled:
        return module
    if not spelled.startswith("."):
        return spelled
    level = len(spelled) - len(spelled.lstrip("."))
    package = module.split(".")[:-1]
    if level - 1 > len(package):
        return None
    rest = spelled[level:]
    return ".".join([*package[:len(package) - (level - 1)], *([rest] if rest else [])])


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
    return tree_imports_torch(tree)


def tree_imports_torch(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "torch" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "torch":
            return True
    return False
