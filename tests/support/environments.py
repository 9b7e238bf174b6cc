"""Real Python environments that change under onnxlens, as a user's does when they `pip install`:
a virtual environment of its own, and a tiny real package built into wheels and installed,
upgraded, reinstalled with pip. Offline: the wheels are built here from source (`pip wheel
--no-index --no-build-isolation`, setuptools from this interpreter).

The environment is made with `python -m venv` and sees this interpreter's packages after its own
(torch, onnxlens: a .pth file adds this interpreter's site directories, as
`--system-site-packages` adds the base interpreter's), so a package pip installs into it is its
own, and onnxlens run with its interpreter exports with this torch.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.support.workspace import write

PIP_ENV = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}

# The package the models import: `scale(x)` multiplies by the factor of the version installed.
PACKAGE = "tinydep"
PACKAGE_SOURCE = "def scale(x):\n    return x * {factor}\n"
PACKAGE_PROJECT = '''[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "{version}"
'''


@dataclass(frozen=True)
class Environment:
    root: Path
    python: str  # its interpreter
    site_packages: Path  # where pip installs into it


def make_environment(root: Path) -> Environment:
    """A virtual environment at `root` that sees this interpreter's packages after its own."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, capture_output=True)
    python = str(root / "bin" / "python")
    site_packages = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                        check=True, capture_output=True, text=True).stdout.strip())
    ours = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    lines = "".join(f"import site; site.addsitedir({directory!r})\n" for directory in ours if os.path.isdir(directory))
    write(site_packages / "zz-onnxlens-test-base.pth", lines)
    return Environment(root, python, site_packages)


def build_wheel(work: Path, version: str, factor: int) -> Path:
    """A wheel of PACKAGE `version` whose `scale` multiplies by `factor`, built from source in `work`."""
    source = work / f"{PACKAGE}-{version}-{factor}"
    write(source / "pyproject.toml", PACKAGE_PROJECT.format(name=PACKAGE, version=version))
    write(source / PACKAGE / "__init__.py", PACKAGE_SOURCE.format(factor=factor))
    wheels = source / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-index", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(wheels), str(source)], check=True, capture_output=True, env=PIP_ENV)
    [wheel] = wheels.glob("*.whl")
    return wheel


def install(environment: Environment, wheel: Path, *, reinstall: bool = False) -> None:
    """`pip install WHEEL` with the environment's interpreter (pip itself is this interpreter's,
    seen through the .pth): into the environment. `reinstall`: over the same version."""
    subprocess.run([environment.python, "-m", "pip", "install", "--no-index", "--no-deps", "-q",
                    *(["--force-reinstall"] if reinstall else []), str(wheel)],
                   check=True, capture_output=True, env=PIP_ENV)


def installed_version(environment: Environment) -> str | None:
    """PACKAGE's version as the environment's interpreter sees it (None: not installed)."""
    script = (f"import importlib.metadata as m, json\ntry: print(json.dumps(m.version({PACKAGE!r})))\n"
              "except m.PackageNotFoundError: print('null')")
    return json.loads(subprocess.run([environment.python, "-c", script], check=True, capture_output=True,
                                     text=True).stdout)
