"""How a repository builds and calls its own models, read with `ast` (never imported): the
recipe a `build_<name>()` factory repeats and the example inputs a target starts from.

Sources (`Source`): the workspace's Python files and test files, the Python code blocks of the
Markdown files at its root (README.md) and the doctest examples of its docstrings. A *site* is a
call of the model's class in a source (`model = GPT(gptconf)`) where the name is that class: in
its own module, or imported from it or from a package whose `__init__` re-exports it
(`defining_module`); a document or doctest that imports nothing counts when one file defines
the name. Its *slice* is the statements before it, in its block and the blocks around it, that
the call's arguments need (`gptconf = GPTConfig(...)`, `config.vocab_size = 50257`). A site is
a recipe only when its slice is self-contained:

* every statement assigns a name or an attribute of a needed name, or changes a needed object
  through a method call;
* every call is of a class or function the workspace defines (`GPTConfig(...)`,
  `GPT.get_default_config()`) or of a pure builtin (`dict`, `tuple`, ...): no file, checkpoint,
  dataset or argument of an enclosing function (those make the site incomplete);
* every other name is bound when the model's file is imported (where the factory goes; a
  `__main__` block binds nothing then), or is a workspace name the source imports: the factory
  imports it (relative imports made absolute, the loader's dotted names from the root).

Without such a site, the recipe comes from the constructor's signature (`_from_signature`): a
parameter of a known workspace class is that class as a site builds it (its statements joined
while their names agree), or from its defaults; `...` for the rest, each named in `missing`.

Example inputs come from a site that then calls the model (`logits = model(idx)`) with
arguments whose slice is tensor factories on literals (`torch.zeros((1, 1), dtype=torch.long)`);
`device=` is dropped (the export runs on the CPU). Their constructor must be the one the factory
uses (the recipe's own site, or a call without arguments of a class built without them).

Values (`evaluate`): literals, arithmetic on them, and objects built by workspace classes
(`GPTConfig(n_layer=12)`: the class's defaults with the given fields) or by a workspace
method that fills one (`GPT.get_default_config()`: its `C.x = literal` assignments), then
attribute assignments. They tell the sizes inputs need: the vocabulary an nn.Embedding is built
with (`config.vocab_size`), an image size (`img_size=1024`).

Torch-free and LSP-free.
"""

from __future__ import annotations

import ast
import dataclasses
import doctest
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from onnxlens.server.fixits.candidates import Candidate, absolute_module, parameters_of, parse_expression

# Builtins a recipe may call: they compute, they read nothing.
PURE_BUILTINS = frozenset({"dict", "tuple", "list", "set", "frozenset", "int", "float", "str", "bool", "len",
                           "range", "min", "max", "abs", "round", "sum", "sorted", "zip", "enumerate"})
# torch functions that make a tensor from literals, and tensor methods that only reshape or cast it.
TENSOR_FACTORIES = frozenset({"randn", "rand", "zeros", "ones", "randint", "tensor", "arange", "full",
                              "linspace", "eye", "randn_like", "zeros_like", "ones_like"})
TENSOR_METHODS = frozenset({"long", "float", "int", "bool", "half", "double", "unsqueeze", "view", "reshape",
                            "expand", "repeat", "transpose", "permute", "contiguous", "clone", "flatten"})
