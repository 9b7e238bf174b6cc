"""What crosses the pipe between the server and the export worker: a job's `TargetSpec` in, its
`ExportResult` out (findings, lines, graph, verification, cost), and the previous
`ExportedGraph` a job's report compares with. Each is plain data (exporter/wire/plain.py): a
dataclass of str/int/float/bool/list/dict that crosses as a dict (`to_dict` / `from_dict`). No
torch, no pygls: the server imports this module, and so does the worker. The progress events
are in exporter/events.py, what only the server keeps in server/service/events.py, what the editor is
shown in server/lsp/exporting/status.py.

Conventions (the contracts in docs/: diagnostics.md, cli.md):
* paths are absolute in the data; the CLI makes them workspace-relative when it prints them;
* lines are 1-based; columns are 1-based and `end_column` is exclusive (as in SARIF), so the
  LSP conversion is `character = column - 1`, `end character = end_column - 1`.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any

from onnxlens.exporter.wire.plain import Plain

# TargetSpec.source_paths: how the saved .onnx names source files (pipeline/output/source_paths.py).
SOURCE_PATH_MODES = ("absolute", "relative", "none")
# TargetSpec.verify_inputs: what verification runs on (exporter/verify/small_inputs.py).
VERIFY_INPUTS = ("example", "small")

# The pipeline's stages, in order: the one list of their names (exporter/pipeline/ runs them in
# this order; verify after the result). A finding's `stage` is one of these.
STAGES = ("load", "capture", "decompose", "scan", "translate", "optimize", "check", "save", "verify")

# Diagnostic code -> default severity (docs/diagnostics.md).
CODES: dict[str, str] = {
    "config": "error",
    "import": "error",
    "setup": "error",
    "torch-export": "error",
    "unsupported-op": "error",
    "decomposition": "error",
    "translation": "error",
    "onnx-checker": "error",
    "mismatch": "warning",
    "baked-shape": "warning",
    "verification": "warning",
    "weights-free": "info",
    "torch-version": "info",
    "graph-change": "info",
    "timeout": "error",
    "crash": "error",
    "output": "error",
}


@dataclass
class Location(Plain):
    file: str
    line: int
    column: int = 1
    end_line: int | None = None
    end_column: int | None = None



@dataclass
class Related(Plain):
    """Another frame of the user-relevant call chain (innermost first), or a note."""

    file: str
    line: int
    message: str
    column: int = 1



@dataclass
class SuggestedEdit(Plain):
    """A text edit the exporter itself suggests (e.g. insert `torch._check(...)`): a finding's
    `fixes`, the name the JSON output and the editor read. The editor offers it as a quick fix
    beside the server's own (server/fixits/, whose one shape is `Fix`)."""

    title: str
    file: str
    line: int
    column: int
    end_line: int
    end_column: int
    new_text: str



@dataclass
class TranslationStub(Plain):
    """The start of an ONNX translation for an op without one (exporter/proposals/translation_stubs.py):
    what the quick fix "Write an ONNX translation for aten.X" writes into the target's
    custom-translations module."""

    op: str  # "aten.linalg_eig.default"
    key: str  # "torch.ops.aten.linalg_eig.default": the op as the table's key
    function: str  # "aten_linalg_eig": the function's name
    source: str  # the function's text, parameters from the op's schema, a body to fill in
    opset: int  # the ONNX opset the target exports to (`from onnxscript import opsetN as op`)
    needs_sequence: bool = False  # the signature uses `Sequence` (from collections.abc)
    decomposition: str | None = None  # torch's own decomposition ("torch/_refs/…py:123"), to read first


@dataclass
class DecompositionOffer(Plain):
    """A decomposition torch has for an op without a translation, which the exporter does not
    apply and which leads to ops that all have one (exporter/proposals/decomposition_offers.py):
    the alternative to writing a translation, turned on by the target's `extra-decompositions`."""

    op: str  # "aten.index_reduce.default", as `extra-decompositions` names it
    source: str  # where torch writes it ("torch/_inductor/decomposition.py:1066")
    into: list[str] = field(default_factory=list)  # the ops it leads to ("aten.index_put.default", ...)


