"""Loading a target's code: fresh imports of workspace files, the factories, the closure.

Used by the load stage (stages/load.py). A reference is `FILE.py:CALLABLE` (relative to the workspace root) or `package.module:CALLABLE`
(importable with the root on sys.path). Files are imported under their dotted name relative to
the root, as any other workspace module would import them: a module known under two names is two
modules, and strict capture (dynamo) re-imports modules by name.

The closure is every workspace file imported while the target ran: it tells the server which
saves must re-export this target. Workspace modules already in sys.modules are dropped first, so
an in-process pipeline serving many runs sees the files as they are now.

Import and setup errors become findings here (`LoadError`), placed by exporter/locations like
every other finding: the syntax error itself, or the innermost line of the user's code that
raised, with the import chain related. A reference that cannot be resolved (a module that is not
there, a callable the module does not define: "did you mean" among its callables) has no line
of code to blame: its finding names the config key (`Finding.reference`), and is shown on that
key's value in the config.

Each factory's `return` that ran is recorded (`Loader.returned`): what an inputs or
dynamic-shapes factory returned may not fit the model (input_mistakes.py), and the line to
blame is the one that returned it.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import importlib
import importlib.machinery
import importlib.util
import inspect
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from onnxlens.exporter import references
from onnxlens.exporter.locations import (Workspace, from_traceback, is_user_code, locate, node_span, source_line,
                                         statement_at)
from onnxlens.exporter.types import Finding, Location


class LoadError(Exception):
    """The load stage failed; `finding` says where and why."""

    def __init__(self, finding: Finding, cause: BaseException | None = None) -> None:
        super().__init__(finding.message)
        self.finding = finding
        self.cause = cause


@dataclass
class LoadedTarget:
    model: Any
    args: tuple
    kwargs: dict
    dynamic_shapes: Any = None
    custom_translations: dict | None = None


# Modules the zygote holds when it forks: torch, the ONNX stack, preloaded libraries, never user
# code (the zygote runs none). A child's scans for workspace modules skip them. Kept by identity:
# a module of the same name the job imported anew is still looked at.
_zygote_modules: dict[str, int] = {}
# The last module the zygote held (name, module; a strong reference: its id cannot be reused).
# An import appends to sys.modules, and a dict keeps insertion order, so everything a child
# imported comes after it: a scan walks back from the end and stops there, in <0.1 ms. A walk
# over all ~2,900 modules took 11-13 ms the first time in a forked child (writing each entry's
# refcount copies the zygote's pages), ~0.6 ms after that; a job scans four times, and the
# spare's rehearsal (worker/rehearsal.py) too.
_zygote_last: tuple[str, Any] | None = None


def remember_zygote_modules() -> None:
    """In the zygote, before it forks: everything loaded now is library code."""
    global _zygote_last
    held = list(sys.modules.items())
    _zygote_modules.clear()
    _zygote_modules.update((name, id(module)) for name, module in held)
    _zygote_last = held[-1] if held else None


def modules_not_from_the_zygote() -> list[tuple[str, Any]]:
    """(name, module) of the loaded modules the zygote did not hold when it forked: the only
    ones that can be the user's. (A zygote module's entry replaced in place, by assignment to
    sys.modules under its name, keeps its place before the last one: not seen. An import puts a
    module at the end.)"""
    try:
        loaded = _loaded_after_the_zygote()
    except RuntimeError:  # another thread imported while the walk went on: the whole dict at once
        loaded = list(sys.modules.items())
    return [(name, module) for name, module in loaded if _zygote_modules.get(name) != id(module)]


def _loaded_after_the_zygote() -> list[tuple[str, Any]]:
    """sys.modules' entries after the zygote's last module, in order (all of them in a process
    that is no zygote's child, or when that module's entry is gone)."""
    tail = []
    for name in reversed(sys.modules):  # dict lookups only: nothing runs here that could import
        module = sys.modules.get(name)
        if _zygote_last is not None and name == _zygote_last[0] and module is _zygote_last[1]:
            break
        tail.append((name, module))
    tail.reverse()
    return tail


def workspace_module_files(workspace: Workspace) -> dict[str, str]:
    """Module name -> file, for the loaded modules that are workspace files."""
    found = {}
    for name, module in modules_not_from_the_zygote():
        if name == "__main__" or name.startswith("onnxlens"):
            continue
        path = getattr(module, "__file__", None)
        if path and workspace.contains(path):
            found[name] = os.path.realpath(path)
    return found


# Roots this process has loaded user code from. In-process pipelines (tests, benchmarks) serve
# several workspaces, and two of them may both have a `models` package: the previous one's must
# not answer the next one's imports. (Forked children load one workspace and exit.)
_loaded_roots: dict[str, Workspace] = {}


def forget_workspace_modules(workspace: Workspace) -> None:
    """Drop workspace modules (of this and earlier workspaces) so imports read the files as they
    are now, and earlier workspaces' roots from sys.path (a regular package there would win over
    this workspace's namespace package of the same name)."""
    _loaded_roots[workspace.root] = workspace
    for known in _loaded_roots.values():
        for name in [*workspace_module_files(known), *_workspace_namespace_packages(known)]:
            sys.modules.pop(name, None)
    earlier = {os.path.realpath(root) for root in _loaded_roots if root != workspace.root}
    sys.path[:] = [entry for entry in sys.path if not entry or os.path.realpath(entry) not in earlier]
    _install_fresh_finder(workspace)
    importlib.invalidate_caches()