_FENCE = re.compile(r"^```\s*(?:python|py|python3)\s*$(.*?)^```", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Source:
    """Python the workspace holds: a file, a document's code block or a docstring's examples."""

    label: str  # how a comment names it: "bench.py", "README.md"
    tree: ast.Module
    line_offset: int = 0  # added to the tree's line numbers to give the document's
    module: str | None = None  # a workspace file's dotted name from the root (`pkg.build`, `pkg` for pkg/__init__.py)


@dataclass(frozen=True)
class ClassInfo:
    """A class of the workspace: its constructor's fields (dataclass fields or `__init__`'s
    parameters) with their defaults' source (None: required), and its static/class methods that
    fill and return an object (`get_default_config`): their `C.x = value` assignments."""

    name: str
    fields: tuple[tuple[str, str | None, str | None], ...]  # (name, annotation, default source)
    builders: dict[str, dict[str, str]] = field(default_factory=dict)
    module: str | None = None  # the dotted name of the file that defines it

    @property
    def required(self) -> list[tuple[str, str | None]]:
        return [(name, annotation) for name, annotation, default in self.fields if default is None]


@dataclass(frozen=True)
class Recipe:
    """How to build a model: statements, then the constructor call; `missing` names what the
    user must still give (then the call holds `...` for them)."""

    statements: tuple[str, ...]
    call: str
    origin: str | None  # "bench.py:57" where the workspace builds it so; None: from the signature
    arguments: dict[str, Any] = field(default_factory=dict)  # constructor parameter -> value (evaluate)
    missing: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExampleCall:
    """How the workspace calls the model: the inputs' assignments and the call's arguments."""

    statements: tuple[str, ...]
    arguments: tuple[str, ...]
    keywords: tuple[tuple[str, str], ...]
    origin: str


@dataclass(frozen=True)
class Usage:
    """What the workspace says about one candidate."""

    recipe: Recipe | None = None
    example: ExampleCall | None = None
    arguments: dict[str, Any] = field(default_factory=dict)  # constructor parameter -> value the model is built with


class Unknown:
    """A value the sources do not tell."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = Unknown()


@dataclass
class Obj:
    """An object a workspace class or builder method made, by its fields' values."""

    cls: str
    fields: dict[str, Any]


# --- sources -----------------------------------------------------------------------------------

def python_source(label: str, text: str, tree: ast.Module | None = None) -> list[Source]:
    """A Python file (`label`: its path from the root; `tree`: the text parsed, if it was), and
    its docstrings' doctest examples, as sources (none if it does not parse)."""
    tree = tree if tree is not None else _parse(text)
    if tree is None:
        return []
    parts = label[:-3].split("/") if label.endswith(".py") else None
    module = ".".join(parts) if parts else None  # pkg/__init__.py: `pkg.__init__`, whose package is pkg
    found = [Source(label, tree, 0, module)]
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            docstring = ast.get_docstring(node, clean=True)
            if docstring and ">>>" in docstring:
                try:
                    examples = doctest.DocTestParser().get_examples(docstring)
                except ValueError:  # not a well-formed doctest (a `>>>>>>>` merge marker, bad indents)
                    continue
                snippet = _parse("\n".join(e.source.rstrip("\n") for e in examples))
                if snippet is not None:
                    found.append(Source(label, snippet, getattr(node, "lineno", 1)))
    return found


def markdown_sources(label: str, text: str) -> list[Source]:
    """The Python code blocks of a Markdown document, each a source."""
    found = []
    for match in _FENCE.finditer(text):
        tree = _parse(match.group(1))
        if tree is not None:
            found.append(Source(label, tree, text.count("\n", 0, match.start(1))))
    return found


def _parse(code: str) -> ast.Module | None:
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError):
        return None


def class_infos(sources: list[Source], nodes: dict[int, list[ast.AST]]) -> dict[str, ClassInfo]:
    """Every class the sources define, by name (the first definition of a name wins); `nodes`:
    each source's nodes by id(source)."""
    found: dict[str, ClassInfo] = {}
    for source in sources:
        for node in nodes[id(source)]:
            if isinstance(node, ast.ClassDef) and node.name not in found:
                found[node.name] = dataclasses.replace(_class_info(node), module=source.module)
    return found