@dataclass
class ShapesProposal(Plain):
    """A dynamic-shapes factory for a target that declares none, from its example inputs
    (exporter/proposals/dynamic_shapes.py): what the quick fix "Declare dynamic shapes" writes."""

    function: str  # the factory's name ("dynamic_shapes")
    source: str  # its text: a function returning the spec, string dims naming the ONNX axes
    dims: list[str] = field(default_factory=list)  # the names it declares ("batch", "seq")
    sizes: list[int] = field(default_factory=list)  # their sizes in the example inputs
    entries: dict[str, str] = field(default_factory=dict)  # input -> its spec entry ('{0: "batch"}', "None")


@dataclass
class Finding(Plain):
    code: str
    message: str
    stage: str
    location: Location | None = None
    related: list[Related] = field(default_factory=list)
    severity: str = ""  # empty: the code's default from CODES
    source_line: str | None = None  # text of the primary line, for reports and the CLI
    docs_url: str | None = None  # becomes the LSP codeDescription
    fixes: list[SuggestedEdit] = field(default_factory=list)
    translation_stubs: list[TranslationStub] = field(default_factory=list)  # `unsupported-op`: one per op
    decomposition_offers: list[DecompositionOffer] = field(default_factory=list)  # `unsupported-op`: where torch has one
    # The target's config key the finding is about ("model", "inputs", "dynamic-shapes",
    # "custom-translations"), for a reference no line of code can be blamed for (a callable its
    # module does not define): without a location, shown on that key's value in the config.
    reference: str | None = None

    def __post_init__(self) -> None:
        if not self.severity:
            self.severity = CODES.get(self.code, "error")


@dataclass
class TargetSpec(Plain):
    """One export job's target, fully resolved by the server's config loader.

    `model`, `inputs`, `dynamic_shapes` and `custom_translations` are references
    `FILE.py:CALLABLE` (relative to `root`) or `package.module:CALLABLE` (importable from `root`).
    """

    name: str
    root: str  # workspace root: the directory of the config file
    model: str
    inputs: str
    output: str  # absolute path of the .onnx to write
    report: str  # absolute path of the markdown report to write
    dynamic_shapes: str | None = None
    custom_translations: str | None = None
    verify: bool = True
    # Verification's tolerances (exporter/verify/tolerance.py; docs/configuration.md); None: by
    # dtype. `verify_inputs`: what it runs on ("example", or "small": the example cut along its
    # dynamic dimensions, small_inputs.py). `second_shape`: the check with other sizes runs.
    rtol: float | None = None
    atol: float | None = None
    verify_inputs: str = "example"
    second_shape: bool = True
    timeout: float = 120.0
    opset: int | None = None
    input_names: list[str] | None = None
    output_names: list[str] | None = None
    memory_limit_mb: int | None = None  # child address-space cap; None: no cap
    source_paths: str = "absolute"  # paths in the saved stack traces (pipeline/output/source_paths.py)
    extra_decompositions: list[str] | None = None  # ops decomposed with torch's decompositions the exporter does not apply
    profile: bool = False  # onnxruntime's profiler on the verification run: what each line costs (InferenceCost)

    @property
    def graph_output(self) -> str:
        """Where a weights-free model's graph-only .onnx goes (pipeline/target/graph_only.py):
        `<name>.graph.onnx` next to `output`, which a file without weights must never replace."""
        stem = self.output[:-len(".onnx")] if self.output.endswith(".onnx") else self.output
        return f"{stem}.graph.onnx"

    @property
    def cache_dir(self) -> str:
        """`<output-dir>/cache`: the output dir is where the config loader puts the reports
        directory (`<output-dir>/reports/<target>.md`)."""
        report_dir = os.path.dirname(os.path.abspath(self.report))
        output_dir = os.path.dirname(report_dir) if os.path.basename(report_dir) == "reports" else report_dir
        return os.path.join(output_dir, "cache")

    @property
    def safe_name(self) -> str:
        """The target's name as a file name."""
        return "".join(c if c.isalnum() or c in "-_." else "_" for c in self.name)

    @property
    def verification_record(self) -> str:
        """Where the last passing verification is kept (exporter/verify/reuse.py)."""
        return os.path.join(self.cache_dir, f"{self.safe_name}.verified.json")



