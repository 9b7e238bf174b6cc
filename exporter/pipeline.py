"""The export pipeline: load -> capture -> decompose -> scan -> translate -> check -> verify -> save.

One `Pipeline` lives across jobs (in the zygote, before it forks; or in-process in tests and
benchmarks). It keeps the ONNX registry, the decomposition tables and the CIA op set built (see
tables.py); each `run` builds a private registry copy when the target has custom translations.

The default path reproduces `torch.onnx.export(model, args, kwargs, dynamo=True, ...)` step by
step with torch's own pieces (capture strategies, decomposition tables, `_core` translation,
version conversion, optimize, renames, save with external data), so the files are
byte-identical to the public API's; what differs is what happens on failure: every problem is
reported, on the user's line, and nothing is written.

Never raises: anything unexpected in our own code becomes a finding of the stage it happened in.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
import traceback
from typing import Any, Callable, Iterator

from onnxlens.exporter.types import ExportResult, Finding, Location, Related, TargetSpec

EventSink = Callable[[dict[str, Any]], None]

# The code of a finding for an unexpected failure in each stage.
_STAGE_CODES = {
    "load": "setup", "capture": "torch-export", "decompose": "decomposition", "scan": "translation",
    "translate": "translation", "check": "onnx-checker", "verify": "translation", "save": "translation",
}


class _Stop(Exception):
    """A stage produced error findings: the pipeline ends here (the report is still written)."""


class _Job:
    """The state of one run: what each stage produced, for the next stages and the report."""

    def __init__(self, spec: TargetSpec, on_event: EventSink) -> None:
        from onnxlens.exporter.locations import Workspace

        self.spec = spec
        self.on_event = on_event
        self.result = ExportResult(target=spec.name, status="failed")
        self.workspace = Workspace(spec.root, os.path.dirname(os.path.abspath(spec.output)))
        self.loader = None
        self.target = None  # loader.LoadedTarget
        self.registry = None
        self.custom_key: tuple = ()
        self.opset: int = 0
        self.program = None  # captured ExportedProgram
        self.decomposed = None
        self.onnx_program = None
        self.need_axis_mapping = False
        self.anchors: set = set()  # helper-frame anchors the capture used (stacks.py)
        self.shapes_location: Location | None = None  # the dynamic-shapes factory's definition
        self.raw_dynamic_shapes = None
        self.error: BaseException | None = None
        self.stage: str = "load"

    def emit(self, event: dict[str, Any]) -> None:
        try:
            self.on_event(event)
        except Exception:  # noqa: BLE001 - a broken listener must not break the export
            pass

    def log(self, text: str) -> None:
        self.emit({"event": "log", "text": text})

    def fallback(self) -> Location | None:
        return self.result.model_location

    def fail(self, findings: list[Finding]) -> None:
        self.result.findings.extend(findings)
        raise _Stop()


class Pipeline:
    def __init__(self) -> None:
        from onnxlens.exporter.tables import Tables

        self.tables = Tables()

    # -- public -------------------------------------------------------------------------------

    def warm_up(self) -> None:
        """One tiny export in memory: builds the tables and pays torch's lazy first-export costs."""
        import torch

        from onnxlens.exporter.tables import DEFAULT_OPSET

        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()).eval()
        registry = self.tables.registry(DEFAULT_OPSET)
        program = torch.export.export(model, (torch.randn(2, 4),), strict=False)
        decomposed = _decompose(program, self.tables.decompositions(registry))
        onnx_program = _translate(decomposed, registry, DEFAULT_OPSET)
        onnx_program.model_proto.SerializeToString()
        # Translating imported modules that define op namespaces (torch.ops._dir grew): build the
        # tables for the namespaces jobs will see, or every forked child would rebuild them.
        self.tables.decompositions(registry)

    def run(self, spec: TargetSpec, on_event: EventSink = lambda event: None) -> ExportResult:
        start = time.perf_counter()
        job = _Job(spec, on_event)
        try:
            from torch.onnx._internal.exporter import _flags

            with self._stage(job, "load"):
                self._load(job)
            # As `_core.export` does: user code may ask torch.onnx.is_in_onnx_export().
            _flags._is_onnx_exporting = True
            try:
                with self._stage(job, "capture"):
                    self._capture(job)
                with self._stage(job, "decompose"):
                    self._decompose(job)
                with self._stage(job, "scan"):
                    self._scan(job)
                with self._stage(job, "translate"):
                    self._translate(job)
            finally:
                _flags._is_onnx_exporting = False
            with self._stage(job, "check"):
                self._check(job)
            with self._stage(job, "verify"):
                self._verify(job)
            with self._stage(job, "save"):
                self._save(job)
        except _Stop:
            pass
        except BaseException as error:  # noqa: BLE001 - our own bugs become findings, never tracebacks
            if isinstance(error, KeyboardInterrupt):
                raise
            job.error = error
            job.result.findings.append(self._internal_finding(job, error))
        finally:
            result = job.result
            if job.loader is not None:
                result.closure = job.loader.closure()
            if any(f.severity == "error" for f in result.findings):
                result.status = "failed"
                result.onnx = None
            # Before the report, which shows it; the report itself takes milliseconds.
            result.seconds = time.perf_counter() - start
            self._write_report(job)
        return result

    # -- stages -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _stage(self, job: _Job, name: str) -> Iterator[None]:
        job.stage = name
        job.emit({"event": "stage", "stage": name, "state": "begin", "seconds": 0.0})
        begin = time.perf_counter()
        try:
            yield
        finally:
            seconds = time.perf_counter() - begin
            job.result.stages[name] = seconds
            job.emit({"event": "stage", "stage": name, "state": "end", "seconds": seconds})

    def _load(self, job: _Job) -> None:
        from onnxlens.exporter import loader as loading
        from onnxlens.exporter.tables import DEFAULT_OPSET, custom_table_key, validate_custom_table

        spec = job.spec
        loading.forget_workspace_modules(job.workspace)
        job.loader = loader = loading.Loader(spec.root, job.workspace)
        try:
            model_factory = loader.resolve(spec.model, "model")
            job.result.model_location = loading.definition_location(model_factory)
            inputs_factory = loader.resolve(spec.inputs, "inputs")
            shapes_factory = loader.resolve(spec.dynamic_shapes, "dynamic-shapes") if spec.dynamic_shapes else None
            custom = loader.resolve(spec.custom_translations, "custom-translations") if spec.custom_translations else None
            model = loader.call_factory(model_factory, "model")
            args, kwargs = loading.split_inputs(loader.call_factory(inputs_factory, "inputs"))
            dynamic_shapes = loader.call_factory(shapes_factory, "dynamic-shapes") if shapes_factory else None
            job.shapes_location = loading.definition_location(shapes_factory) if shapes_factory else None
            if callable(custom) and not isinstance(custom, dict):  # a function building the table
                custom = loader.call_factory(custom, "custom-translations")
        except loading.LoadError as error:
            job.error = error.cause
            if error.finding.location is None:
                error.finding.location = job.fallback()
            job.fail([error.finding])
        import torch

        if not isinstance(model, torch.nn.Module):
            job.fail([Finding(code="setup", stage="load", location=job.fallback(),
                              message=f"the model factory {spec.model} returned {type(model).__name__}, not a torch.nn.Module")])
        problems = validate_custom_table(custom) if custom is not None else []
        if problems:
            job.fail([Finding(code="setup", stage="load", location=_reference_location(spec.custom_translations, spec.root),
                              message=f"custom-translations {spec.custom_translations}: " + "; ".join(problems))])
        if getattr(model, "training", False):
            job.log(f"{spec.name}: the model is in training mode; call model.eval() in the factory "
                    "unless that is intended (dropout and batch norm export differently)")
        # As the public API: a trailing dict in args is the kwargs.
        if not kwargs and args and isinstance(args[-1], dict):
            args, kwargs = args[:-1], args[-1]
        from torch.onnx._internal.exporter import _dynamic_shapes

        job.raw_dynamic_shapes = dynamic_shapes  # string dims name the ONNX axes after export
        dynamic_shapes, job.need_axis_mapping = _dynamic_shapes.convert_str_to_export_dim(dynamic_shapes)
        job.target = loading.LoadedTarget(model=model, args=args, kwargs=kwargs or {},
                                          dynamic_shapes=dynamic_shapes, custom_translations=custom)
        job.opset = spec.opset if spec.opset is not None else DEFAULT_OPSET
        job.custom_key = custom_table_key(custom)
        job.registry = self.tables.registry(job.opset, custom)

    def _capture(self, job: _Job) -> None:
        from onnxlens.exporter import capture as capturing
        from onnxlens.exporter.stacks import helper_frames_kept

        target = job.target
        with helper_frames_kept(_workspace_files(job)) as anchors:
            captured = capturing.capture(target.model, target.args, target.kwargs, target.dynamic_shapes, job.log)
        if captured.program is not None:
            job.program = captured.program
            # Only non-strict traces carry the extra helper frames (see stacks.py).
            job.anchors = anchors if captured.strategy == "non-strict" else set()
            self._write_program_dump(job)
            self._check_dynamic_dims(job)
            return
        job.error = captured.attempts[0].error if captured.attempts else None
        draft = []
        if any(capturing.is_data_dependent(a.error) for a in captured.attempts):
            try:
                draft = capturing.draft_failures(target.model, target.args, target.kwargs, target.dynamic_shapes)
            except Exception as error:  # noqa: BLE001 - draft_export is a bonus; its failure is not news
                job.log(f"draft_export could not collect more problems: {type(error).__name__}: {error}")
        job.fail(capturing.findings_for_failure(captured, job.workspace, job.fallback(), draft))

    def _check_dynamic_dims(self, job: _Job) -> None:
        """Warn when dimensions asked to be dynamic came out static.

        When the model's code forces a dimension to one value (say `x.reshape(16)` of a
        (batch, 4) input), torch.export refuses the dynamic shape, and the exporter silently retries
        with the fixes torch suggests: the export "works" but the ONNX model has a fixed size.
        """
        import torch

        requested = _count_dynamic(job.target.dynamic_shapes)
        if not requested:
            return
        specs = job.program.graph_signature.input_specs
        user_inputs = {spec.arg.name for spec in specs if spec.kind.name == "USER_INPUT"}
        shapes = []
        dynamic = 0
        for node in job.program.graph.nodes:
            if node.op == "placeholder" and node.name in user_inputs:
                value = node.meta.get("val")
                if isinstance(value, torch.Tensor):
                    dynamic += sum(1 for dim in value.shape if isinstance(dim, torch.SymInt))
                    shapes.append(f"{node.name}: [{', '.join(str(d) for d in value.shape)}]")
        if dynamic >= requested:
            return
        location = job.shapes_location or job.fallback()
        job.result.findings.append(Finding(
            code="torch-export", severity="warning", stage="capture", location=location,
            source_line=None, docs_url="https://pytorch.org/docs/stable/export.html#dynamic-shapes",
            message=(f"{requested - dynamic} of the {requested} dimensions declared dynamic came out static: "
                     "the model's code fixes their size, and torch.export specialized them "
                     f"(the exported inputs are {'; '.join(shapes)}). The ONNX model only accepts those sizes.")))

    def _decompose(self, job: _Job) -> None:
        from onnxlens.exporter.stacks import restore_stock_traces

        try:
            job.decomposed = _decompose(job.program, self.tables.decompositions(job.registry, job.custom_key))
            restore_stock_traces(job.decomposed, job.anchors)
        except Exception as error:  # noqa: BLE001 - any decomposition failure is a finding
            job.error = error
            job.fail([_error_finding(job, error, "decomposition", "decompose",
                                     "decomposing the exported program failed")])

    def _scan(self, job: _Job) -> None:
        from onnxlens.exporter import scan as scanning

        missing = scanning.unsupported_ops(job.decomposed, job.registry)
        if not missing:
            return
        # Ops traced through generated code (torch.cond / while_loop branches) lack their line.
        in_branches = any(frame.file.startswith("<eval_with_key>") for op in missing for frame in op.frames)
        located = self._locate_in_branches(job, missing) if in_branches else missing
        job.fail(scanning.findings_for(located, job.workspace, job.fallback()))

    def _locate_in_branches(self, job: _Job, missing: list) -> list:
        """Re-capture strictly to blame the innermost user line of ops in torch.cond branches.

        Non-strict capture (with helper frames kept, see stacks.py) traces torch.cond branches
        through dynamo-generated code and records them only down to the `torch.cond(...)` call;
        strict capture records the whole user stack, branches included. On this failure path
        only, each op gets the deepest user chain either capture found.
        """
        from torch.onnx._internal.exporter import _capture_strategies

        from onnxlens.exporter import scan as scanning

        try:
            outcome = _capture_strategies.TorchExportStrictStrategy(verbose=False)(
                job.target.model, job.target.args, job.target.kwargs, dynamic_shapes=job.target.dynamic_shapes)
            if outcome.exported_program is None:
                return missing
            decomposed = _decompose(outcome.exported_program, self.tables.decompositions(job.registry, job.custom_key))
            strict = scanning.unsupported_ops(decomposed, job.registry)
        except Exception as error:  # noqa: BLE001 - the non-strict lines still stand
            job.log(f"strict re-capture to locate ops failed: {type(error).__name__}: {error}")
            return missing
        return scanning.deepest_frames(missing, [strict], job.workspace)

    def _translate(self, job: _Job) -> None:
        from onnxlens.exporter.lines import line_infos

        try:
            job.onnx_program = _translate(job.decomposed, job.registry, job.opset, job.spec.input_names,
                                          job.spec.output_names)
            if job.need_axis_mapping and job.raw_dynamic_shapes is not None:
                job.onnx_program._rename_dynamic_axes(job.raw_dynamic_shapes)
        except Exception as error:  # noqa: BLE001 - any translation failure is a finding
            job.error = error
            job.fail([_error_finding(job, error, "translation", "translate", "translating to ONNX failed")])
        graph = job.onnx_program.model.graph
        job.result.node_count = len(graph)
        from onnxlens.exporter.scan import graph_modules
        from onnxlens.exporter.stacks import FULL_TRACE

        full_traces: dict[str, str] = {}
        for module in graph_modules(job.decomposed):
            for node in module.graph.nodes:
                if FULL_TRACE in node.meta:
                    full_traces.setdefault(node.name, node.meta[FULL_TRACE])
        job.result.lines = line_infos(job.onnx_program.model, job.workspace, full_traces)

    def _check(self, job: _Job) -> None:
        import onnx
        from torch.onnx._internal.exporter import _onnx_program

        if _onnx_program._count_initializer_size(job.onnx_program.model.graph) > 1_800_000_000:
            # A protobuf message cannot exceed 2 GB: the checker cannot take such a model in memory.
            job.log("model weights over 2 GB: onnx.checker skipped")
            return
        try:
            onnx.checker.check_model(job.onnx_program.model_proto, full_check=True)
        except Exception as error:  # noqa: BLE001 - checker errors come in several types
            job.error = error
            job.fail([_error_finding(job, error, "onnx-checker", "check", "onnx.checker rejected the model")])

    def _verify(self, job: _Job) -> None:
        if not job.spec.verify:
            return
        from onnxlens.exporter.verify import verify

        try:
            summary, findings = verify(job.decomposed, job.onnx_program, job.target.args, job.target.kwargs,
                                       root=job.spec.root)
        except NotImplementedError:
            job.log("verification is not available in this build")
            return
        except Exception as error:  # noqa: BLE001 - verification trouble must not lose the export
            job.log(f"verification failed to run: {type(error).__name__}: {error}")
            return
        job.result.verification = summary
        job.result.findings.extend(findings)

    def _save(self, job: _Job) -> None:
        from onnxlens.exporter.save import save_onnx

        if any(f.severity == "error" for f in job.result.findings):
            return
        save_onnx(job.onnx_program, job.spec.output)
        job.result.onnx = job.spec.output
        job.result.status = "ok"

    # -- artifacts ----------------------------------------------------------------------------

    def _write_program_dump(self, job: _Job) -> None:
        from onnxlens.exporter.save import write_text

        path = os.path.join(os.path.dirname(os.path.abspath(job.spec.report)),
                            f"{job.spec.name}.exported_program.txt")
        try:
            job.result.exported_program = write_text(path, str(job.program))
        except Exception as error:  # noqa: BLE001 - a missing dump is not worth failing the export
            job.log(f"could not write the exported program dump: {error}")

    def _write_report(self, job: _Job) -> None:
        try:
            from onnxlens.exporter.report import ReportInputs, write_report

            inputs = ReportInputs(exported_program=job.program, decomposed_program=job.decomposed,
                                  onnx_program=job.onnx_program, registry=job.registry, error=job.error,
                                  model=job.target.model if job.target else None)
            job.result.report = write_report(job.spec, job.result, inputs)
        except NotImplementedError:
            job.result.report = None
        except Exception as error:  # noqa: BLE001 - the report is secondary to the findings
            job.result.report = None
            job.log(f"could not write the export report: {type(error).__name__}: {error}")

    def _internal_finding(self, job: _Job, error: BaseException) -> Finding:
        """An exception no stage expected: user code that raised past torch (sys.exit in forward,
        say), or a bug of ours. Either way a finding of the stage, never a traceback."""
        from onnxlens.exporter.locations import frames_from_summary

        code = _STAGE_CODES.get(job.stage, "translation")
        frames = frames_from_summary(traceback.extract_tb(error.__traceback__))
        if any(job.workspace.contains(frame.file) for frame in frames):
            context = f"your code raised during the {job.stage} stage"
        else:
            context = f"onnxlens failed in the {job.stage} stage (please report this)"
        return _error_finding(job, error, code, job.stage, context)