def _class_info(node: ast.ClassDef) -> ClassInfo:
    init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    fields: list[tuple[str, str | None, str | None]] = []
    if init is not None:
        fields = [(p.name, p.annotation, p.default) for p in parameters_of(init)]
    else:  # a dataclass or NamedTuple: its annotated class attributes
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) \
                    and "ClassVar" not in ast.unparse(item.annotation):
                default = item.value
                if isinstance(default, ast.Call) and ast.unparse(default.func).endswith("field"):
                    default = next((k.value for k in default.keywords if k.arg == "default"), None)
                fields.append((item.target.id, ast.unparse(item.annotation),
                               ast.unparse(default) if default is not None else None))
    builders = {}
    for item in node.body:
        if isinstance(item, ast.FunctionDef) and any(
                isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod") for d in item.decorator_list):
            filled = _filled_fields(item)
            if filled:
                builders[item.name] = filled
    return ClassInfo(node.name, tuple(fields), builders)


def _filled_fields(function: ast.FunctionDef) -> dict[str, str]:
    """`C = ...; C.x = value; ...; return C`: the values given to the returned object's fields."""
    returned = next((n.value.id for n in function.body if isinstance(n, ast.Return)
                     and isinstance(n.value, ast.Name)), None)
    return {t.attr: ast.unparse(n.value) for n in function.body if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
            and t.value.id == returned}


# --- values ------------------------------------------------------------------------------------

def evaluate(expression: ast.expr | None, env: dict[str, Any], classes: dict[str, ClassInfo]) -> Any:
    """The value of an expression from literals, names of `env` and workspace classes; UNKNOWN
    for anything else."""
    if expression is None:
        return UNKNOWN
    if isinstance(expression, ast.Constant):
        return expression.value
    if isinstance(expression, ast.Name):
        return env.get(expression.id, UNKNOWN)
    if isinstance(expression, (ast.Tuple, ast.List)):
        return tuple(evaluate(e, env, classes) for e in expression.elts)
    if isinstance(expression, ast.UnaryOp) and isinstance(expression.op, ast.USub):
        value = evaluate(expression.operand, env, classes)
        return -value if isinstance(value, (int, float)) else UNKNOWN
    if isinstance(expression, ast.BinOp):
        left, right = evaluate(expression.left, env, classes), evaluate(expression.right, env, classes)
        if isinstance(left, (int, float)) and isinstance(right, (int, float)) and not isinstance(left, bool):
            operations = {ast.Add: lambda: left + right, ast.Sub: lambda: left - right,
                          ast.Mult: lambda: left * right, ast.FloorDiv: lambda: left // right if right else UNKNOWN,
                          ast.Div: lambda: left / right if right else UNKNOWN}
            compute = operations.get(type(expression.op))
            return compute() if compute else UNKNOWN
        return UNKNOWN
    if isinstance(expression, ast.Attribute):
        owner = evaluate(expression.value, env, classes)
        return owner.fields.get(expression.attr, UNKNOWN) if isinstance(owner, Obj) else UNKNOWN
    if isinstance(expression, ast.Call):
        return _evaluate_call(expression, env, classes)
    return UNKNOWN


def _evaluate_call(call: ast.Call, env: dict[str, Any], classes: dict[str, ClassInfo]) -> Any:
    function = call.func
    if isinstance(function, ast.Name) and function.id in classes:
        info = classes[function.id]
        values = {name: evaluate(parse_expression(default), {}, classes) if default is not None else UNKNOWN
                  for name, _, default in info.fields}
        names = [name for name, _, _ in info.fields]
        for name, argument in zip(names, call.args):
            values[name] = evaluate(argument, env, classes)
        for keyword in call.keywords:
            if keyword.arg:
                values[keyword.arg] = evaluate(keyword.value, env, classes)
        return Obj(function.id, values)
    if isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name) \
            and function.value.id in classes and function.attr in classes[function.value.id].builders:
        filled = classes[function.value.id].builders[function.attr]
        return Obj(function.value.id, {k: evaluate(parse_expression(v), {}, classes) for k, v in filled.items()})
    if isinstance(function, ast.Name) and function.id == "dict":
        return Obj("dict", {k.arg: evaluate(k.value, env, classes) for k in call.keywords if k.arg})
    return UNKNOWN


def run_statements(statements: list[ast.stmt], classes: dict[str, ClassInfo]) -> dict[str, Any]:
    """The names' values after straight-line assignments (attribute assignments fill objects)."""
    env: dict[str, Any] = {}
    for statement in statements:
        if isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            value = evaluate(statement.value, env, classes)
            for target in targets:
                if isinstance(target, ast.Name):
                    env[target.id] = value
                elif isinstance(target, ast.Attribute):
                    owner = evaluate(target.value, env, classes)
                    if isinstance(owner, Obj):
                        owner.fields[target.attr] = value
    return env


def constructor_arguments(candidate: Candidate, call: ast.Call | None, env: dict[str, Any],
                          classes: dict[str, ClassInfo]) -> dict[str, Any]:
    """The values `__init__`'s parameters take for a call (their defaults where not given)."""
    values = {p.name: evaluate(parse_expression(p.default), {}, classes) if p.default else UNKNOWN
              for p in candidate.constructor}
    if call is not None:
        positional = [p.name for p in candidate.constructor if not p.keyword_only]
        for name, argument in zip(positional, call.args):
            values[name] = evaluate(argument, env, classes)
        for keyword in call.keywords:
            if keyword.arg:
                values[keyword.arg] = evaluate(keyword.value, env, classes)
    return values


def value_of(expression: str, arguments: dict[str, Any], classes: dict[str, ClassInfo]) -> Any:
    """An `__init__` expression (`config.vocab_size`) evaluated with the constructor's arguments."""
    return evaluate(parse_expression(expression), arguments, classes)