@dataclass
class LineInfo(Plain):
    """What one source line became in the export: for hover, code lens, inlay hints and the
    graph's change since the last export (exporter/pipeline/output/lines.py, line_values.py)."""

    file: str
    line: int
    ops: dict[str, int] = field(default_factory=dict)  # ONNX op type -> count
    outputs: list[str] = field(default_factory=list)  # ONNX values its nodes computed, e.g. "float32[2, 10]"
    modules: list[str] = field(default_factory=list)  # module paths, e.g. "layers.2.ff.0"
    # The line's text as the export saw it, stripped: what tells the same line apart in the next
    # export and in an edited buffer (its number moves when lines are added above it).
    code: str = ""
    # The values the line hands on (to other lines, or as the model's outputs), from the captured
    # program, symbolic sizes by their declared names: "[batch, 16, 256] f32"; distinct, in graph order.
    produced: list[str] = field(default_factory=list)
    ran_in: list[str] = field(default_factory=list)  # the modules whose forward ran the line ("layers.0" ...)
    weight_bytes: int = 0  # bytes of the initializers its nodes read (one shared with other lines counts for each)


@dataclass
class GraphValue(Plain):
    """An input or output of the ONNX model, as its callers see it."""

    name: str
    dtype: str  # "float32"
    dims: list[int | str] = field(default_factory=list)  # a size, or a dynamic axis by name ("batch"; "?": unknown)
    line: Location | None = None  # an output: the line of the user's code that computed it


@dataclass
class FixedAxis(Plain):
    """A dimension declared dynamic that the model's code fixed to one size (pipeline/failures/dynamic_dims.py)."""

    input: str  # the input's name in the dynamic-shapes spec
    dim: int
    size: int
    location: Location  # the line that fixed it


@dataclass
class GraphSummary(Plain):
    """The exported graph in brief: what the next export of the target is compared with
    (exporter/pipeline/output/graph_summary.py builds it, exporter/graph_change.py compares two)."""

    ops: dict[str, int] = field(default_factory=dict)  # ONNX op type -> count, subgraphs included
    initializer_bytes: int = 0
    inputs: list[GraphValue] = field(default_factory=list)
    outputs: list[GraphValue] = field(default_factory=list)
    fixed_axes: list[FixedAxis] = field(default_factory=list)
    shapes_location: Location | None = None  # the dynamic-shapes factory's definition, when the target has one


@dataclass
class ExportedGraph(Plain):
    """One export's graph as the next export of its target is compared with it: the summary
    and the lines. The server keeps the last one per target and sends it with the next job,
    whose report says what changed."""

    graph: GraphSummary
    lines: list[LineInfo] = field(default_factory=list)

    @classmethod
    def of(cls, result: ExportResult | None) -> ExportedGraph | None:
        """The graph of a result that has one (an export that got as far as an ONNX model)."""
        if result is None or result.graph is None:
            return None
        return cls(graph=result.graph, lines=result.lines)


@dataclass
class WrittenFile(Plain):
    """A file an export wrote, as it was written (exporter/written.py): the digest of its content
    and the identity of its inode. The result cache trusts a result only while its files are these."""

    path: str
    sha256: str
    size: int
    device: int
    inode: int
    mtime_ns: int
    ctime_ns: int


