"""Kill a real save at each of its syscalls: `python -m tests.exporter.save_kills OUT REPORT`.

The process that test_save_kills.py runs (torch imported once, two real models exported):

1. the OLD model's pair is saved to OUT (pipeline/output/onnx_commit.py's `save_onnx`, then `name_by_content`,
   as the pipeline does: the result between them);
2. a forked child saves the NEW model over it while `strace -f -p CHILD` records every syscall
   of the save (the child stops itself with SIGSTOP before saving, and the save starts only
   once strace has attached), so the trace is the save's whole syscall list;
3. for each syscall of that list, OUT is put back to the OLD pair byte for byte, a new child is
   forked and strace kills it with SIGKILL on entering that syscall (`-e inject=NAME:
   signal=KILL:when=K`: the K-th NAME call, K counted in the trace of step 2);
4. after each kill, what OUT holds: the .onnx's bytes and those of the data file it names,
   compared with the OLD and the NEW pair, and onnxruntime's output on the pair compared with
   torch's outputs of the OLD and the NEW model;
5. once more killed at the commit (the rename onto the .onnx), then one save run to its end:
   what the killed save left behind must be gone;
6. the control: the same kills at the renames of a save that keeps the stock names and renames
   the data file, then the graph (the scheme the data files named per save replaced): the harness
   must see its torn pair.

A pair is told by its graph with the data file's name taken out, and the weights it names: the
new pair names its weights by a token first, then by their content (output/onnx_commit.py).

The report (JSON) holds the facts; the test asserts on them. Linux only (fork, strace).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np

_PR_SET_PTRACER = 0x59616D61
_PR_SET_PTRACER_ANY = ctypes.c_ulong(-1)
_CALL = re.compile(r"^(?P<pid>\d+)\s+(?P<name>[a-z0-9_]+)\((?P<args>.*)$")


def models():
    """The programs of OLD, NEW (other weights, another graph) and KEPT (OLD's weights, another
    graph: its save keeps OLD's data file, output/kept_weights.py), their outputs on `x`, and `x`."""
    import torch

    torch.manual_seed(1)
    old = torch.nn.Sequential(torch.nn.Linear(16, 48), torch.nn.ReLU(), torch.nn.Linear(48, 8)).eval()
    torch.manual_seed(2)
    new = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 8)).eval()
    kept = torch.nn.Sequential(old[0], torch.nn.Tanh(), old[2]).eval()
    x = torch.randn(2, 16)
    programs = {name: torch.onnx.export(model, (x,), dynamo=True, verbose=False)
                for name, model in (("old", old), ("new", new), ("kept", kept))}
    with torch.no_grad():
        expected = {name: model(x).numpy() for name, model in (("old", old), ("new", new), ("kept", kept))}
    return programs, expected, x.numpy()


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def restore(directory: Path, files: dict[str, bytes]) -> None:
    shutil.rmtree(directory)
    directory.mkdir()
    for name, data in files.items():
        (directory / name).write_bytes(data)


def save_with_two_renames(program, destination: Path) -> None:
    """The control: the public API's files in a staging directory, renamed into place one by one."""
    staging = destination.parent / f".{destination.name}.control.tmp"
    staging.mkdir()
    program.save(str(staging / destination.name), external_data=True)
    for file in sorted(os.listdir(staging), key=lambda f: f == destination.name):  # the .onnx last
        os.replace(staging / file, destination.parent / file)
    staging.rmdir()


def pipeline_save(program, destination: Path) -> None:
    """The whole save as the pipeline does it: committed, then named by content."""
    from onnxlens.exporter.pipeline.output.onnx_commit import name_by_content, save_onnx

    name_by_content(save_onnx(program, str(destination)))


def save_in_child(program, destination: Path, strace_args: list[str], save=pipeline_save) -> tuple[str, str]:
    """Fork a child that saves `program` (with `save`; default: the pipeline's), under strace
    from its first syscall; (how the child ended, strace's stderr)."""
    pid = os.fork()
    if pid == 0:
        try:
            ctypes.CDLL(None).prctl(_PR_SET_PTRACER, _PR_SET_PTRACER_ANY, 0, 0, 0)  # Yama: let strace attach
            os.kill(os.getpid(), signal.SIGSTOP)
            save(program, destination)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status)
    tracer = subprocess.Popen(["strace", "-p", str(pid), *strace_args], stderr=subprocess.PIPE, text=True)
    attached = tracer.stderr.readline()
    if "attached" not in attached:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        tracer.wait()
        raise RuntimeError(f"strace could not attach: {attached.strip()}")
    os.kill(pid, signal.SIGCONT)
    _, status = os.waitpid(pid, 0)
    rest = tracer.communicate()[1]
    if os.WIFSIGNALED(status):
        ended = f"signal {signal.Signals(os.WTERMSIG(status)).name}"
    else:
        ended = f"exit {os.WEXITSTATUS(status)}"
    return ended, attached + rest


def _unnamed(graph: bytes) -> bytes:
    """The graph with its data file's name taken out."""
    import onnx

    from onnxlens.exporter.onnx_pair import locations, relocate

    model = onnx.load_from_string(graph)
    for location in locations(model):
        relocate(model, location, "DATA")
    return model.SerializeToString()


def _pair_of(files: dict[str, bytes], name: str, data: Path | None) -> tuple[bytes, bytes | None]:
    """A snapshot's pair: its graph without the data file's name, and the weights it names (or
    those of `data`'s name, for the control)."""
    import onnx

    from onnxlens.exporter.onnx_pair import locations

    named = locations(onnx.load_from_string(files[name]))
    data_name = data.name if data else (next(iter(named)) if named else None)
    return _unnamed(files[name]), files.get(data_name)