# --- sites and slices --------------------------------------------------------------------------

@dataclass(frozen=True)
class _Site:
    source: Source
    call: ast.Call
    chain: tuple[tuple[tuple[ast.stmt, ...], int], ...]  # (block, index of the statement), innermost first
    bound_to: str | None  # `model = Cls(...)`: the name the model is bound to

    @property
    def in_class(self) -> bool:
        """The call is in a class's body or methods (another model building it as a part)."""
        return any(isinstance(block[index], ast.ClassDef) for block, index in self.chain[1:])


def _blocks(statements: list[ast.stmt], outer: tuple = ()) -> Iterator[tuple[tuple[ast.stmt, ...], int, tuple]]:
    """Every statement with its block and the enclosing (block, index) chain."""
    block = tuple(statements)
    for index, statement in enumerate(block):
        chain = ((block, index), *outer)
        yield block, index, chain
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(statement, name, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                yield from _blocks(inner, chain)
        for handler in getattr(statement, "handlers", []) or []:
            yield from _blocks(handler.body, chain)


def _own_expressions(statement: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of a statement outside the blocks nested in it (a `def`'s body is its own)."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return
    stack: list[ast.AST] = [statement]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.stmt, ast.Lambda)):
                continue
            stack.append(child)


def _calls_by_name(sources: list[Source]) -> dict[str, list[_Site]]:
    """Every call of a plain name in the sources, by the name, in source order."""
    found: dict[str, list[_Site]] = {}
    for source in sources:
        for block, index, chain in _blocks(source.tree.body):
            statement = block[index]
            for node in _own_expressions(statement):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id[:1].isupper():
                    bound = None
                    if isinstance(statement, ast.Assign) and statement.value is node and len(statement.targets) == 1 \
                            and isinstance(statement.targets[0], ast.Name):
                        bound = statement.targets[0].id
                    found.setdefault(node.func.id, []).append(_Site(source, node, chain, bound))
    for sites in found.values():
        sites.sort(key=lambda site: (sources.index(site.source), site.call.lineno, site.call.col_offset))
    return found


def _free_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _bound_names(statement: ast.stmt) -> set[str]:
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        targets = [statement.target]
    elif isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in statement.names}
    elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    else:
        return set()
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _changed_object(statement: ast.stmt) -> str | None:
    """`x.a = ...`, `x.a.b = ...` or `x.update(...)`: the name whose object the statement changes."""
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
    elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        target = statement.value.func
    else:
        return None
    if not isinstance(target, ast.Attribute):
        return None
    while isinstance(target, (ast.Attribute, ast.Subscript)):
        target = target.value
    return target.id if isinstance(target, ast.Name) else None


class _Slicer:
    """The statements a site's expressions need, when they are self-contained (module docstring)."""

    def __init__(self, model_names: set[str], workspace_names: set[str], tensors: bool) -> None:
        self.model_names = model_names  # bound at the top level of the model's file
        self.workspace_names = workspace_names  # classes and functions the workspace defines
        self.tensors = tensors  # allow torch's tensor factories (inputs), not only workspace calls

    def pure(self, node: ast.AST, picked_imports: set[str]) -> bool:
        for child in ast.walk(node):
            if isinstance(child, (ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr,
                                  ast.ListComp, ast.DictComp, ast.SetComp, ast.GeneratorExp)):
                return False
            if isinstance(child, ast.Call) and not self._pure_call(child):
                return False
        return True

    def _pure_call(self, call: ast.Call) -> bool:
        function = call.func
        if isinstance(function, ast.Name):
            return function.id in self.workspace_names or function.id in PURE_BUILTINS
        if isinstance(function, ast.Attribute):
            root = function.value
            if isinstance(root, ast.Name) and root.id in self.workspace_names:
                return True  # GPT.get_default_config()
            if self.tensors:
                if ast.unparse(root) in ("torch",) and function.attr in TENSOR_FACTORIES:
                    return True
                if function.attr in TENSOR_METHODS:
                    return True
        return False

    def slice(self, expressions: list[ast.AST], chain, source_imports: dict[str, ast.stmt]
              ) -> list[ast.stmt] | None:
        needed = set().union(*(_free_names(e) for e in expressions)) if expressions else set()
        if not all(self.pure(e, set()) for e in expressions):
            return None
        picked: list[ast.stmt] = []
        for block, index in chain:
            for statement in reversed(block[:index]):
                if not needed:
                    break
                bound = _bound_names(statement) & needed
                changed = _changed_object(statement)
                if isinstance(statement, (ast.Import, ast.ImportFrom)) or \
                        isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    continue  # names bound so are resolved below, by the model's file or an import
                if bound:
                    if isinstance(statement, ast.AugAssign) or getattr(statement, "value", None) is None \
                            or not self.pure(statement, set()):
                        return None  # `x += 1`, a bare `x: int`, a `for`/`with` target: not a plain value
                    picked.append(statement)
                    needed = (needed - bound) | _free_names(statement.value)
                elif changed is not None and changed in needed:
                    if not self.pure(statement, set()):
                        return None
                    picked.append(statement)
                    needed |= _free_names(statement) - {changed}
        imports = []
        for name in needed:
            if name in self.model_names or name in PURE_BUILTINS or (self.tensors and name == "torch"):
                continue
            statement = source_imports.get(name)
            if statement is None or name not in self.workspace_names:
                return None  # a parameter, a loaded checkpoint, a dataset ...
            imports.append(statement)
        return [*dict.fromkeys(imports), *reversed(picked)]


