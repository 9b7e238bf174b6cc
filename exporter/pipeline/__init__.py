"""The export pipeline: load -> capture -> decompose -> scan -> translate -> optimize -> check -> save,
then verify after the result.

One `Pipeline` lives across jobs (in the zygote, before it forks; or in-process in tests and
benchmarks). It keeps the ONNX registry, the decomposition tables and the CIA op set built
(tables.py); each run builds a private registry copy with the target's custom translations.
Each stage is one module of stages/ with a `run(job)` over the typed `Job` (job.py), importing no
other stage; the helpers are wings beside them (failures/, untranslatable/, tracing/, output/,
target/), which import no stage. The job's decomposition tables are decompositions.py's.

The default path reproduces `torch.onnx.export(model, args, kwargs, dynamo=True, ...)` step by
step with torch's own pieces (capture strategies, decomposition tables, `_core` translation,
version conversion, optimize, renames, save with external data), asked of the adapter of the
installed torch's internals (torch_internals/), so the files are
byte-identical to the public API's; what differs is what happens on failure: every problem is
reported, on the user's line, and nothing is written. A model whose weights have no data (meta
device, FakeTensors: target/weights.py) takes the same path without the steps that read weights and
ends with a graph-only .onnx (target/graph_only.py) and a `weights-free` note saying so. A torch
without an adapter takes the public path (PUBLIC_STAGE_ORDER, stages/public_export.py) with a
`torch-version` note on every export.

Verification comes after the result (`finish`): the result (the saved model, the findings of
every stage that can fail the export) is what the editor waits for; onnxruntime's answer on the
example inputs only adds warnings (`mismatch`, `baked-shape`) to an export that is already
saved, so a worker child sends the result first and the completed (verified) result when it
ends (exporter/worker/child.py). Meanwhile, on a thread of its own, the save names the weights by
their content (output/onnx_commit.py, `name_by_content`: the hashing is off the result's path).

Never raises: our own bugs become findings of the stage they happened in (failures/errors.py). This
layer knows nothing about LSP: it emits typed progress events and returns an ExportResult.
"""

from __future__ import annotations

import contextlib
import time
from typing import Callable, Iterator, NamedTuple

import onnxlens.exporter.pipeline.decompositions as decompositions
import onnxlens.exporter.pipeline.target.absent_modules as absent_modules
import onnxlens.exporter.pipeline.output.artifacts as artifacts
import onnxlens.exporter.pipeline.output.onnx_commit as onnx_commit
import onnxlens.exporter.pipeline.stages.capture as capture
import onnxlens.exporter.pipeline.stages.check as check
import onnxlens.exporter.pipeline.stages.decompose as decompose
import onnxlens.exporter.pipeline.stages.load as load
import onnxlens.exporter.pipeline.target.opened_files as opened_files
import onnxlens.exporter.pipeline.stages.optimize as optimize
import onnxlens.exporter.pipeline.stages.public_export as public_export
import onnxlens.exporter.pipeline.stages.save as save
import onnxlens.exporter.pipeline.stages.scan as scan
import onnxlens.exporter.pipeline.stages.translate as translate
import onnxlens.exporter.pipeline.stages.verify as verify
import onnxlens.exporter.pipeline.target.weights as weights
from onnxlens.exporter.events import PipelineEvent, PipelineEventSink
import onnxlens.exporter.pipeline.failures.public_path as public_path
from onnxlens.exporter.pipeline.failures.errors import internal_finding
from onnxlens.exporter.pipeline.job import Job, Stop
from onnxlens.exporter.pipeline.tables import DEFAULT_OPSET, Tables
from onnxlens.exporter.pipeline.tracing.generated_code import GENERATED_FILE
from onnxlens.exporter.torch_internals.active import internals
from onnxlens.exporter.types import STAGES, ExportedGraph, ExportResult, TargetSpec