@dataclass
class ExportResult(Plain):
    target: str
    status: str  # "ok" | "failed"
    onnx: str | None = None  # path of the .onnx written by this job (None when it failed)
    onnx_data: str | None = None  # the weights' file the .onnx names (exporter/onnx_pair.py); None without weights
    graph_onnx: str | None = None  # path of the graph-only .onnx (no weights) of a weights-free model
    report: str | None = None
    exported_program: str | None = None  # path of a text dump of the torch.export program
    seconds: float = 0.0  # to the result: the model saved, every error known (verification comes after)
    # After the result (Pipeline.finish): verification; None until then. A result with `status`
    # "ok" and this None is not complete yet.
    finishing_seconds: float | None = None
    stages: dict[str, float] = field(default_factory=dict)
    verification: VerificationSummary | None = None
    findings: list[Finding] = field(default_factory=list)
    closure: list[str] = field(default_factory=list)  # workspace files the target imported
    # Where the modules the target looked for in the workspace and did not find would be
    # (pipeline/target/absent_modules.py): their appearance changes what it exports.
    absent: list[str] = field(default_factory=list)
    lines: list[LineInfo] = field(default_factory=list)
    node_count: int | None = None
    graph: GraphSummary | None = None  # the ONNX graph in brief, when the export built one
    cost: InferenceCost | None = None  # what each line costs at inference, when the verification run was profiled
    model_location: Location | None = None  # where the model callable is defined
    shapes_proposal: ShapesProposal | None = None  # a dynamic-shapes factory, when the target declares none
    written: list[WrittenFile] = field(default_factory=list)  # the model's files as the save wrote them
    export_id: str = ""  # this export's own id, also written in its report (which must describe it)
    cached: bool = False  # set by the server when the result came from the cache

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        if self.verification is not None:
            data["verification"] = self.verification.to_dict()
        return data

    @classmethod
    def failure(cls, target: str, code: str, message: str, *, stage: str = "load",
                location: Location | None = None) -> ExportResult:
        """The result of an export that could not run at all (the worker would not start, the
        service or the server failed): one finding, at `location` if the caller knows one (the
        server and the CLI show a finding without one at the target's definition)."""
        finding = Finding(code=code, message=message, stage=stage, location=location)
        return cls(target=target, status="failed", findings=[finding])

    def elsewhere(self) -> str:
        """For a failed export whose first error is not in the model's own file (an import in
        another module, shared with other targets; a reference in the config): that error in a
        few words and where, ` — import failed: … No module named 'torchvision' (dino.py:9)`, for
        the status lines that stand for the target. Empty otherwise."""
        first = next((f for f in self.findings if f.severity == "error"), None)
        if self.status == "ok" or first is None:
            return ""
        location = first.location
        model_file = self.model_location.file if self.model_location else None
        if location is not None and location.file == model_file:
            return ""
        words = next((line.strip() for line in first.message.splitlines() if line.strip()), first.code)
        words = words if len(words) <= 90 else words[:89] + "…"
        if location is not None:
            where = f" ({location.file.replace(chr(92), '/').rsplit('/', 1)[-1]}:{location.line})"
        else:
            where = f" (the config's `{first.reference}`)" if first.reference else ""
        return f" — {words}{where}"


# -- cost per line ------------------------------------------------------------------------------

@dataclass
class LineCost(Plain):
    """What one source line costs at inference: the time onnxruntime's kernels for its nodes took
    in the profiled verification run (exporter/pipeline/output/line_costs.py)."""

    file: str
    line: int
    code: str = ""  # the line's text as the export saw it, stripped
    microseconds: float = 0.0
    share: float = 0.0  # of every kernel's time in the run, 0-1
    kernels: dict[str, int] = field(default_factory=dict)  # op type as onnxruntime ran it -> kernels
    kernel_us: dict[str, float] = field(default_factory=dict)  # op type -> their microseconds

    def describe(self) -> str:
        """"18 % of inference (2.41 ms), 3 MatMul, 1 Add": the op types that took most of the
        line's time first (at most two)."""
        ranked = sorted(self.kernels, key=lambda op: (-self.kernel_us.get(op, 0.0), op))
        ops = ", ".join(f"{self.kernels[op]} {op}" for op in ranked[:2])
        return f"{percent(self.share)} of inference ({duration_us(self.microseconds)})" + (f", {ops}" if ops else "")


def percent(share: float) -> str:
    """"18 %", "0.4 %", "<0.1 %"."""
    value = share * 100
    if value >= 9.5:
        return f"{value:.0f} %"
    if value >= 0.05:
        return f"{value:.1f} %"
    return "<0.1 %" if value > 0 else "0 %"