def unload_workspace(workspace: Workspace) -> None:
    """Undo what loading from `workspace` left in this process: its modules, its root on
    sys.path, its import hook (a spare's rehearsal, worker/rehearsal.py: its job is another
    workspace's, and must find the process as the zygote forked it)."""
    # Every module from its files, our own names included (workspace_module_files skips those).
    files = [name for name, module in modules_not_from_the_zygote() if workspace.contains(getattr(module, "__file__", None))]
    for name in [*files, *_workspace_namespace_packages(workspace)]:
        sys.modules.pop(name, None)
    _loaded_roots.pop(workspace.root, None)
    root = os.path.realpath(workspace.root)
    sys.path[:] = [entry for entry in sys.path if not entry or os.path.realpath(entry) != root]
    sys.path_hooks[:] = [h for h in sys.path_hooks if getattr(h, "onnxlens_root", None) != workspace.root]
    for path in list(sys.path_importer_cache):
        if path and (os.path.realpath(path) + os.sep).startswith(root + os.sep):
            del sys.path_importer_cache[path]
    importlib.invalidate_caches()


def _workspace_namespace_packages(workspace: Workspace) -> list[str]:
    """Loaded namespace packages (directories without an __init__.py: no file of their own)
    whose directories are all the workspace's: a later workspace's package of that name must be
    looked up afresh."""
    found = []
    for name, module in modules_not_from_the_zygote():
        spec = getattr(module, "__spec__", None)
        if not isinstance(spec, importlib.machinery.ModuleSpec) or spec.origin not in (None, "namespace"):
            continue
        directories = list(spec.submodule_search_locations or [])
        if directories and all(workspace.contains(os.path.join(d, "__init__.py")) for d in directories):
            found.append(name)
    return found


class FreshSourceLoader(importlib.machinery.SourceFileLoader):
    """Compiles workspace files from source, never from __pycache__.

    A .pyc is trusted when the source's mtime (in whole seconds) and size match: an edit that
    keeps the size, saved within a second of the last import (`relu` -> `tanh`), would run the
    old code. Workspace files are few and small; compiling them costs milliseconds.
    """

    def get_code(self, fullname):
        return self.source_to_code(self.get_data(self.path), self.path)


