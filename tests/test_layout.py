"""Invariants of the layout (ARCHITECTURE.md).

* No import cycle between onnxlens modules, typing-only imports (`if TYPE_CHECKING:`) and
  imports inside functions included: read statically from the source, so an import that only
  a type checker or a rarely taken branch would run counts too.
* `exporter/` never imports `server/` (statically).
* `server/` never imports torch; `exporter/` never imports pygls or lsprotocol. Checked twice:
  statically (every import statement of every module, however deep in a function) and by
  importing in a fresh interpreter (transitive imports of third-party packages count too).
* The packages the source tree has are the packages pyproject.toml ships.
* torch's private modules (torch.onnx._internal, torch._export, torch._dynamo, torch._subclasses,
  torch.fx.experimental, the private functions of torch.export's modules ...) are used in one
  package only, the adapter of torch's internals (exporter/torch_internals/): statically, every
  import and every attribute read through a name bound to torch.
* Fix-its: the worker's proposals (exporter/proposals/) are a wing, importing no module of the
  pipeline's; the server's fix-its (server/fixits/) are LSP-free, importing nothing of
  server/lsp/ (nor pygls, lsprotocol).
* The pipeline (exporter/pipeline/): each stage of the stage table (types.STAGES, and the public
  path's public_export) is a module of pipeline/stages/ with a `run(job)`, and that package holds
  nothing else; the helpers are in wings by concern (pipeline/failures/, untranslatable/,
  tracing/, output/, target/, beside exporter/verify/ and exporter/proposals/). No module imports
  a stage but the pipeline's own __init__ (which builds the stage table): a stage imports wings,
  never another stage; wings never import stages.
* No import cycle between exporter's packages: a module's package imports (statically, as above)
  never lead back to it through packages beside it (a package's edges to the packages inside or
  around it do not count: pipeline/__init__ imports its stages, which import pipeline/job.py).
* Small folders: no folder of exporter/ or server/ holds more than 12 modules (`__init__.py` not
  counted).
* One rule in one place: the names of the directories that hold none of the user's code are
  spelled in exporter/locations/directories.py only, and the ids of the server's commands in
  server/lsp/features/command_ids.py only.
"""

from __future__ import annotations

import ast
import pkgutil
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

import onnxlens.exporter
import onnxlens.server

REPO = Path(__file__).resolve().parents[1]
SOURCE_DIRS = {"onnxlens.exporter": REPO / "exporter", "onnxlens.server": REPO / "server"}


def _modules() -> dict[str, Path]:
    """Every onnxlens module -> its file, read from the source tree."""
    modules = {}
    for package, directory in SOURCE_DIRS.items():
        for path in directory.rglob("*.py"):
            parts = list(path.relative_to(directory).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join([package, *parts])] = path
    return modules


MODULES = _modules()


def _imported(module: str, path: Path) -> set[str]:
    """Every module name `module` imports anywhere in its source (resolved relative imports)."""
    is_package = path.name == "__init__.py"
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            names.add(prefix)
            # `from package import module` imports a module, not only a name.
            names.update(f"{prefix}.{alias.name}" for alias in node.names)
    return names


def _graph() -> dict[str, set[str]]:
    """onnxlens module -> the onnxlens modules it imports (a package import is an edge to the
    package's __init__)."""
    return {module: {name for name in _imported(module, path) if name in MODULES and name != module}
            for module, path in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), or a self-loop."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_import_graph_is_read():
    graph = _graph()
    # Sanity: the reader sees real edges, or an empty graph would pass the cycle test.
    assert "onnxlens.exporter.types" in graph["onnxlens.server.service.exports"]
    assert len(graph) > 30


def test_no_import_cycle_between_onnxlens_modules():
    cycles = _cycles(_graph())
    assert not cycles, "import cycles (typing-only imports count):\n" + "\n".join(
        " <-> ".join(cycle) for cycle in cycles)


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("onnxlens.exporter")))
def test_the_exporter_never_imports_the_server(module):
    # The worker runs the exporter without the server's code (what only the server keeps is in
    # server/: its events, the editor's status).
    bad = sorted(name for name in _imported(module, MODULES[module]) if name.startswith("onnxlens.server"))
    assert not bad, f"{module} imports {bad}"


