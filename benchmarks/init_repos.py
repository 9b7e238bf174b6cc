"""`onnxlens init` on real model repositories, as a new user runs it: init, then check.

    PYTHON -m benchmarks.init_repos [--only NAME,...] [--jobs 2]
        (from the repository root; writes benchmarks/INIT.md and benchmarks/init_repos.json)

PYTHON is an environment with onnxlens and the repositories' packages installed; the table
says which torch it has. Some of these packages import torchvision when imported
(segment-anything's package, vit-pytorch's, timm, open-clip), which does not load beside the
CPU build of torch the project's .venv has; the figures were made in an environment with
torch 2.14.1 and torchvision 0.29.1 (README "Supported torch versions": 2.14 is supported):

    python3 -m venv .venvs/init-repos
    .venvs/init-repos/bin/pip install torch==2.14.1 torchvision==0.29.1
    .venvs/init-repos/bin/pip install -c <constraints.txt without its torch line> -e . \\
        openai-whisper segment-anything vit-pytorch x-transformers open-clip-torch timm

Each repository is laid out in a fresh temporary directory, never in this repository:

* a package on PyPI: its installed top-level packages copied (the code users `pip install`);
* nanoGPT, minGPT (not on PyPI): a clone of the snapshot the search tool's `fetch` brought
  (/work/.mirror/karpathy+nanoGPT/repo ...), at the commit the table names.

Then, timed on this process's clock: `onnxlens init DIR`, `onnxlens check DIR --format json
--jobs N` (verification as the config default: on), and, for the first target in config order
that exported, `onnxlens check DIR --target T --no-cache` alone, cold (a new worker process).
Time to first export = init + that cold check. A target is:

* exported: status ok, with no hand edit;
* asks: its `build_<name>()` raised the NotImplementedError init wrote, naming what to give;
* needs a package: its module imports one the environment lacks (ModuleNotFoundError);
* failed: anything else, counted by where its example inputs came from (the repository's call
  of the model, inferred by init, guessed and marked TODO); the first finding's code and
  message are recorded for each.
"""

from __future__ import annotations

import argparse
import ast
import importlib.metadata
import json
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
MIRROR = Path("/work/.mirror")
CLI = [sys.executable, "-m", "onnxlens.server.cli"]
CHECK_TIMEOUT = 5400


@dataclass(frozen=True)
class Repository:
    name: str
    distribution: str | None = None  # on PyPI: the installed distribution whose packages are copied
    mirror: str | None = None  # else: owner+name under /work/.mirror


REPOSITORIES = [
    Repository("nanoGPT", mirror="karpathy+nanoGPT"),
    Repository("minGPT", mirror="karpathy+minGPT"),
    Repository("whisper", distribution="openai-whisper"),
    Repository("segment-anything", distribution="segment-anything"),
    Repository("x-transformers", distribution="x-transformers"),
    Repository("open-clip", distribution="open-clip-torch"),
    Repository("vit-pytorch", distribution="vit-pytorch"),
]