def _absolute_imports(source: Source, nodes: list[ast.AST]) -> dict[str, ast.stmt]:
    """Name -> an absolute import of it, for the source's imports of single names (a relative
    one made absolute from the source's place: the loader imports workspace files under their
    dotted names relative to the root)."""
    found = {}
    for node in nodes:
        if not isinstance(node, ast.ImportFrom):
            continue
        module = node.module
        if node.level:
            spelled = "." * node.level + (node.module or "")
            module = absolute_module(spelled, source.module) if source.module else None
        if not module:
            continue
        for alias in node.names:
            found[alias.asname or alias.name] = ast.ImportFrom(module, [ast.alias(alias.name, alias.asname)], 0)
    return found


def _without_device(node: ast.AST) -> ast.AST:
    """The expression without `device=...` keywords (the export runs on the CPU)."""
    class Strip(ast.NodeTransformer):
        def visit_Call(self, call: ast.Call) -> ast.Call:
            self.generic_visit(call)
            call.keywords = [k for k in call.keywords if k.arg != "device"]
            return call
    return Strip().visit(ast.parse(ast.unparse(node), mode="eval").body
                         if isinstance(node, ast.expr) else ast.parse(ast.unparse(node)).body[0])


def _origin(site: _Site) -> str:
    return f"{site.source.label}:{site.call.lineno + site.source.line_offset}"


# --- per candidate -----------------------------------------------------------------------------

