"""The spare's rehearsal (exporter/worker/rehearsal.py) and the zygote's warm-up export, both from
own_workspace.py's workspace, in this process with the shared warm
pipeline: a whole export of its tiny target succeeds, and what loading its workspace changed in
the process is put back (the job after it is another workspace's and must find the process as
the zygote forked it). That the job in a spare then runs as one in a fresh child does is
test_spare.py's, through the real worker."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import onnx

from onnxlens.exporter.worker import warmup
from onnxlens.exporter.worker.rehearsal import rehearse

PREFIX = "onnxlens-rehearsal-"  # own_workspace.py's name for the rehearsal's workspace
from tests.exporter.engine_support import shared_pipeline, spec_for, write


def _process_state() -> dict:
    temporary = os.path.realpath(tempfile.gettempdir())
    return {
        "path": list(sys.path),
        "hooks": list(sys.path_hooks),
        # Modules loaded from files in the temporary directory (where the rehearsal's workspace is).
        "temporary_modules": sorted(name for name, module in list(sys.modules.items())
                                    if os.path.realpath(getattr(module, "__file__", None) or "/").startswith(temporary)),
        "importer_cache": sorted(path for path in sys.path_importer_cache if path and path.startswith(temporary)),
    }


def test_the_rehearsal_exports_and_leaves_the_process_as_it_found_it():
    pipeline = shared_pipeline()
    # Other tests may have loaded their workspaces into this process, and any export (the
    # rehearsal's too) drops earlier workspaces' roots from sys.path (code.forget_workspace_modules).
    # A spare has none: the zygote it is forked from loads no workspace. As a spare finds it:
    rehearse(pipeline)
    before = _process_state()
    leftovers_before = set(os.listdir(tempfile.gettempdir()))

    assert rehearse(pipeline) == "ok"

    assert _process_state() == before
    assert not [name for name in set(os.listdir(tempfile.gettempdir())) - leftovers_before
                if name.startswith(PREFIX)]


def test_a_workspace_exported_after_the_rehearsal_gets_its_own_modules(tmp_path):
    # The rehearsal's module name, in the user's workspace: their file is the one imported.
    write(tmp_path, "_onnxlens_rehearsal.py", """
        import torch


        class Rehearsal(torch.nn.Module):
            def forward(self, x):
                return torch.tanh(x) * 2


        def example_inputs():
            return (torch.randn(3, 5),)
    """)
    pipeline = shared_pipeline()
    assert rehearse(pipeline) == "ok"

    result = pipeline.run(spec_for(tmp_path, "users", "_onnxlens_rehearsal.py:Rehearsal",
                                   "_onnxlens_rehearsal.py:example_inputs"))

    assert result.status == "ok", result.findings
    assert result.closure == [str((tmp_path / "_onnxlens_rehearsal.py").resolve())]
    ops = {node.op_type for node in onnx.load(result.onnx).graph.node}
    assert "Tanh" in ops and "Gemm" not in ops and "MatMul" not in ops, ops  # theirs, not the rehearsal's Linear


def test_a_rehearsal_removes_the_workspaces_of_rehearsals_whose_process_died():
    # A spare discarded (SIGKILL) mid-rehearsal leaves its workspace: the next rehearsal removes it.
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                           text=True, check=True)
    dead_pid = int(ended.stdout)
    abandoned = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{dead_pid}-"))
    (abandoned / "_onnxlens_rehearsal.py").write_text("# left by a killed spare\n")
    running = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))  # a live process's: not touched
    try:
        assert rehearse(shared_pipeline()) == "ok"

        assert not abandoned.exists()
        assert running.is_dir()
    finally:
        shutil.rmtree(abandoned, ignore_errors=True)
        shutil.rmtree(running, ignore_errors=True)


def test_the_zygotes_warm_up_export_leaves_the_process_as_it_found_it():
    # The same workspace as the rehearsal's (own_workspace.py), with the zygote's warm-up model.
    pipeline = shared_pipeline()
    rehearse(pipeline)  # (as above: earlier workspaces dropped first)
    before = _process_state()
    leftovers_before = set(os.listdir(tempfile.gettempdir()))

    warmup._warm_up_export(pipeline)

    assert _process_state() == before
    assert not [name for name in set(os.listdir(tempfile.gettempdir())) - leftovers_before
                if name.startswith("onnxlens-warmup-")]