FORBIDDEN = {"onnxlens.server": ("torch", "functorch", "onnxscript", "onnx_ir", "onnxruntime"),
             "onnxlens.exporter": ("pygls", "lsprotocol")}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_across_the_process_boundary(module):
    side = next(package for package in FORBIDDEN if module.startswith(package))
    bad = sorted(name for name in _imported(module, MODULES[module])
                 if name.split(".")[0] in FORBIDDEN[side])
    assert not bad, f"{module} imports {bad}"


def _server_modules() -> list[str]:
    found = [m.name for m in pkgutil.walk_packages(onnxlens.server.__path__, "onnxlens.server.")]
    return [m for m in found if not m.endswith("__main__")] + [
        "onnxlens.exporter.types", "onnxlens.exporter.events", "onnxlens.exporter.wire.plain",
        "onnxlens.exporter.wire.frames", "onnxlens.exporter.wire.protocol"]


def _imports(module: str, prefixes: tuple[str, ...]) -> bool:
    code = f"import sys, {module}; print(any(m.split('.')[0] in {prefixes!r} for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip() == "True"


@pytest.mark.slow  # a fresh interpreter per module
@pytest.mark.parametrize("module", _server_modules())
def test_server_side_modules_do_not_import_torch(module):
    assert not _imports(module, ("torch",))


@pytest.mark.slow  # a fresh interpreter per module
def test_the_exporter_pipeline_does_not_import_pygls():
    # One fresh interpreter for the whole pipeline (it imports torch: seconds per module); the
    # static test above covers every module on its own.
    assert not _imports("onnxlens.exporter.pipeline", ("pygls", "lsprotocol"))


def test_pyproject_ships_every_package_of_the_source_tree():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    shipped = set(config["packages"])
    packages = {name for name, path in MODULES.items() if path.name == "__init__.py"}
    assert packages == shipped, f"missing from pyproject: {packages - shipped}; not in the tree: {shipped - packages}"


ADAPTER_PACKAGE = "onnxlens.exporter.torch_internals"
# Public by name, private in fact (torch documents nothing under it as stable).
_PRIVATE_TORCH_PACKAGES = ("torch.fx.experimental",)


def _is_private(dotted: str) -> bool:
    """A dotted torch name with a private part: `torch._ops`, `torch.onnx._internal.exporter`,
    `torch.fx.proxy._STACK_TRACE_ANCHORS`, `torch.fx.experimental.symbolic_shapes` (dunders
    such as `torch.__version__` are public)."""
    parts = dotted.split(".")
    if parts[0] not in ("torch", "functorch"):
        return False
    if any(dotted == package or dotted.startswith(package + ".") for package in _PRIVATE_TORCH_PACKAGES):
        return True
    return any(part.startswith("_") and not (part.startswith("__") and part.endswith("__")) for part in parts[1:])