@dataclass
class UsageIndex:
    """The sources of a workspace (or of one file) and the classes they define."""

    sources: list[Source]
    classes: dict[str, ClassInfo] = field(init=False)
    workspace_names: set[str] = field(init=False)
    definitions: dict[str, int] = field(init=False)  # class name -> how many files define it
    packages: dict[str, Source] = field(init=False)  # a package's dotted name -> its __init__.py
    calls: dict[str, list[_Site]] = field(init=False)  # name -> the calls of it
    imports: dict[int, dict[str, ast.stmt]] = field(init=False)  # id(source) -> its absolute imports

    def __post_init__(self) -> None:
        nodes = {id(source): list(ast.walk(source.tree)) for source in self.sources}  # each tree walked once
        self.classes = class_infos(self.sources, nodes)
        self.calls = _calls_by_name(self.sources)
        self.imports = {id(source): _absolute_imports(source, nodes[id(source)]) for source in self.sources}
        self.definitions = {}
        self.workspace_names = set(self.classes)
        self.packages = {source.module.removesuffix(".__init__"): source for source in self.sources
                         if source.module is not None and source.module.endswith("__init__")}
        for source in self.sources:
            for name in {n.name for n in nodes[id(source)] if isinstance(n, ast.ClassDef)} \
                    if source.module is not None else ():
                self.definitions[name] = self.definitions.get(name, 0) + 1
            self.workspace_names |= {n.name for n in nodes[id(source)]
                                     if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.col_offset == 0}

    def sites(self, name: str, model_module: str | None) -> list[_Site]:
        """The calls of the class `name` of the module `model_module` in the sources."""
        unique = self.definitions.get(name, 0) == 1
        return [site for site in self.calls.get(name, []) if self._refers_to(site, model_module, unique)]

    def _refers_to(self, site: _Site, model_module: str | None, unique: bool) -> bool:
        """The site's name is the class of the module `model_module`: called in its own file,
        or where an import binds the name to that module (through the packages that re-export
        it: defining_module); in a document or doctest that imports nothing of the name, when
        the workspace has one class of that name."""
        name = site.call.func.id  # type: ignore[attr-defined]
        imported = self.imports[id(site.source)].get(name)
        if isinstance(imported, ast.ImportFrom):
            return model_module is not None and self.defining_module(imported.module or "", name) == model_module
        if site.source.module is not None:
            return site.source.module == model_module
        return unique

    def defining_module(self, module: str, name: str) -> str:
        """The module that defines `name` imported from `module`: a package's `__init__` that
        imports it from a module of its own (`from .sam import Sam`) is followed there."""
        for _ in range(8):  # re-exports of re-exports; a cycle ends here
            package = self.packages.get(module)
            imported = self.imports[id(package)].get(name) if package is not None else None
            if not isinstance(imported, ast.ImportFrom) or not imported.module or imported.module == module:
                return module
            module = imported.module
        return module

    def built_outside_models(self, name: str, model_module: str | None) -> bool:
        """The workspace builds the class itself: in a script, a test, a document, a `__main__`
        block or a function, not only inside another class."""
        return any(not site.in_class for site in self.sites(name, model_module))

    def usage(self, candidate: Candidate, model_tree: ast.Module, model_module: str | None) -> Usage:
        """The recipe (for a class built with arguments) and the example call of a candidate of
        the module `model_module` (its dotted name from the root, as Source.module)."""
        model_names = _top_level_names(model_tree)
        recipe_slicer = _Slicer(model_names, self.workspace_names, tensors=False)
        input_slicer = _Slicer(model_names, self.workspace_names, tensors=True)
        recipe: Recipe | None = None
        recipe_site: _Site | None = None
        sites = self.sites(candidate.name, model_module)
        if candidate.kind == "class" and candidate.needs_arguments:
            found = self._site_recipe(sites, set(candidate.required_arguments),
                                      [p.name for p in candidate.constructor if not p.keyword_only], recipe_slicer)
            if found is not None:
                statements, recipe_site = found
                env = run_statements(statements, self.classes)
                recipe = Recipe(tuple(ast.unparse(s) for s in statements), ast.unparse(recipe_site.call),
                                _origin(recipe_site),
                                constructor_arguments(candidate, recipe_site.call, env, self.classes))
            else:
                recipe = self._from_signature(candidate, sites, model_names, recipe_slicer)
        example = None
        for site in sites:
            if site.bound_to is None or (site is not recipe_site and (site.call.args or site.call.keywords)):
                continue
            example = self._example(site, input_slicer)
            if example is not None:
                break
        arguments = recipe.arguments if recipe is not None else self.defaults(candidate)
        return Usage(recipe, example, arguments)

    def defaults(self, candidate: Candidate) -> dict[str, Any]:
        """The constructor's parameters' values when it is called without arguments."""
        return constructor_arguments(candidate, None, {}, self.classes)

    def _site_recipe(self, sites: list[_Site], required: set[str], positional: list[str], slicer: _Slicer
                     ) -> tuple[list[ast.stmt], _Site] | None:
        """The first site whose call gives every required parameter and whose slice is
        self-contained: its statements and the site."""
        for site in sites:
            if not _covers(site.call, required, positional):
                continue
            statements = slicer.slice([*site.call.args, *(k.value for k in site.call.keywords)], site.chain,
                                      self.imports[id(site.source)])
            if statements is not None:
                return statements, site
        return None

    def _from_signature(self, candidate: Candidate, sites: list[_Site], model_names: set[str],
                        slicer: _Slicer) -> Recipe:
        """A call from the constructor's signature. A parameter whose class is known (annotated,
        what the workspace passes: `gptconf = GPTConfig(...)`, or a config class named after the
        model) is that class built as the workspace builds it (`prompt_encoder=` from
        build_sam.py's `PromptEncoder(...)`: its statements joined to the factory's while their
        names agree), or from its defaults, with `...` for fields without one; any other
        required parameter is `...`. Every `...` is named in `missing`."""
        evidence = self._argument_classes(candidate, sites)
        arguments: list[str] = []
        statements: dict[str, str] = {}  # the joined statements, by source, with the names they bind
        bound: dict[str, str] = {}
        missing: list[str] = []
        values: dict[str, Any] = {}
        for parameter in candidate.constructor:
            if parameter.has_default:
                continue
            cls = _annotated_class(parameter.annotation, self.classes) or evidence.get(parameter.name) \
                or _conventional_config(candidate.name, parameter.name, self.classes)
            value = "..."
            if cls is not None and cls in model_names:
                info = self.classes[cls]
                required = info.required
                built = self._site_recipe(self.sites(cls, info.module), {n for n, _ in required},
                                          [n for n, _, _ in info.fields], slicer) if required else None
                if built is not None and _join(built[0], statements, bound):
                    value = ast.unparse(built[1].call)
                    values[parameter.name] = evaluate(built[1].call, run_statements(built[0], self.classes), self.classes)
                else:
                    value = f"{cls}({', '.join(f'{name}=...' for name, _ in required)})"
                    missing += [f"{cls}.{name}" + (f" ({annotation})" if annotation else "")
                                for name, annotation in required]
                    values[parameter.name] = UNKNOWN if required else \
                        _evaluate_call(ast.parse(f"{cls}()", mode="eval").body, {}, self.classes)
            else:
                missing.append(parameter.name + (f" ({parameter.annotation})" if parameter.annotation else ""))
            arguments.append(f"{parameter.name}={value}")
            values.setdefault(parameter.name, UNKNOWN)
        defaults = self.defaults(candidate)
        return Recipe(tuple(statements), f"{candidate.name}({', '.join(arguments)})", None,
                      {**defaults, **values}, tuple(missing))

    def _argument_classes(self, candidate: Candidate, sites: list[_Site]) -> dict[str, str]:
        """Parameter -> the workspace class the sites pass for it (`GPT(gptconf)` after
        `gptconf = GPTConfig(**checkpoint["model_args"])`)."""
        found: dict[str, str] = {}
        positional = [p.name for p in candidate.constructor if not p.keyword_only]
        for site in sites:
            given = [*zip(positional, site.call.args), *((k.arg, k.value) for k in site.call.keywords if k.arg)]
            for name, value in given:
                cls = self._class_made(value, site.chain)
                if cls is not None:
                    found.setdefault(name, cls)
        return found

    def _class_made(self, value: ast.expr, chain) -> str | None:
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in self.classes:
            return value.func.id
        if isinstance(value, ast.Name):
            for block, index in chain:
                for statement in reversed(block[:index]):
                    if value.id in _bound_names(statement):
                        made = statement.value if isinstance(statement, (ast.Assign, ast.AnnAssign)) else None
                        return self._class_made(made, ()) if made is not None else None
        return None

    def _example(self, site: _Site, slicer: _Slicer) -> ExampleCall | None:
        """The first call of the model bound at the site, later in the same block, with inputs
        the sources make from literals."""
        block, index = site.chain[0]
        model = site.bound_to
        for later in range(index + 1, len(block)):
            statement = block[later]
            if model in _bound_names(statement):
                return None
            for node in _own_expressions(statement):
                if not isinstance(node, ast.Call):
                    continue
                function = node.func
                calls_model = (isinstance(function, ast.Name) and function.id == model) or (
                    isinstance(function, ast.Attribute) and function.attr == "forward"
                    and isinstance(function.value, ast.Name) and function.value.id == model)
                if not calls_model or not (node.args or node.keywords):
                    continue
                expressions = [*node.args, *(k.value for k in node.keywords if k.arg)]
                if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
                    return None
                if model in set().union(*(_free_names(e) for e in expressions)):
                    return None
                chain = ((block, later), *site.chain[1:])
                statements = slicer.slice([_without_device(e) for e in expressions], chain,
                                          self.imports[id(site.source)])
                if statements is None or any(isinstance(s, (ast.Import, ast.ImportFrom)) for s in statements):
                    return None
                return ExampleCall(tuple(ast.unparse(_without_device(s)) for s in statements),
                                   tuple(ast.unparse(_without_device(a)) for a in node.args),
                                   tuple((k.arg, ast.unparse(_without_device(k.value))) for k in node.keywords),
                                   f"{site.source.label}:{node.lineno + site.source.line_offset}")
        return None