# -- the export steps, as `_core.export` does them ----------------------------------------------

def _decompose(program: Any, tables: Any) -> Any:
    """`_core._prepare_exported_program_for_export`, with the decomposition tables given."""
    import torch
    from torch.export import exported_program as _exported_program
    from torch.onnx._internal.exporter import _fx_passes

    def run() -> Any:
        return _exported_program._decompose_exported_program(
            program, cia_to_decomp=tables.cia_to_decomp, python_decomp_table=tables.python_decomp_table,
            joint_loss_index=None, decompose_custom_triton_ops=False)

    with torch.fx.experimental._config.patch(backed_size_oblivious=True):
        decomposed = _exported_program._disable_prexisiting_fake_mode(run)()
        graph_module = decomposed.graph_module
        _fx_passes.insert_type_promotion_nodes(graph_module)
        graph_module = _fx_passes.remove_assertion_nodes(graph_module)
        decomposed._graph_module = graph_module
    return decomposed


def _translate(decomposed: Any, registry: Any, opset: int, input_names: list[str] | None = None,
               output_names: list[str] | None = None) -> Any:
    """`_core.export` steps 3+: translate, convert to the opset, optimize, rename."""
    from torch.onnx._internal._lazy_import import onnxscript_apis
    from torch.onnx._internal.exporter import _core, _ir_passes

    onnx_program = _core._exported_program_to_onnx_program(decomposed, registry=registry)
    onnx_program.model = onnxscript_apis.convert_version(onnx_program.model, opset)
    onnx_program.optimize()
    if input_names:
        _ir_passes.rename_inputs(onnx_program.model, input_names)
    if output_names:
        _ir_passes.rename_outputs(onnx_program.model, output_names)
    return onnx_program