class Stage(NamedTuple):
    name: str
    run: Callable[[Job], None]
    exporting: bool  # runs with torch.onnx.is_in_onnx_export() true, as `_core.export` does
    # When it ends, every error the stock exporter could raise is known (it raises in capture,
    # decomposition and translation only): the editor shows this export's errors at once, while
    # check, verify and save run (FindingsEvent.settled).
    settles: bool = False


# What each stage runs. The stages' names and their order are STAGES's (exporter/types.py): the
# one list, which the server reads too (it cannot import this package: torch).
_RUNS: dict[str, Callable[[Job], None]] = {
    "load": load.run, "capture": capture.run, "decompose": decompose.run, "scan": scan.run,
    "translate": translate.run, "optimize": optimize.run, "check": check.run, "save": save.run,
    "verify": verify.run,
}
_EXPORTING = {"capture", "decompose", "scan", "translate", "optimize"}
_SETTLING = "translate"
# After the result: what only adds warnings to a saved export (`Pipeline.finish`).
_FINISHING = ("verify",)

STAGE_ORDER = tuple(Stage(name, _RUNS[name], name in _EXPORTING, settles=name == _SETTLING)
                    for name in STAGES if name not in _FINISHING)
FINISHING_ORDER = tuple(Stage(name, _RUNS[name], False) for name in _FINISHING)

# A torch without an adapter of its internals (torch_internals/): `torch.onnx.export` does the
# capture, decompose, scan, translate and optimize stages in one call (stages/public_export.py); it
# sets torch.onnx.is_in_onnx_export() itself. No verification: it needs the adapter's pieces.
PUBLIC_STAGE_ORDER = (
    Stage("load", load.run, False),
    Stage("translate", public_export.run, False, settles=True),
    Stage("check", check.run, False),
    Stage("save", save.run, False),
)

# The stages this process runs: the full pipeline with an adapter for its torch, else the public path.
STAGES_RUN = STAGE_ORDER if internals.FULL else PUBLIC_STAGE_ORDER
FINISHING_RUN = FINISHING_ORDER if internals.FULL else ()


def _ignore(event: PipelineEvent) -> None:
    pass