def duration_us(microseconds: float) -> str:
    """"412 µs", "2.41 ms", "1.20 s"."""
    if microseconds >= 1_000_000:
        return f"{microseconds / 1_000_000:.2f} s"
    if microseconds >= 1000:
        return f"{microseconds / 1000:.2f} ms"
    return f"{microseconds:.0f} µs"


@dataclass
class InferenceCost(Plain):
    """onnxruntime's profile of the verification run, by the user's line (ExportResult.cost).

    `total_us` is the sum of every kernel's time in the profile; the lines' times and `other_us`
    add up to it exactly (each kernel counts once, for one line or for none)."""

    total_us: float = 0.0
    run_us: float = 0.0  # the run as onnxruntime timed it (its `model_run` event): kernels and the time between them
    kernel_count: int = 0
    threads: int = 1  # onnxruntime's intra-op threads in the run
    lines: list[LineCost] = field(default_factory=list)  # the most expensive first
    other_us: float = 0.0  # kernels of nodes no line of the user's code made
    other_kernels: dict[str, int] = field(default_factory=dict)
    profile: str | None = None  # onnxruntime's profile as it wrote it (JSON: chrome://tracing, Perfetto)
    seconds: float = 0.0  # onnxlens's own work on the profile (reading it, the lines)


# -- verification -------------------------------------------------------------------------------

def _without_none(data: dict[str, Any]) -> dict[str, Any]:
    """Optional details are absent, not null, in the JSON output (as they always were)."""
    return {key: value for key, value in data.items() if value is not None}


@dataclass
class OutputComparison(Plain):
    """One graph output compared elementwise (exporter/verify/tolerance.py: torch.isclose's form
    with a noise floor at the output's magnitude)."""

    name: str
    compared: bool
    passed: bool
    max_abs_diff: float
    max_rel_diff: float
    dtype: str = ""
    shape: list[int] = field(default_factory=list)
    note: str | None = None
    nan_mismatches: int | None = None
    # The tolerance applied to this output (exporter/verify/tolerance.py): rtol and atol (its
    # dtype's, or the target's settings), and the noise floor (its dtype's eps units at the
    # output's largest |value|); an element passes within max(atol, noise) + rtol * |torch|.
    rtol: float | None = None
    atol: float | None = None
    noise: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return _without_none(dataclasses.asdict(self))


@dataclass
class InputDrift(Plain):
    """One input of the first diverging op: torch's value against the one the whole ONNX model
    computed for it."""

    name: str  # the FX node (or program input) that computed it
    max_abs_diff: float = 0.0
    max_rel_diff: float = 0.0


@dataclass
class MismatchVerdict(Plain):
    """Whether the first diverging op is wrong or its inputs already drifted
    (exporter/verify/verdict.py): the op's ONNX nodes run alone on torch's own inputs to it,
    compared with torch's output for it.

    `kind`: "op" (alone, on the same inputs, it computes something else than torch: its
    translation differs), "drift" (alone it agrees with torch: its inputs already differed, by
    accumulated float error), "rounding" (alone it differs past the tolerance, but no more than
    torch's own result differs from the op computed in float64: float rounding, not a wrong op)
    or "context" (alone it agrees, and the whole model computed its inputs exactly: onnxruntime
    computes it otherwise inside the model)."""

    kind: str
    onnx_nodes: list[str] = field(default_factory=list)  # the op types run alone, in graph order
    alone_max_abs_diff: float = 0.0  # alone on torch's inputs, against torch's output
    alone_max_rel_diff: float = 0.0
    alone_passed: bool = False  # within the verification's tolerance
    alone_tolerance: str = ""  # the tolerance it was compared with (findings.describe_tolerance)
    inputs: list[InputDrift] = field(default_factory=list)
    inputs_max_abs_diff: float = 0.0
    # The float64 check, when alone it differs: the largest difference from the op computed in
    # float64 on the same inputs, of torch's own result and of the ONNX nodes' alone.
    torch_float64_diff: float | None = None
    onnx_float64_diff: float | None = None
    seconds: float = 0.0

    def sentence(self) -> str:
        """What the diagnostic's message says of it."""
        ops = ", ".join(dict.fromkeys(self.onnx_nodes)) or "its ONNX nodes"
        alone = f"max abs diff {self.alone_max_abs_diff:.3g}"
        if self.kind == "op":
            rounding = (f"; torch's own float rounding there is {self.torch_float64_diff:.3g}"
                        if self.torch_float64_diff is not None else "")
            return (f"this op's translation differs from torch: run alone on torch's own inputs to it, "
                    f"ONNX's {ops} differ from torch's output ({alone}{rounding})")
        if self.kind == "drift":
            return (f"drift, not this op: run alone on torch's own inputs to it, ONNX's {ops} agree with torch "
                    f"({alone}); its inputs already differ by up to {self.inputs_max_abs_diff:.3g} "
                    f"(accumulated float error)")
        if self.kind == "rounding":
            return (f"float rounding, not a wrong op: run alone on torch's own inputs to it, ONNX's {ops} differ "
                    f"from torch ({alone}) no more than torch's own result differs from the op in float64 "
                    f"({self.torch_float64_diff:.3g} vs {self.onnx_float64_diff:.3g} for ONNX)")
        return (f"run alone on torch's own inputs to it, which the whole model computed exactly, ONNX's {ops} "
                f"agree with torch ({alone}): onnxruntime computes it otherwise inside the whole model "
                f"(its graph optimizations)")