def private_torch_uses(source: str) -> list[str]:
    """Every private torch name `source` reaches: in imports (`from torch.onnx._internal ...`,
    `from torch.export.exported_program import _split...`), and in attribute chains read through
    a name bound to a torch module (`torch._ops.OpOverload`, `proxy._STACK_TRACE_ANCHORS` after
    `from torch.fx import proxy`), imports inside functions included."""
    tree = ast.parse(source)
    bound: dict[str, str] = {}  # local name -> the torch name it stands for
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _is_private(alias.name):
                    found.append(alias.name)
                if alias.name.split(".")[0] in ("torch", "functorch"):
                    if alias.asname:
                        bound[alias.asname] = alias.name
                    else:
                        bound[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                if _is_private(name):
                    found.append(name)
                if node.module.split(".")[0] in ("torch", "functorch"):
                    bound[alias.asname or alias.name] = name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain = []
            item: ast.AST = node
            while isinstance(item, ast.Attribute):
                chain.append(item.attr)
                item = item.value
            if isinstance(item, ast.Name) and item.id in bound:
                dotted = ".".join([bound[item.id], *reversed(chain)])
                if _is_private(dotted):
                    found.append(dotted)
    return sorted(set(found))


def test_the_private_torch_finder_finds_each_kind_of_use():
    source = textwrap.dedent("""
        import torch
        import torch.fx.experimental.symbolic_shapes
        from torch.onnx._internal.exporter import _core
        from torch.export.exported_program import _split_decomp_table_to_cia_and_python_decomp
        from torch.fx import proxy
        import torch.utils as utils

        def inside():
            from torch._subclasses.fake_tensor import is_fake
            return torch._ops.OpOverload, proxy._STACK_TRACE_ANCHORS, utils._pytree, torch.__version__, torch.fx.Node
    """)
    assert private_torch_uses(source) == sorted([
        "torch.fx.experimental.symbolic_shapes", "torch.onnx._internal.exporter._core",
        "torch.export.exported_program._split_decomp_table_to_cia_and_python_decomp",
        "torch._subclasses.fake_tensor.is_fake", "torch._ops", "torch._ops.OpOverload",
        "torch.fx.proxy._STACK_TRACE_ANCHORS", "torch.utils._pytree"])


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not m.startswith(ADAPTER_PACKAGE)))
def test_only_the_adapter_package_uses_private_torch_modules(module):
    uses = private_torch_uses(MODULES[module].read_text(encoding="utf-8"))
    assert not uses, f"{module} uses torch internals outside {ADAPTER_PACKAGE}: {uses}"


def test_the_adapter_package_is_where_torch_internals_are():
    # Sanity: the rule above is not vacuous; the reference adapter does use them.
    assert private_torch_uses(MODULES[f"{ADAPTER_PACKAGE}.torch_2_13"].read_text(encoding="utf-8"))
    assert not private_torch_uses(MODULES[f"{ADAPTER_PACKAGE}.public"].read_text(encoding="utf-8"))


@pytest.mark.slow  # a fresh interpreter per module
def test_the_adapter_choice_is_torch_free():
    # The server names the worker's adapter (onnxlens --version, its log, the cache key).
    assert not _imports("onnxlens.exporter.torch_internals", ("torch",))
    assert not _imports("onnxlens.exporter.versions", ("torch",))


def _imports_of_package(package: str) -> dict[str, set[str]]:
    return {module: _imported(module, path) for module, path in MODULES.items()
            if module == package or module.startswith(package + ".")}


def test_the_proposals_wing_imports_no_module_of_the_pipeline():
    imports = _imports_of_package("onnxlens.exporter.proposals")
    assert imports, "no module in exporter/proposals/"
    for module, names in imports.items():
        reached = sorted(n for n in names if n == "onnxlens.exporter.pipeline" or n.startswith("onnxlens.exporter.pipeline."))
        assert not reached, f"{module} imports {reached}"


def test_the_fixits_know_nothing_of_lsp():
    imports = _imports_of_package("onnxlens.server.fixits")
    assert len(imports) > 5, "the fix-its are not where the layout says"
    for module, names in imports.items():
        reached = sorted(n for n in names if n.startswith(("onnxlens.server.lsp", "pygls", "lsprotocol")))
        assert not reached, f"{module} imports {reached}"


def _string_constants(path: Path) -> set[str]:
    return {node.value for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)}


RULE_OF_DIRECTORIES = "onnxlens.exporter.locations.directories"
COMMAND_IDS = "onnxlens.server.lsp.features.command_ids"


def _spelled_outside(owner: str, words: set[str]) -> dict[str, list[str]]:
    found = {module: sorted(_string_constants(path) & words) for module, path in MODULES.items() if module != owner}
    return {module: words for module, words in found.items() if words}