def _install_fresh_finder(workspace: Workspace) -> None:
    """Route imports of workspace directories through FreshSourceLoader (first path hook)."""
    loaders = [(FreshSourceLoader, importlib.machinery.SOURCE_SUFFIXES),
               (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
               (importlib.machinery.SourcelessFileLoader, importlib.machinery.BYTECODE_SUFFIXES)]

    def hook(path: str):
        if not os.path.isdir(path) or not workspace.contains(os.path.join(path, "__init__.py")):
            raise ImportError("not a workspace directory")  # the next hook handles it
        return importlib.machinery.FileFinder(path, *loaders)

    hook.onnxlens_root = workspace.root
    sys.path_hooks[:] = [h for h in sys.path_hooks if getattr(h, "onnxlens_root", None) is None]
    sys.path_hooks.insert(0, hook)
    for path in list(sys.path_importer_cache):  # (hundreds: the string test first, then the disk)
        if path and workspace.contains(os.path.join(path, "__init__.py")) and os.path.isdir(path):
            del sys.path_importer_cache[path]


class Loader:
    def __init__(self, root: str, workspace: Workspace) -> None:
        self.root = os.path.realpath(root)
        self.workspace = workspace
        # Files seen in failing imports (a module that fails is removed from sys.modules).
        self.failed_files: list[str] = []
        # What each factory called returned ("inputs" -> the statement that returned it).
        self.returned: dict[str, Location] = {}

    def closure(self) -> list[str]:
        files = set(workspace_module_files(self.workspace).values()) | set(self.failed_files)
        return sorted(files)

    # -- references ---------------------------------------------------------------------------

    def resolve(self, ref: str, what: str) -> Any:
        """Import the module of `ref` and return the attribute. Raises LoadError (code import);
        a finding without a line of code names the config key `what` (`Finding.reference`)."""
        try:
            return self._resolve(ref, what)
        except LoadError as error:
            if error.finding.location is None:
                error.finding.reference = what
            raise

    def _resolve(self, ref: str, what: str) -> Any:
        reference = references.parse(ref)
        if reference is None:
            raise LoadError(Finding(code="import", stage="load",
                                    message=f"bad {what} reference {ref!r}: expected FILE.py:NAME or package.module:NAME"))
        module = self._import(reference, what)
        value = module
        for depth, part in enumerate(reference.attribute.split(".")):
            try:
                value = getattr(value, part)
            except AttributeError:
                owner = reference.where + "".join(f".{p}" for p in reference.attribute.split(".")[:depth])
                raise LoadError(Finding(code="import", stage="load",
                                        message=f"the {what} reference {ref!r}: {owner} has no `{part}`"
                                                f"{_did_you_mean(part, value)}")) from None
        return value

    def _import(self, reference: references.Reference, what: str):
        if reference.outside(self.root) is not None:
            raise LoadError(Finding(code="import", stage="load",
                                    message=reference.outside_message(f"the {what} reference", self.root)))
        if self.root not in sys.path:
            sys.path.insert(0, self.root)
        try:
            if reference.is_file:
                return self._import_file(reference.candidate_files(self.root)[0], what)
            return importlib.import_module(reference.where)
        except LoadError:
            raise
        except SyntaxError as error:
            raise LoadError(self._syntax_finding(error), error) from None
        except BaseException as error:  # noqa: BLE001 - user code may raise anything, even SystemExit
            if isinstance(error, KeyboardInterrupt):
                raise
            # On the line that raised, the same words for every target importing it (the server
            # shows a problem several targets share once); without one, which module.
            raise LoadError(self._raised_finding(error, "import", f"importing {reference.where} failed",
                                                 at_line="import failed"), error) from None

    def _import_file(self, path: Path, what: str):
        path = path.resolve()
        if not path.is_file():
            raise LoadError(Finding(code="import", stage="load",
                                    message=f"the {what} file {path} does not exist"))
        relative = path.relative_to(self.root).with_suffix("") if path.is_relative_to(self.root) else Path(path.stem)
        name = ".".join(relative.parts)
        if all(part.isidentifier() for part in relative.parts):
            existing = sys.modules.get(name)
            if existing is None or _same_file(existing, path):
                module = importlib.import_module(name)
                if _same_file(module, path):
                    return module
        # Not importable under its dotted name (dashes in names, shadowed by an installed
        # package): load it from the file, registered under that name so dynamo can find it.
        spec = importlib.util.spec_from_file_location(name, path, loader=FreshSourceLoader(name, str(path)))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return module

    # -- factories ----------------------------------------------------------------------------

    def call_factory(self, factory: Any, what: str) -> Any:
        """`factory()`, its `return` that ran recorded in `returned[what]`."""
        try:
            with _return_recorded(factory) as returned:
                value = factory()
        except BaseException as error:  # noqa: BLE001 - user code may raise anything
            if isinstance(error, KeyboardInterrupt):
                raise
            raise LoadError(self._raised_finding(error, "setup", f"the {what} factory raised"), error) from None
        if returned:
            self.returned[what] = statement_location(*returned[-1])
        return value

    # -- findings -----------------------------------------------------------------------------

    def _syntax_finding(self, error: SyntaxError) -> Finding:
        file = os.path.realpath(error.filename) if error.filename else None
        if file:
            self.failed_files.append(file)
        line = error.lineno or 1
        column = error.offset or 1
        end_column = error.end_offset if error.end_offset and (error.end_lineno in (None, line)) else None
        if end_column is not None and end_column <= column:
            end_column = column + 1
        location = Location(file=file, line=line, column=column, end_line=line,
                            end_column=end_column or column + 1) if file else None
        # The frames that imported the broken file (the import chain) are related locations.
        related = locate(from_traceback(error), self.workspace, note="imported from here").related
        return Finding(code="import", stage="load", location=location, related=related,
                       source_line=source_line(file, line) if file else None,
                       message=f"{type(error).__name__}: {error.msg}")

    def _raised_finding(self, error: BaseException, code: str, context: str, at_line: str | None = None) -> Finding:
        """The finding of user code that raised: on its innermost line, `at_line` (else `context`)
        leading the message there; `context` without a line."""
        frames = from_traceback(error)
        for frame in frames:
            if is_user_code(frame.file, self.workspace):
                self.failed_files.append(os.path.realpath(frame.file))
        place = locate(frames, self.workspace)
        lead = at_line if at_line is not None and place.location is not None else context
        return Finding(code=code, stage="load", location=place.location, related=place.related,
                       source_line=place.source_line,
                       message=f"{lead}: {type(error).__name__}: {_first_lines(str(error))}")


def _did_you_mean(name: str, owner: Any) -> str:
    """`; did you mean `Net`?` among the owner's public callables (the module's functions and
    classes, imported ones too), else the ones it defines."""
    try:
        names = {key: item for key, item in vars(owner).items() if not key.startswith("_") and callable(item)}
    except TypeError:  # no __dict__
        return ""
    close = difflib.get_close_matches(name, list(names), n=1)
    if close:
        return f"; did you mean `{close[0]}`?"
    own = sorted(key for key, item in names.items() if getattr(item, "__module__", None) == getattr(owner, "__name__", ""))
    if not own:
        return ""
    shown = ", ".join(f"`{key}`" for key in own[:12])
    return f" (it defines {shown}{', …' if len(own) > 12 else ''})"


@contextlib.contextmanager
def _return_recorded(factory: Any) -> Iterator[list[tuple[str, int]]]:
    """While active, (file, line) of each `return` the factory's own code runs (a profile hook:
    it only observes; factories of inputs are small). Nothing for a factory without Python
    code of its own (a class)."""
    function = inspect.unwrap(factory.func if isinstance(factory, functools.partial) else factory)
    code = getattr(function, "__code__", None)
    returned: list[tuple[str, int]] = []
    if code is None:
        yield returned
        return

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "return" and frame.f_code is code:
            returned.append((code.co_filename, frame.f_lineno))

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield returned
    finally:
        sys.setprofile(previous)


def statement_location(file: str, line: int) -> Location:
    """The statement starting on `line` (a `return` with its value over several lines, whole),
    else the line's code."""
    file = os.path.realpath(file)
    statement = statement_at(file, line)
    if statement is None:
        text = source_line(file, line) or ""
        return Location(file=file, line=line, column=len(text) - len(text.lstrip()) + 1, end_line=line,
                        end_column=len(text.rstrip()) + 1)
    span = node_span(file, statement)
    return Location(file=file, line=line, column=span.column, end_line=span.end_line, end_column=span.end_column)


def split_inputs(value: Any) -> tuple[tuple, dict]:
    """args tuple, kwargs dict, or (args, kwargs) -> (args, kwargs)."""
    if isinstance(value, dict):
        return (), dict(value)
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], (tuple, list)) and isinstance(value[1], dict):
        return tuple(value[0]), dict(value[1])
    if isinstance(value, (tuple, list)):
        return tuple(value), {}
    return (value,), {}


def definition_location(obj: Any) -> Location | None:
    """Where a callable (function or class) is defined, pointing at its name."""
    try:
        target = inspect.unwrap(obj)
        file = inspect.getsourcefile(target)
        _, line = inspect.getsourcelines(target)
    except (TypeError, OSError):
        return None
    if not file:
        return None
    text = source_line(file, line) or ""
    name = getattr(target, "__name__", "")
    # Decorators come first in getsourcelines: move to the def/class line.
    if text.lstrip().startswith("@"):
        for offset in range(1, 50):
            candidate = source_line(file, line + offset)
            if candidate is None:
                break
            if candidate.lstrip().startswith(("def ", "class ", "async def ")):
                line, text = line + offset, candidate
                break
    column = text.find(name) + 1 if name and name in text else len(text) - len(text.lstrip()) + 1
    end_column = column + len(name) if name and name in text else len(text.rstrip()) + 1
    return Location(file=os.path.realpath(file), line=line, column=column, end_line=line, end_column=end_column)


def _same_file(module: Any, path: Path) -> bool:
    file = getattr(module, "__file__", None)
    return bool(file) and os.path.realpath(file) == str(path)


def _first_lines(text: str, limit: int = 1500) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + " …"