# -- findings -----------------------------------------------------------------------------------

def _error_finding(job: _Job, error: BaseException, code: str, stage: str, context: str) -> Finding:
    """A finding for an exception: on the FX node it names if any, else the user's frames, else
    the model's definition. User code that raised on the way (a custom translation, say) is a
    related location."""
    from onnxlens.exporter.locations import frames_from_stack_trace, frames_from_summary, locate, source_line

    chain = []
    item: BaseException | None = error
    while item is not None and item not in chain:
        chain.append(item)
        item = item.__cause__ or item.__context__
    raised_frames = [frame for item in chain for frame in frames_from_summary(traceback.extract_tb(item.__traceback__))]
    location, related, text = None, [], None
    node = _node_named_in(job, error)
    if node is not None:
        from onnxlens.exporter.stacks import full_stack_trace

        location, related, text = locate(frames_from_stack_trace(full_stack_trace(node)), job.workspace)
        innermost = next((f for f in reversed(raised_frames) if job.workspace.contains(f.file)), None)
        if innermost is not None:
            related = [Related(file=os.path.realpath(innermost.file), line=innermost.line,
                               message="raised here", column=innermost.column or 1)] + related
    if location is None:
        location, related, text = locate(raised_frames, job.workspace)
    root = chain[-1]
    message = f"{context}: {type(root).__name__}: {_short(str(root))}"
    if root is not error:
        message += f"\n({type(error).__name__}: {_short(_first_line(str(error)), 400)})"
    if node is not None:
        message = message.replace(f"{context}:", f"{context} at node {node.name} ({node.target}):", 1)
    if location is None and job.fallback() is not None:
        location = Location(**job.fallback().to_dict())
        text = source_line(location.file, location.line)
    return Finding(code=code, stage=stage, location=location, related=related, source_line=text, message=message)


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.strip().splitlines() if line.strip()), "")