def test_only_the_directory_rule_names_the_directories_that_are_not_the_users():
    from onnxlens.exporter.locations.directories import ENVIRONMENT_MARKERS, NOT_USERS

    # Names with no other meaning in our code: `__pycache__` (bytecode), `site-packages` and
    # `dist-packages` (where an installed library is) have other uses.
    names = (set(NOT_USERS) | set(ENVIRONMENT_MARKERS)) - {"__pycache__", "site-packages", "dist-packages"}
    assert names <= _string_constants(MODULES[RULE_OF_DIRECTORIES])
    assert not _spelled_outside(RULE_OF_DIRECTORIES, names)


def test_only_the_declaration_spells_the_server_commands():
    from onnxlens.server.lsp.features.command_ids import ALL

    assert set(ALL) <= _string_constants(MODULES[COMMAND_IDS])
    assert not _spelled_outside(COMMAND_IDS, set(ALL))


def test_the_spelling_check_finds_a_spelling():
    # Sanity: the checks above would see a module spelling a name of the rule.
    assert ".venv" in _string_constants(MODULES[RULE_OF_DIRECTORIES])
    assert _spelled_outside("onnxlens.server.lsp.features.commands", {".venv"})


PIPELINE = "onnxlens.exporter.pipeline"
STAGES_PACKAGE = f"{PIPELINE}.stages"
MOST_MODULES = 12


def _package_of(module: str) -> str:
    return module if MODULES[module].name == "__init__.py" else module.rsplit(".", 1)[0]


def _defines(path: Path, function: str) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return any(isinstance(node, ast.FunctionDef) and node.name == function for node in tree.body)


def test_each_stage_is_a_module_of_the_stages_package_with_run():
    from onnxlens.exporter.types import STAGES

    stages = {module.rsplit(".", 1)[1] for module in MODULES if module.startswith(STAGES_PACKAGE + ".")}
    assert stages == {*STAGES, "public_export"}, "pipeline/stages/ holds the stages, and only them"
    for stage in stages:
        path = MODULES[f"{STAGES_PACKAGE}.{stage}"]
        assert _defines(path, "run"), f"{path} has no run(job)"


def _stage_importers(graph: dict[str, set[str]]) -> list[str]:
    """Modules that import a stage, the pipeline's __init__ (which builds the stage table) but:
    a wing, or another stage."""
    return sorted(f"{module} imports {stage}" for module, imported in graph.items() if module != PIPELINE
                  for stage in imported if stage.startswith(STAGES_PACKAGE + "."))


def test_only_the_pipeline_imports_a_stage():
    graph = _graph()
    # Sanity: the reader sees the pipeline's edges to its stages, or an empty graph would pass.
    assert f"{STAGES_PACKAGE}.capture" in graph[PIPELINE]
    assert not (found := _stage_importers(graph)), "\n".join(found)


def test_the_stage_import_check_finds_a_wing_or_a_stage_importing_a_stage():
    graph = {f"{PIPELINE}.failures.errors": {f"{STAGES_PACKAGE}.capture"},
             f"{STAGES_PACKAGE}.public_export": {f"{STAGES_PACKAGE}.capture", f"{PIPELINE}.job"},
             f"{STAGES_PACKAGE}.capture": {f"{PIPELINE}.failures.errors"},
             PIPELINE: {f"{STAGES_PACKAGE}.load", f"{STAGES_PACKAGE}.capture"}}
    assert _stage_importers(graph) == [f"{PIPELINE}.failures.errors imports {STAGES_PACKAGE}.capture",
                                       f"{STAGES_PACKAGE}.public_export imports {STAGES_PACKAGE}.capture"]


def _package_graph(graph: dict[str, set[str]], package_of) -> dict[str, set[str]]:
    """Package -> the packages beside it (neither inside nor around it) that its modules import."""
    def nested(a: str, b: str) -> bool:
        return a.startswith(b + ".") or b.startswith(a + ".")

    packages: dict[str, set[str]] = {}
    for module, imported in graph.items():
        edges = packages.setdefault(package_of(module), set())
        edges.update(other for other in map(package_of, imported)
                     if other != package_of(module) and not nested(other, package_of(module)))
    return packages


