"""The one rule for whose code a file is: the user's, a library's, or torch's own.

Every finding kind (unsupported ops, capture failures, errors that name a node, verification
mismatches, crashes and timeouts, import/setup errors) and the hover/lens lines decide with
`classify`:

* `Origin.INTERNAL`: torch and the ONNX stack (torch, functorch, onnx, onnxscript, onnx_ir,
  onnxruntime, installed in site-packages/dist-packages), Python's standard library, onnxlens
  itself, and code without a file (`<string>`, `<frozen ...>`, `<eval_with_key>`). torch's
  tracing machinery (dynamo, fx, export, nn.Module's call wrapper) is part of it. Noise in a
  user's call chain: never shown. Except the model's own code (`model_code`): a target may
  export a model that ships inside torch (an ExportDB example, `nn.AdaptiveLogSoftmaxWithLoss`),
  and its lines are then the only lines that explain a failure. They count as library code.
* `Origin.USER`: a file of the workspace (`Workspace.contains`: under the root, not in a
  directory that holds none of the user's code (directories.py: vendored packages,
  environments, VCS data, caches), not in the output directory). The primary location
  of a finding is always the innermost such frame when there is one.
* `Origin.LIBRARY`: everything else, which is third-party code such as transformers (or a file
  outside the workspace): part of the user-relevant chain, shown as related locations.

The model's own code is the file of the target model's class and the files of its module
tree's classes that come from the same package (the class's directory, or below): wherever that
is installed. Which torch modules the model merely uses (an `nn.Linear` in a user's model)
stays torch's.

Without a workspace (verification called without a root), the user's files are those outside
installed packages and Python's own.

Torch-free: plain paths.
"""

from __future__ import annotations

import enum
import functools
import inspect
import os
import sys
import sysconfig
from typing import Iterable

from onnxlens.exporter.locations.directories import under_not_users
from onnxlens.exporter.types import TargetSpec

# Installed packages whose frames are torch's side of the export, not the model's.
INTERNAL_PACKAGES = frozenset({"torch", "functorch", "onnx", "onnxscript", "onnx_ir", "onnxruntime"})

# torch's own tracing machinery: dynamo, fx, export and nn.Module's call wrapper. Internal like
# the rest of torch; a mismatch drops them before it pairs `forward` frames with modules (see
# nodes.py), where torch's own modules' forward frames (nn.Linear's) still count.
_MACHINERY = tuple(os.sep + os.path.join(*parts) for parts in (
    ("torch", "_dynamo", ""), ("torch", "fx", ""), ("torch", "export", ""), ("torch", "_export", ""),
    ("torch", "_higher_order_ops", ""), ("torch", "utils", "_contextlib.py"),
    ("torch", "nn", "modules", "module.py"),
))

# onnxlens's own source (exporter/ and its sibling server/).
_EXPORTER_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
_OWN_DIRS = tuple(directory.replace("\\", "/") + "/" for directory in (
    _EXPORTER_DIR, os.path.join(os.path.dirname(_EXPORTER_DIR), "server")))


class Origin(enum.Enum):
    USER = "user"
    LIBRARY = "library"
    INTERNAL = "internal"


class Workspace:
    """Decides whether a file is the user's: under the root, not in a directory that holds none
    of the user's code (directories.py), not our output."""

    def __init__(self, root: str, output_dir: str | None = None, model_files: Iterable[str] = ()) -> None:
        self.root = os.path.realpath(root)
        self.output_dir = os.path.realpath(output_dir) if output_dir else None
        self.model_files = frozenset(os.path.realpath(file) for file in model_files)  # see `model_code`
        self._cache: dict[str, bool] = {}
        self._model_cache: dict[str, bool] = {}
        # Resolving symlinks costs a few syscalls a path; thousands of loaded modules are checked
        # per job, and nearly all of them are textually outside the root.
        self._prefixes = tuple({os.path.abspath(root).rstrip(os.sep) + os.sep, self.root.rstrip(os.sep) + os.sep})

    @classmethod
    def of(cls, spec: TargetSpec) -> Workspace:
        """The workspace of a target: its root, minus the directory its .onnx goes to."""
        return cls(spec.root, os.path.dirname(os.path.abspath(spec.output)))

    def contains(self, path: str | None) -> bool:
        if not path or path.startswith("<"):
            return False
        known = self._cache.get(path)
        if known is not None:
            return known
        if not os.path.abspath(path).startswith(self._prefixes):
            self._cache[path] = False
            return False
        real = os.path.realpath(path)
        inside = _is_under(real, self.root) and not (
            self.output_dir and _is_under(real, self.output_dir)
        )
        if inside:
            inside = not under_not_users(self.root, real)
        self._cache[path] = inside
        return inside


    def is_model_code(self, path: str) -> bool:
        """One of the files of the model's own code (`model_code`)."""
        if not self.model_files:
            return False
        known = self._model_cache.get(path)
        if known is None:
            known = self._model_cache[path] = os.path.realpath(path) in self.model_files
        return known