def pair_state(directory: Path, name: str, pairs: dict[str, dict[str, bytes]], expected, x,
               data: Path | None = None) -> dict:
    """Which pair the .onnx in `directory` is, by bytes (the data file's name aside) and by what
    onnxruntime computes; `data`: the data file, when the graph does not name it (the control's)."""
    import onnxruntime

    from onnxlens.exporter.onnx_pair import named_data_file

    onnx_path = directory / name
    state: dict = {"files": sorted(p.name for p in directory.iterdir())}
    if not onnx_path.exists():
        state["pair"] = "no .onnx"
        return state
    graph = onnx_path.read_bytes()
    given = data
    data = data or named_data_file(onnx_path)
    state["data"] = data.name if data else None
    weights = data.read_bytes() if data and data.exists() else None
    here = (_unnamed(graph), weights)
    state["pair"] = next((which for which, files in pairs.items() if _pair_of(files, name, given) == here), "neither")
    try:
        session = onnxruntime.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
        output = session.run(None, {session.get_inputs()[0].name: x})[0]
        state["computes"] = next((which for which, want in zip(("old", "new"), expected)
                                  if want.shape == output.shape and np.allclose(output, want, rtol=1e-4, atol=1e-5)),
                                 "neither")
    except Exception as error:  # noqa: BLE001 - a torn pair's load error is the fact to report
        state["computes"] = f"onnxruntime failed: {type(error).__name__}: {str(error)[:300]}"
    return state


def kill_each_syscall(old_program, new_program, expected, x, out: Path, trace_file: Path) -> dict:
    """Steps 1-5 of the module for one save of `new_program` over `old_program`'s pair in `out`."""
    from onnxlens.exporter.onnx_pair import named_data_file

    name = "net.onnx"
    destination = out / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    pipeline_save(old_program, destination)
    old = snapshot(out)

    ended, _ = save_in_child(new_program, destination, ["-f", "-o", str(trace_file)])
    new = snapshot(out)
    new_data = named_data_file(destination)
    new_data = {"new_data": new_data.name, "new_data_sha256": hashlib.sha256(new[new_data.name]).hexdigest()}
    calls = []
    for line in trace_file.read_text().splitlines():
        match = _CALL.match(line)
        if match:
            calls.append({"pid": int(match["pid"]), "name": match["name"], "args": match["args"][:300],
                          "paths": re.findall(r'"([^"]*)"', match["args"])})
    counted: dict[str, int] = {}
    for call in calls:
        counted[call["name"]] = call["k"] = counted.get(call["name"], 0) + 1

    pairs = {"old": old, "new": new}
    kills = []
    for call in calls:
        restore(out, old)
        how, _ = save_in_child(new_program, destination,
                               ["-o", "/dev/null", "-e", f"trace={call['name']}",
                                "-e", f"inject={call['name']}:signal=KILL:when={call['k']}"])
        kills.append({**call, "ended": how, **pair_state(out, name, pairs, expected, x)})

    # What a save killed at its commit leaves behind, then the next save.
    restore(out, old)
    commit = next(c for c in calls if c["name"].startswith("rename") and c["paths"][1:] == [str(destination)])
    killed_at_commit, _ = save_in_child(new_program, destination,
                                        ["-o", "/dev/null", "-e", f"trace={commit['name']}",
                                         "-e", f"inject={commit['name']}:signal=KILL:when={commit['k']}"])
    left_behind = sorted(p.name for p in out.iterdir())
    pipeline_save(new_program, destination)
    after_next_save = pair_state(out, name, pairs, expected, x)
    return {"destination": str(destination), "complete_save": ended, **new_data, "calls": calls,
            "old_files": sorted(old), "new_files": sorted(new), "kills": kills,
            "killed_at_commit": killed_at_commit, "left_behind": left_behind, "after_next_save": after_next_save}


def main(out: Path, report: Path) -> None:
    import torch

    torch.set_num_threads(1)  # the children fork from here (exporter-internals.md: OpenMP)
    programs, expected, x = models()
    trace_file = out.parent / "save.trace"
    # The save that writes new weights, and the one that keeps the old pair's data file.
    scenarios = {new: kill_each_syscall(programs["old"], programs[new], [expected["old"], expected[new]], x,
                                        out, trace_file)
                 for new in ("new", "kept")}

    name = "net.onnx"
    destination = out / name
    control = []
    shutil.rmtree(out)
    out.mkdir()
    save_with_two_renames(programs["old"], destination)
    control_old = snapshot(out)
    trace_file.unlink()
    save_in_child(programs["new"], destination, ["-o", str(trace_file), "-e", "trace=rename"], save_with_two_renames)
    control_pairs = {"old": control_old, "new": snapshot(out)}
    renames = [line for line in trace_file.read_text().splitlines() if line.startswith("rename(")]
    for k, line in enumerate(renames, 1):
        restore(out, control_old)
        how, _ = save_in_child(programs["new"], destination, ["-o", "/dev/null", "-e", "trace=rename",
                                                               "-e", f"inject=rename:signal=KILL:when={k}"],
                               save_with_two_renames)
        control.append({"name": "rename", "k": k, "args": line[7:300], "ended": how,
                        **pair_state(out, name, control_pairs, [expected["old"], expected["new"]], x,
                                     data=destination.with_name(name + ".data"))})

    report.write_text(json.dumps({"written": scenarios["new"], "kept": scenarios["kept"], "control": control},
                                 indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