def lay_out(repository: Repository, directory: Path) -> str:
    """The repository's code in `directory`; returns what it is (version or commit)."""
    if repository.mirror is not None:
        git_dir = MIRROR / repository.mirror / "repo"
        subprocess.run(["git", "clone", "-q", str(git_dir), str(directory)], check=True)
        commit = subprocess.run(["git", "-C", str(directory), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, check=True).stdout.strip()
        shutil.rmtree(directory / ".git")
        return f"github {repository.mirror.replace('+', '/')} @ {commit}"
    distribution = importlib.metadata.distribution(repository.distribution)
    packages = sorted({Path(str(f)).parts[0] for f in distribution.files or []
                       if str(f).endswith(".py") and len(Path(str(f)).parts) > 1
                       and not Path(str(f)).parts[0].endswith((".dist-info", ".data"))})
    directory.mkdir(parents=True)
    for package in packages:
        shutil.copytree(Path(distribution.locate_file(package)), directory / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return f"PyPI {repository.distribution} {distribution.version}"


def run(*args: str, cwd: Path, timeout: float = CHECK_TIMEOUT) -> tuple[subprocess.CompletedProcess, float]:
    started = time.perf_counter()
    process = subprocess.run([*CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return process, time.perf_counter() - started


def inputs_kind(workspace: Path, reference: str) -> str:
    """Where the example inputs init wrote come from: "repository" (a call of the model in the
    repository, its docstring says so), "guessed" (a guess init marked `# TODO`) or "inferred"
    (from the constructor, the config or an nn.Embedding, with nothing marked)."""
    file, _, name = reference.partition(":")
    path = workspace / file
    text = path.read_text() if path.is_file() else ""
    function = next((n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    source = ast.get_source_segment(text, function) or "" if function is not None else ""
    return "repository" if "calls it" in source else "guessed" if "TODO" in source else "inferred"


def classify(target: dict) -> tuple[str, str]:
    if target["status"] == "ok":
        return "exported", ""
    diagnostics = target["diagnostics"]
    first = diagnostics[0] if diagnostics else {"code": target["status"], "message": ""}
    message = first.get("message", "")
    detail = f"{first.get('code')}: {message.splitlines()[0][:200] if message else ''}"
    if "NotImplementedError" in message and "build_" in message:
        return "asks", message.splitlines()[0][:200]
    if first.get("code") == "import" and "ModuleNotFoundError" in message:
        return "missing package", detail
    return "failed", detail


def measure(repository: Repository, jobs: int) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"init-{repository.name}-") as temporary:
        workspace = Path(temporary) / repository.name
        source = lay_out(repository, workspace)
        init, init_seconds = run("init", str(workspace), cwd=workspace)
        if init.returncode != 0:
            return {"name": repository.name, "source": source, "error": init.stderr.strip()}
        config = workspace / "pyproject.toml"
        configured = tomllib.loads(config.read_text())["tool"]["onnxlens"]["target"] \
            if "onnxlens" in config.read_text() else []
        names = [t["name"] for t in configured]
        inputs = {t["name"]: t["inputs"] for t in configured}
        result = {"name": repository.name, "source": source, "init_seconds": round(init_seconds, 2), "targets": []}
        if not names:
            return result
        check, check_seconds = run("check", str(workspace), "--format", "json", "--jobs", str(jobs), cwd=workspace)
        data = json.loads(check.stdout)
        result["check_seconds"] = round(check_seconds, 1)
        for target in data["targets"]:
            outcome, detail = classify(target)
            result["targets"].append({"name": target["name"], "outcome": outcome, "detail": detail,
                                      "seconds": target["seconds"],
                                      "inputs": inputs_kind(workspace, inputs[target["name"]])})
        exported = [t["name"] for t in result["targets"] if t["outcome"] == "exported"]
        if exported:
            first, seconds = run("check", str(workspace), "--target", exported[0], "--no-cache", "--format", "json",
                                 cwd=workspace)
            ok = json.loads(first.stdout)["targets"][0]["status"] == "ok"
            result["first_export"] = {"target": exported[0], "check_seconds": round(seconds, 1), "ok": ok,
                                      "seconds": round(init_seconds + seconds, 1)}
        return result


COLUMNS = [("exported", None), ("asks", None), ("missing package", None), ("failed", "repository"),
           ("failed", "inferred"), ("failed", "guessed")]


def table(results: list[dict]) -> str:
    lines = ["| repository | code | targets found | exported, no hand edit | asks for values | needs a package "
             "| failed, inputs from the repository's call | failed, inputs inferred | failed, inputs guessed (TODO) "
             "| time to first export (init + cold check of it) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['name']} | {r['source']} | init failed: {r['error']} |" + " |" * 7)
            continue
        counts = [sum(t["outcome"] == outcome and (kind is None or t["inputs"] == kind) for t in r["targets"])
                  for outcome, kind in COLUMNS]
        first = r.get("first_export")
        timing = f"{first['seconds']} s ({first['target']}: {r['init_seconds']} + {first['check_seconds']} s)" \
            if first else "none exported"
        lines.append(f"| {r['name']} | {r['source']} | {len(r['targets'])} | " + " | ".join(map(str, counts))
                     + f" | {timing} |")
    return "\n".join(lines)


def details(results: list[dict]) -> str:
    parts = []
    for r in results:
        if "error" in r:
            continue
        parts.append(f"### {r['name']}\n\ninit {r['init_seconds']} s; check of all targets "
                     f"{r.get('check_seconds', 0)} s\n")
        parts.append("| target | outcome | inputs | export s | first finding |\n|---|---|---|---|---|")
        for t in r["targets"]:
            detail = t["detail"].replace("|", "\\|").replace("\n", " ")
            parts.append(f"| {t['name']} | {t['outcome']} | {t['inputs']} | {t['seconds']} | {detail} |")
        parts.append("")
    return "\n".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="comma-separated repository names")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    chosen = [r for r in REPOSITORIES if not args.only or r.name in args.only.split(",")]
    results = []
    for repository in chosen:
        print(f"init_repos: {repository.name} ...", file=sys.stderr, flush=True)
        results.append(measure(repository, args.jobs))
        (HERE / "init_repos.json").write_text(json.dumps(results, indent=1) + "\n")  # so far: a long run shows
    commit = subprocess.run(["git", "-C", str(HERE.parent), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(HERE.parent), "status", "--porcelain", "--", "server", "exporter"],
                           capture_output=True, text=True).stdout.strip()
    versions = ", ".join(f"{d} {importlib.metadata.version(d)}" for d in ("torch", "torchvision", "onnxscript",
                                                                         "onnxruntime"))
    text = (f"# `onnxlens init` on real repositories\n\n"
            f"Generated by `python -m benchmarks.init_repos` (benchmarks/init_repos.py says how) at onnxlens "
            f"{commit}{' with uncommitted changes' if dirty else ''}; {versions}; Python {platform.python_version()}; "
            f"{jobs_text(args.jobs)}. Each repository in a fresh temporary directory: `onnxlens init`, then "
            f"`onnxlens check` with the config's defaults (verification on).\n\n"
            + table(results) + "\n\n"
            "*exported*: status ok with nothing edited by hand. *asks for values*: the `build_<name>()` init "
            "wrote raises NotImplementedError naming the constructor values the repository does not give. "
            "*needs a package*: the model's module imports a package the environment lacks. *failed*: any "
            "other outcome, by where the example inputs came from: a call of the model in the repository "
            "(then the model does not export as the repository calls it, or init read the call wrong), "
            "inferred by init from the constructor, config or nn.Embedding (nothing marked), or guessed "
            "(marked `# TODO`). Init's wrong guesses are among the last two columns; a helper block taken "
            "for a model shows in any column: the per-target tables name every target and its first "
            "finding.\n\n"
            "## Per target\n\n" + details(results))
    (HERE / "INIT.md").write_text(text)
    (HERE / "init_repos.json").write_text(json.dumps(results, indent=1) + "\n")
    return 0


def jobs_text(jobs: int) -> str:
    return f"check --jobs {jobs} on a {__import__('os').cpu_count()}-core machine"


if __name__ == "__main__":
    sys.exit(main())
