"""Saving, fresh imports across runs, decomposition failures and our own bugs."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from onnxlens.exporter.onnx_pair import named_data_file
from onnxlens.exporter.events import StageEvent
from tests.exporter.engine_support import shared_pipeline, spec_for, write
from tests.support.workspace import line_of

MODEL = '''
import torch
from torch import nn


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 32)  # 512 bytes of weights: saved in the data file

    def forward(self, x):
        return self.proj(x).relu()


def inputs():
    torch.manual_seed(0)
    return (torch.randn(2, 4),)


def build():
    torch.manual_seed(0)
    return Small().eval()
'''

# A custom op whose fake kernel works when torch.export captures the model and fails when the
# decomposition re-traces the graph: a real way to fail in the decomposition stage.
FLAKY_OP = '''
import torch
from torch import nn

calls = []


@torch.library.custom_op("onnxlens_tests::flaky", mutates_args=())
def flaky(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


@flaky.register_fake
def _(x):
    calls.append(1)
    if len(calls) > 1:
        raise RuntimeError("fake kernel cannot be traced twice")
    return torch.empty_like(x)


class UsesFlaky(nn.Module):
    def forward(self, x):
        return torch.ops.onnxlens_tests.flaky(x) + 1


def inputs():
    calls.clear()
    return (torch.randn(2, 4),)
'''


@pytest.fixture
def workspace(tmp_path) -> Path:
    write(tmp_path, "model.py", MODEL)
    write(tmp_path, "flaky.py", FLAKY_OP)
    return tmp_path


def small(workspace: Path, **options):
    return spec_for(workspace, "small", "model.py:build", "model.py:inputs", **options)


def test_failed_export_keeps_the_last_good_onnx_and_leaves_no_temporary_files(workspace):
    pipeline = shared_pipeline()
    first = pipeline.run(small(workspace))
    assert first.status == "ok", first.findings
    onnx_path = Path(first.onnx)
    good = {name: (onnx_path.parent / name).read_bytes() for name in ("small.onnx", Path(first.onnx_data).name)}
    assert first.onnx_data == str(named_data_file(first.onnx))

    # Break the model: the same Pipeline must import the edited file, not its cached module.
    model = workspace / "model.py"
    model.write_text(model.read_text().replace("self.proj(x).relu()", "torch.special.zeta(self.proj(x), 2.0)"))
    broken = pipeline.run(small(workspace))
    assert broken.status == "failed"
    assert [f.code for f in broken.findings] == ["unsupported-op"]
    assert broken.findings[0].location.line == line_of(model, "torch.special.zeta(")
    assert broken.onnx is None
    assert {name: (onnx_path.parent / name).read_bytes() for name in good} == good
    leftovers = [name for name in os.listdir(onnx_path.parent) if name.endswith(".tmp") or name.startswith(".")]
    assert leftovers == []


def test_a_fixed_model_exports_again_with_the_same_bytes(workspace):
    pipeline = shared_pipeline()
    first = pipeline.run(small(workspace))
    before = Path(first.onnx).read_bytes()
    model = workspace / "model.py"
    original = model.read_text()
    model.write_text(original.replace("self.proj(x).relu()", "torch.special.zeta(self.proj(x), 2.0)"))
    assert pipeline.run(small(workspace)).status == "failed"
    model.write_text(original)
    again = pipeline.run(small(workspace))
    assert again.status == "ok"
    assert Path(again.onnx).read_bytes() == before


def test_same_size_edit_within_the_same_second_is_seen_despite_a_cached_pyc(workspace):
    import py_compile

    model = workspace / "model.py"
    pipeline = shared_pipeline()
    first = pipeline.run(small(workspace))
    assert "Relu" in next(i for i in first.lines if i.line == line_of(model, "relu()")).ops
    # The user ran their code: a .pyc matching the file's mtime and size is in __pycache__.
    py_compile.compile(str(model), doraise=True)
    stat = model.stat()
    model.write_text(model.read_text().replace("relu()", "tanh()"))  # same size
    os.utime(model, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same second
    again = pipeline.run(small(workspace))
    assert "Tanh" in next(i for i in again.lines if i.line == line_of(model, "tanh()")).ops


def test_exported_program_dump_is_written_next_to_the_report(workspace):
    result = shared_pipeline().run(small(workspace))
    dump = Path(result.exported_program)
    assert dump.parent == Path(small(workspace).report).parent
    assert "aten.linear" in dump.read_text()


def test_the_report_and_the_program_dump_are_as_readable_as_the_onnx(workspace):
    # The report once kept mkstemp's 0600: the user's other tools could not read it.
    result = shared_pipeline().run(small(workspace))

    def mode(path: str) -> int:
        return stat.S_IMODE(os.stat(path).st_mode)

    assert mode(result.report) == mode(result.exported_program) == mode(result.onnx) == mode(result.onnx_data)
    umask = os.umask(0)
    os.umask(umask)
    assert mode(result.onnx) == 0o666 & ~umask  # 0644 under the usual umask 022


def test_decomposition_failure_is_a_decomposition_finding_at_the_raising_user_line(workspace):
    spec = spec_for(workspace, "flaky", "flaky.py:UsesFlaky", "flaky.py:inputs")
    result = shared_pipeline().run(spec)
    flaky = workspace / "flaky.py"
    assert [f.code for f in result.findings] == ["decomposition"]
    finding = result.findings[0]
    assert finding.stage == "decompose"
    assert "fake kernel cannot be traced twice" in finding.message
    assert (finding.location.file, finding.location.line) == (
        str(flaky), line_of(flaky, 'raise RuntimeError("fake kernel'))
    assert result.stages.keys() == {"load", "capture", "decompose"}


def test_a_bug_in_onnxlens_itself_becomes_a_finding_not_a_traceback(workspace, monkeypatch):
    # A mock on purpose: no real model makes our own LineInfo code raise; this reaches that state.
    from onnxlens.exporter.pipeline.output import lines

    def broken(*args, **kwargs):
        raise KeyError("simulated bug in onnxlens")

    monkeypatch.setattr(lines, "line_infos", broken)
    events = []
    result = shared_pipeline().run(small(workspace), events.append)
    assert result.status == "failed"
    assert [(f.code, f.stage) for f in result.findings] == [("translation", "optimize")]
    assert "simulated bug in onnxlens" in result.findings[0].message
    # Shown at the model's definition (no user frame raised), and every begun stage ended.
    assert result.findings[0].location.line == line_of(workspace / "model.py", "def build")
    begun = [e.stage for e in events if isinstance(e, StageEvent) and e.state == "begin"]
    ended = [e.stage for e in events if isinstance(e, StageEvent) and e.state == "end"]
    assert begun == ended


def test_every_run_writes_a_report_with_its_time_and_a_verification(workspace):
    result = shared_pipeline().run(small(workspace, verify=True))
    assert result.status == "ok"
    assert result.verification is not None and result.verification.passed is True
    report = Path(result.report).read_text()
    assert "Total time: 0.00 s" not in report
    assert f"Total time: {result.seconds:.2f} s" in report


@pytest.mark.parametrize("package", ["regular", "namespace"])
def test_two_workspaces_with_a_package_of_the_same_name_do_not_see_each_other(tmp_path, package):
    # In one process (tests, benchmarks) the second workspace's `models` must not be the first's,
    # whether it has an __init__.py or is a namespace package (a directory without one).
    first, second = tmp_path / "first", tmp_path / "second"
    for root, width in ((first, 3), (second, 5)):
        if package == "regular":
            write(root, "models/__init__.py", "")
        write(root, "models/sizes.py", f"WIDTH = {width}\n")
        write(root, "models/net.py", "from models.sizes import WIDTH\n"
              + MODEL.replace("nn.Linear(4, 32)", "nn.Linear(4, WIDTH)"))
    pipeline = shared_pipeline()
    runs = [pipeline.run(spec_for(root, "net", "models/net.py:build", "models/net.py:inputs"))
            for root in (first, second)]
    assert [r.status for r in runs] == ["ok", "ok"]
    import onnx

    widths = [onnx.load(r.onnx).graph.output[0].type.tensor_type.shape.dim[1].dim_value for r in runs]
    assert widths == [3, 5]


def test_warm_up_builds_the_tables_that_later_jobs_reuse(workspace):
    from onnxlens.exporter.pipeline import Pipeline

    pipeline = Pipeline()
    pipeline.warm_up()
    registry = pipeline.tables._registries[20].registry
    decompositions = dict(pipeline.tables._decompositions)
    assert len(decompositions) == 1
    assert pipeline.run(small(workspace)).status == "ok"
    assert pipeline.tables._registries[20].registry is registry  # not rebuilt per job, as the public API does
    assert pipeline.tables._decompositions == decompositions


def test_sys_exit_in_forward_is_a_finding_on_its_line(workspace):
    write(workspace, "exits.py", '''
        import sys

        import torch


        class Exits(torch.nn.Module):
            def forward(self, x):
                sys.exit(3)


        def inputs():
            return (torch.randn(2),)
    ''')
    result = shared_pipeline().run(spec_for(workspace, "exits", "exits.py:Exits", "exits.py:inputs"))
    assert [(f.code, f.stage) for f in result.findings] == [("torch-export", "capture")]
    finding = result.findings[0]
    assert finding.location.line == line_of(workspace / "exits.py", "sys.exit(3)")
    assert "SystemExit" in finding.message and "your code raised" in finding.message


def test_a_model_file_outside_the_workspace_is_named_as_such_not_a_missing_module(workspace, tmp_path_factory):
    """The worker's own check (the config's is in tests/cli/test_outside_workspace.py): a spec
    whose model file resolves outside the root — here a link made after the config was read."""
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    write(elsewhere, "model.py", MODEL)
    (workspace / "linked.py").symlink_to(elsewhere / "model.py")
    result = shared_pipeline().run(spec_for(workspace, "linked", "linked.py:build", "linked.py:inputs"))
    [finding] = result.findings
    assert finding.code == "import"
    assert finding.message.startswith(f"the model reference: linked.py is outside the workspace {workspace.resolve()} "
                                      f"(it resolves to {(elsewhere / 'model.py').resolve()})")
    assert "ModuleNotFoundError" not in finding.message