@dataclass
class FirstMismatch(Plain):
    """The first value in the graph past tolerance."""

    node: str  # FX node name
    target: str  # the torch op it calls
    onnx_op: str | None = None
    module: str | None = None  # module path, e.g. "layers.2.ff.0"
    output: str | None = None  # the graph output's name, when the first value is an output
    max_abs_diff: float = 0.0
    max_rel_diff: float = 0.0
    verdict: MismatchVerdict | None = None  # a wrong op or drift (exporter/verify/verdict.py)
    verdict_note: str | None = None  # why there is no verdict, when there is none

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        for key in ("verdict", "verdict_note"):  # absent when there is none (the other keys as they always were)
            if data[key] is None:
                del data[key]
        return data



@dataclass
class VerificationSummary(Plain):
    """onnxruntime against torch on the example inputs (`verification` in the JSON output)."""

    passed: bool = True
    # The target's `rtol`/`atol` settings; None: each output's dtype's default (the tolerance
    # each output was compared with is in `outputs`).
    rtol: float | None = None
    atol: float | None = None
    max_abs_diff: float = 0.0
    max_rel_diff: float = 0.0
    compared: int = 0  # outputs compared
    outputs: list[OutputComparison] = field(default_factory=list)
    seconds: float | None = None
    # What it ran on, when not the example inputs themselves (`verify-inputs = "small"`:
    # `x: [1, 4, 256] instead of [4, 16, 256]`).
    inputs: str | None = None
    # True: not run again; the summary of an earlier export whose verification depended on the
    # same things (exporter/verify/reuse.py: the ONNX graph and its weights, the torch program,
    # the inputs, the settings, the versions).
    reused: bool | None = None
    note: str | None = None
    error: str | None = None  # why verification did not (fully) run
    # Which side could not run: "inputs" (they do not fit the model), "torch", "onnxruntime",
    # "onnxlens" (a bug of ours); None when it ran.
    error_source: str | None = None
    first_mismatch: FirstMismatch | None = None
    intermediates_compared: int | None = None
    localisation_seconds: float | None = None
    localisation_error: str | None = None
    # The second-shape check (exporter/verify/second_shape.py): the other sizes tried, whether
    # onnxruntime and torch agreed there, and its time.
    other_sizes: str | None = None
    other_sizes_passed: bool | None = None
    # Larger sizes torch itself refused (the model's code takes fewer sizes than its dynamic
    # dimensions declare): the sizes and torch's error.
    other_sizes_refused: str | None = None
    other_sizes_seconds: float | None = None

    def to_dict(self) -> dict[str, Any]:
        data = _without_none(dataclasses.asdict(self))
        data["rtol"], data["atol"] = self.rtol, self.atol  # always present: null is "by dtype"
        data["outputs"] = [output.to_dict() for output in self.outputs]
        if self.first_mismatch is not None:
            data["first_mismatch"] = self.first_mismatch.to_dict()
        return data