def _node_named_in(job: _Job, error: BaseException):
    """The FX node an exporter error names (`Error when translating node ...`, checker node names)."""
    from onnxlens.exporter.scan import graph_modules

    program = job.decomposed
    if program is None:
        return None
    texts = []
    item = error
    while item is not None and len(texts) < 5:
        texts.append(str(item))
        item = item.__cause__ or item.__context__
    text = "\n".join(texts)
    nodes = [node for module in graph_modules(program) for node in module.graph.nodes
             if node.op == "call_function"]
    # The exporter's own wording first ("Error when translating node %name : ..."), then any
    # quoted node name (onnx.checker names ONNX nodes after the FX nodes they came from).
    for node in nodes:
        if node.format_node() in text:
            return node
    for node in nodes:
        if (f"'{node.name}'" in text or f'"{node.name}"' in text
                or re.search(rf"\bnode[ _]{re.escape(node.name)}\b", text)):
            return node
    return None


def _workspace_files(job: _Job) -> list[str]:
    """Loaded workspace modules' files, as imported (frames use these names) and resolved."""
    import sys

    files = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path and job.workspace.contains(path):
            files.add(path)
            files.add(os.path.realpath(path))
    return sorted(files)


def _count_dynamic(shapes: Any) -> int:
    """Dimensions declared dynamic in a dynamic_shapes spec (Dim objects, AUTO/DYNAMIC, names)."""
    import torch

    if shapes is None:
        return 0
    if isinstance(shapes, dict) and all(isinstance(key, int) for key in shapes):
        return sum(1 for value in shapes.values() if _is_dynamic_dim(value, torch))
    if isinstance(shapes, dict):
        return sum(_count_dynamic(value) for value in shapes.values())
    if isinstance(shapes, (list, tuple)):
        if shapes and all(not isinstance(v, (dict, list, tuple)) for v in shapes) and any(
                _is_dynamic_dim(v, torch) for v in shapes):
            return sum(1 for value in shapes if _is_dynamic_dim(value, torch))
        return sum(_count_dynamic(value) for value in shapes)
    return 0


def _is_dynamic_dim(value: Any, torch: Any) -> bool:
    if value is None or isinstance(value, int):
        return False
    dim_hint = getattr(torch.export, "Dim", None)
    if dim_hint is not None and value in (getattr(dim_hint, "STATIC", object()),):
        return False
    return True


def _reference_location(ref: str | None, root: str) -> Location | None:
    if not ref:
        return None
    module_part = ref.rpartition(":")[0]
    if module_part.endswith(".py"):
        return Location(file=os.path.realpath(os.path.join(root, module_part)), line=1)
    return None


def _short(text: str, limit: int = 2000) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + " …"