def _covers(call: ast.Call, required: set[str], positional: list[str]) -> bool:
    """The call gives every required parameter (positionally, by name, or through ** / *)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return True
    given = {name for name, _ in zip(positional, call.args)} | {k.arg for k in call.keywords}
    return required <= given


def _join(statements: list[ast.stmt], joined: dict[str, str], bound: dict[str, str]) -> bool:
    """Adds a recipe's statements to `joined` (source -> itself, in order) unless one binds a
    name another statement binds differently; whether they were added."""
    sources = [ast.unparse(s) for s in statements]
    names = [{n: text for n in _bound_names(s)} for s, text in zip(statements, sources)]
    if any(bound.get(n, text) != text for given in names for n, text in given.items()):
        return False
    for text, given in zip(sources, names):
        joined.setdefault(text, text)
        bound.update(given)
    return True


def _conventional_config(model: str, parameter: str, classes: dict[str, ClassInfo]) -> str | None:
    """`GPT(config)` beside a class `GPTConfig`: the config class named after the model, for a
    parameter that is a config by name (`config`, `cfg`, `model_config`, `args`)."""
    lowered = parameter.lower()
    if not (lowered in ("config", "cfg", "conf", "args", "params", "hparams") or lowered.endswith(("_config", "_cfg"))):
        return None
    for suffix in ("Config", "Cfg", "Args", "Params"):
        if f"{model}{suffix}" in classes:
            return f"{model}{suffix}"
    return None


def _annotated_class(annotation: str | None, classes: dict[str, ClassInfo]) -> str | None:
    """The workspace class an annotation names (`ModelDimensions`, `"GPTConfig"`, `Optional[X]`)."""
    if not annotation:
        return None
    names = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", annotation)
    found = [n for n in names if n in classes]
    return found[-1] if len(found) == 1 else None


def _top_level_names(tree: ast.Module) -> set[str]:
    """The names a module binds when it is imported (a factory in it can use them): its
    top-level statements, and those in its top-level `if`/`try` blocks (`try: import x`), but
    not in an `if __name__ == "__main__":` block, which runs only as a script."""
    names: set[str] = set()
    for node in tree.body:
        names |= _bound_names(node)
        if isinstance(node, (ast.If, ast.Try)) and not _is_main_guard(node):
            for inner in ast.walk(node):
                if isinstance(inner, ast.stmt) and not isinstance(inner, (ast.If, ast.Try)):
                    names |= _bound_names(inner)
    return names


def _is_main_guard(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "__name__" in ast.unparse(node.test) and "__main__" in ast.unparse(node.test)


def module_name(root: Path, file: Path) -> str | None:
    """A workspace file's dotted name from the root, as the loader imports it."""
    return ".".join(file.relative_to(root).with_suffix("").parts) if file.is_relative_to(root) else None