def model_code(classes: Iterable[type]) -> frozenset[str]:
    """The files of the model's own code, from its module tree's classes (the model's class
    first): the model class's file, and the files of the other classes from its package (the
    directory of that file, or below). Classes without a source file add nothing."""
    files = [_source_file(cls) for cls in classes]
    if not files or files[0] is None:
        return frozenset()
    package = os.path.dirname(files[0])
    return frozenset(file for file in files if file is not None and _is_under(file, package))


def _source_file(cls: type) -> str | None:
    try:
        file = inspect.getsourcefile(cls)
    except (TypeError, OSError):
        return None
    return os.path.realpath(file) if file else None


def classify(path: str | None, workspace: Workspace | None) -> Origin:
    """Whose code `path` is (see the module docstring)."""
    if is_internal(path) and not (workspace is not None and path and workspace.is_model_code(path)):
        return Origin.INTERNAL
    if workspace is None:
        return Origin.LIBRARY if _is_installed(path) else Origin.USER
    return Origin.USER if workspace.contains(path) else Origin.LIBRARY


def is_user_code(path: str | None, workspace: Workspace | None) -> bool:
    return classify(path, workspace) is Origin.USER


@functools.lru_cache(maxsize=4096)
def is_internal(path: str | None) -> bool:
    """torch, the ONNX stack, Python itself, onnxlens, or code without a file."""
    if not path or path.startswith("<"):
        return True
    normalized = path.replace("\\", "/")
    if normalized.startswith(_OWN_DIRS) or os.path.realpath(path).replace("\\", "/").startswith(_OWN_DIRS):
        return True
    if not os.path.isabs(path) and normalized.split("/", 1)[0] in INTERNAL_PACKAGES:
        return True  # torch names some frames relative to its own package ("torch/fx/passes/runtime_assert.py")
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in normalized:
            return normalized.split(marker, 1)[1].split("/", 1)[0] in INTERNAL_PACKAGES
    return "/lib/python3" in normalized or os.path.realpath(path).startswith(_stdlib_dirs())


def is_tracing_machinery(path: str, workspace: Workspace | None = None) -> bool:
    """A frame of torch's tracing machinery (dynamo, fx, export, nn.Module.__call__), not the
    model's own code."""
    return classify(path, workspace) is Origin.INTERNAL and any(part in path for part in _MACHINERY)


def _is_under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


@functools.lru_cache(maxsize=1)
def _stdlib_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple(sorted({os.path.realpath(paths[key]) + os.sep for key in ("stdlib", "platstdlib") if paths.get(key)}))


@functools.lru_cache(maxsize=1)
def _installed_dirs() -> tuple[str, ...]:
    """Where installed packages and the standard library live, for this interpreter."""
    paths = sysconfig.get_paths()
    dirs = {os.path.realpath(paths[key]) + os.sep
            for key in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(key)}
    dirs |= {os.path.realpath(os.path.join(prefix, "lib")) + os.sep
             for prefix in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    return tuple(sorted(dirs))


def _is_installed(path: str) -> bool:
    real = os.path.realpath(path)
    if f"{os.sep}site-packages{os.sep}" in real or f"{os.sep}dist-packages{os.sep}" in real:
        return True
    return real.startswith(_installed_dirs())