class Pipeline:
    def __init__(self) -> None:
        self.tables = Tables()

    def warm_up(self) -> None:
        """One tiny export in memory: builds the tables and pays torch's lazy first-export costs
        (on the public path there are no tables: the worker's warm-up export pays the rest)."""
        if not internals.FULL:
            return
        import torch

        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()).eval()
        registry = self.tables.registry(DEFAULT_OPSET)
        program = torch.export.export(model, (torch.randn(2, 4),), strict=False)
        decomposed = decompositions.decompose(program, self.tables.decompositions(registry))
        onnx_program = translate.translate(decomposed, registry, DEFAULT_OPSET)
        optimize.optimize(onnx_program)
        onnx_program.model_proto.SerializeToString()
        # Translating imported modules that define op namespaces (torch.ops._dir grew): build the
        # tables for the namespaces jobs will see, or every forked child would rebuild them.
        self.refresh()

    def refresh(self) -> None:
        """The tables brought up to date with the ops torch knows now: after imports that
        register ops or op namespaces (the zygote's library preloading), so that forked
        children do not each rebuild them (tables.py)."""
        if internals.FULL:
            self.tables.refresh()

    def run(self, spec: TargetSpec, on_event: PipelineEventSink = _ignore,
            previous: ExportedGraph | None = None) -> ExportResult:
        """The whole export, verified, its report and program dump written (in-process callers);
        `previous`: the target's previous export's graph, whose change the report shows."""
        job = self.export(spec, on_event)
        self.finish(job)
        artifacts.write(job, previous)
        return job.result

    def finish(self, job: Job) -> None:
        """What comes after the result, on the same job: verification (its findings and summary
        added to `job.result`) and, beside it, the weights named by their content (the result's
        `onnx_data` and `written` follow). Only for an export that saved its model; never raises."""
        if job.result.status != "ok":
            return
        start = time.perf_counter()
        naming = onnx_commit.Naming(job.result)
        try:
            for stage in FINISHING_RUN:
                with job.running(stage.name, after_result=True):
                    stage.run(job)
        except Stop:
            pass
        except Exception as error:  # noqa: BLE001 - a bug after the save costs the check, not the model
            job.log(f"{job.spec.name}: {job.stage} did not run to its end: {type(error).__name__}: {error}")
        finally:
            naming.join(job)
            job.result.finishing_seconds = time.perf_counter() - start

    def export(self, spec: TargetSpec, on_event: PipelineEventSink = _ignore, *, kept_fills_fd: int | None = None) -> Job:
        """The export up to its result (`job.result`); the report and the program dump are
        named but not written yet: `artifacts.write(job)` does that, after a worker child has
        sent the result the editor waits for. `kept_fills_fd`: the target's kept random fills
        (kept_fills.py; a worker child gets them from the zygote)."""
        start = time.perf_counter()
        if internals.FULL:  # the public path cannot reach the counter: its files may differ in those names
            _counters_as_in_a_fresh_process()
        job = Job(spec, self.tables, on_event, kept_fills_fd)
        opened: set[str] = set()
        absent: set[str] = set()
        try:
            with opened_files.recording(job.workspace) as opened, absent_modules.recording(job.workspace) as absent:
                for stage in STAGES_RUN:
                    with job.running(stage.name, settles=stage.settles), _onnx_exporting(stage.exporting):
                        stage.run(job)
        except Stop:
            pass
        except BaseException as error:  # noqa: BLE001 - our own bugs become findings, never tracebacks
            if isinstance(error, KeyboardInterrupt):
                raise
            job.error = error
            job.result.findings.append(internal_finding(job, error))
        finally:
            result = job.result
            # What the target imported, and what its code opened (a JSON config): a change to
            # either must re-export it; so must a module it looked for appearing.
            imported = job.loader.closure() if job.loader is not None else []
            result.closure = sorted(set(imported) | opened)
            result.absent = sorted(absent)
            if job.weights_free is not None:
                _note_weights_free(job)
            if not internals.FULL:
                result.findings.append(public_path.notice(job))
            if any(f.severity == "error" for f in result.findings):
                result.status = "failed"
                result.onnx = None
            artifacts.plan(job)
            result.seconds = time.perf_counter() - start
        return job


def _note_weights_free(job: Job) -> None:
    """A weights-free model's note comes last, when it is known what the export wrote."""
    try:
        job.result.findings.append(weights.note(job.weights_free, job.spec, checked=job.graph_only is not None,
                                                graph_onnx=job.result.graph_onnx, location=job.fallback))
    except Exception as error:  # noqa: BLE001 - the note is secondary to the export's own findings
        job.log(f"could not describe the weights-free model: {type(error).__name__}: {error}")


def _counters_as_in_a_fresh_process() -> None:
    """torch.fx names the code it generates `<eval_with_key>.N`, N from a process-wide counter,
    and those names reach the .onnx (the stack traces of nodes in torch.cond / loop bodies). A
    user's script calling torch.onnx.export starts from 0; this process has exported before (the
    warm-up, earlier in-process jobs). Each job starts from 0 too, so the files stay
    byte-identical to the public API's. The stack traces also quote the generated code's lines,
    read through linecache: the text an earlier job's module of the same name left there must
    go, or a reused name quotes the old code. (Earlier jobs' graph modules lose their source
    text for tracebacks; nothing reads them any more.)"""
    import linecache

    internals.reset_codegen_counter()
    for name in [name for name in linecache.cache if name.startswith(GENERATED_FILE)]:
        del linecache.cache[name]


@contextlib.contextmanager
def _onnx_exporting(exporting: bool) -> Iterator[None]:
    """As `_core.export` does: user code may ask torch.onnx.is_in_onnx_export()."""
    if not exporting:
        yield
        return
    with internals.onnx_exporting():
        yield