def file_index(label: str, text: str) -> UsageIndex:
    """The index of one file alone (the editor's action: it reads no other file); `label`: its
    path from the root."""
    return UsageIndex(python_source(label, text))


TEST_DIRECTORIES = ("tests", "test")
MAX_TEST_FILES = 200  # a test suite is read for how it calls the models, not walked whole
MAX_SOURCE_BYTES = 2_000_000


def test_files(root: Path) -> list[Path]:
    """The .py files of the test directories at the root or one level below it (`tests/`,
    `pkg/tests/`), sorted, at most MAX_TEST_FILES: the workspace scan leaves tests out, but how
    a test builds and calls a model is how the repository means it to be used."""
    found: list[Path] = []
    for directory in [root / d for d in TEST_DIRECTORIES] + [c / d for c in sorted(root.iterdir()) if c.is_dir()
                                                             and not c.name.startswith(".") for d in TEST_DIRECTORIES]:
        if directory.is_dir() and not directory.is_symlink():
            found += sorted(p for p in directory.rglob("*.py") if not p.is_symlink())
        if len(found) >= MAX_TEST_FILES:
            break
    return found[:MAX_TEST_FILES]


def workspace_index(root: Path, files: dict[Path, tuple[str, ast.Module]]) -> UsageIndex:
    """The index of a workspace: its Python files (text and tree, by path), its test files
    (test_files) and the Markdown documents at its top level."""
    sources: list[Source] = []
    for file, (text, tree) in files.items():
        sources += python_source(file.relative_to(root).as_posix() if file.is_relative_to(root) else file.name,
                                 text, tree)
    for file in test_files(root):
        try:
            if file not in files and file.stat().st_size <= MAX_SOURCE_BYTES:
                sources += python_source(file.relative_to(root).as_posix(), file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
    for document in sorted(root.glob("*.md")):
        try:
            sources += markdown_sources(document.name, document.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
    return UsageIndex(sources)