def test_no_import_cycle_between_the_exporters_packages():
    graph = {module: imported for module, imported in _graph().items() if module.startswith("onnxlens.exporter")}
    packages = _package_graph(graph, _package_of)
    # Sanity: the stages reach the wings, or an empty graph would pass.
    assert {f"{PIPELINE}.failures", f"{PIPELINE}.untranslatable", f"{PIPELINE}.target"} <= packages[STAGES_PACKAGE]
    cycles = _cycles(packages)
    assert not cycles, "import cycles between packages:\n" + "\n".join(" <-> ".join(cycle) for cycle in cycles)


def test_the_package_cycle_check_finds_a_cycle_between_wings():
    graph = {"p.a.x": {"p.b.y"}, "p.b.y": {"p.a.z"}, "p.a.z": set(), "p.job": {"p.a.x"}}
    packages = _package_graph(graph, lambda module: module.rsplit(".", 1)[0])
    assert _cycles(packages) == [["p.a", "p.b"]]


def _module_counts(package: str) -> dict[str, int]:
    """Each folder of `package` -> how many modules it holds (`__init__.py` not counted)."""
    folders = {path.parent for module, path in MODULES.items() if module.startswith(package)}
    return {str(folder.relative_to(REPO)): sum(1 for path in folder.glob("*.py") if path.name != "__init__.py")
            for folder in folders}


def _crowded(counts: dict[str, int]) -> dict[str, int]:
    return {folder: count for folder, count in counts.items() if count > MOST_MODULES}


@pytest.mark.parametrize("top, folders", [("exporter", 10), ("server", 6)])
def test_no_folder_holds_more_than_twelve_modules(top: str, folders: int):
    counts = _module_counts(f"onnxlens.{top}")
    assert len(counts) > folders, f"{top}/'s folders are not where the layout says"
    assert not (crowded := _crowded(counts)), f"folders over {MOST_MODULES} modules: {crowded}"


def test_the_folder_check_finds_a_crowded_folder():
    assert _crowded({"exporter": 13, "exporter/verify": 12, "exporter/wire": 3}) == {"exporter": 13}


def _unmapped(modules: dict[str, Path], code_map: str) -> list[str]:
    """The modules of `modules` (and their packages) that `code_map` (ARCHITECTURE.md's section
    for their top folder) never names: by the file's name (`name.py`) or the package's (`name/`),
    in an entry of its listings or in its prose."""
    entries = set(re.findall(r"\w+\.py|\w+/", code_map))
    missing = set()
    for path in modules.values():
        if path.name == "__main__.py":
            continue
        if path.name == "__init__.py":
            if path.parent.name + "/" not in entries:
                missing.add(str(path.parent.relative_to(REPO)) + "/")
        elif path.name not in entries:
            missing.add(str(path.relative_to(REPO)))
    return sorted(missing)


def _code_map_section(top: str) -> str:
    """ARCHITECTURE.md's code-map section of the folder `top` (its `### \\`top/\\`` heading to the next)."""
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    start = text.index(f"### `{top}/`")
    end = text.find("\n### ", start + 1)
    return text[start:end if end != -1 else len(text)]


@pytest.mark.parametrize("top", ["exporter", "server"])
def test_architecture_code_map_names_every_module(top: str):
    modules = {name: path for name, path in MODULES.items() if name.startswith(f"onnxlens.{top}")}
    assert len(modules) > 30
    assert not (missing := _unmapped(modules, _code_map_section(top))), \
        f"modules ARCHITECTURE.md's code map does not name: {missing}"


def test_the_code_map_check_finds_an_unnamed_module():
    modules = {"a": REPO / "server/cli.py", "b": REPO / "server/fixits/__init__.py", "c": REPO / "server/new.py"}
    assert _unmapped(modules, "    cli.py   the CLI\n    fixits/   quick fixes\n") == ["server/new.py"]
    assert _unmapped(modules, "    cli.py   the CLI\n") == ["server/fixits/", "server/new.py"]
