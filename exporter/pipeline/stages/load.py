"""The load stage: the target's code imported fresh, its factories called, its registry built.

The imports and their findings are target/code.py's; this stage puts the pieces on the job: the
model, the inputs (args/kwargs as the public API takes them), the dynamic shapes, the opset and a
private registry with the target's custom translations; and whether the model is weights-free
(weights.py: later stages skip what needs data, and a meta model's inputs go to meta too).

The factories run with the target's kept random fills (kept_fills.py) when the job has them: a
random initialisation the previous export of the target computed is replayed, byte for byte.
"""

from __future__ import annotations

from onnxlens.exporter import references
import onnxlens.exporter.pipeline.target.code as loading
import onnxlens.exporter.pipeline.target.kept_fills as kept_fills
import onnxlens.exporter.pipeline.target.weights as weights
from onnxlens.exporter.locations import is_user_code, model_code
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.proposals.dynamic_shapes import propose
from onnxlens.exporter.pipeline.tables import DEFAULT_OPSET, custom_table_key, validate_custom_table
from onnxlens.exporter.torch_internals.active import internals
from onnxlens.exporter.types import Finding


def run(job: Job) -> None:
    import torch

    spec = job.spec
    loading.forget_workspace_modules(job.workspace)
    job.loader = loader = loading.Loader(spec.root, job.workspace)
    try:
        model_factory = loader.resolve(spec.model, "model")
        job.result.model_location = loading.definition_location(model_factory)
        inputs_factory = loader.resolve(spec.inputs, "inputs")
        shapes_factory = loader.resolve(spec.dynamic_shapes, "dynamic-shapes") if spec.dynamic_shapes else None
        custom = loader.resolve(spec.custom_translations, "custom-translations") if spec.custom_translations else None
        with kept_fills.replayed(job):
            model = loader.call_factory(model_factory, "model")
            job.raw_inputs = loader.call_factory(inputs_factory, "inputs")
            args, kwargs = loading.split_inputs(job.raw_inputs)
            dynamic_shapes = loader.call_factory(shapes_factory, "dynamic-shapes") if shapes_factory else None
        job.shapes_location = loading.definition_location(shapes_factory) if shapes_factory else None
        if callable(custom) and not isinstance(custom, dict):  # a function building the table
            custom = loader.call_factory(custom, "custom-translations")
    except loading.LoadError as error:
        job.error = error.cause
        if error.finding.location is None and error.finding.reference is None:
            error.finding.location = job.fallback
        job.fail([error.finding])
    if not isinstance(model, torch.nn.Module):
        returned = loader.returned.get("model")
        job.fail([Finding(code="setup", stage="load",
                          location=returned if returned and is_user_code(returned.file, job.workspace) else job.fallback,
                          message=f"the model factory {spec.model} returned {type(model).__name__}, not a torch.nn.Module")])
    problems = validate_custom_table(custom) if custom is not None else []
    if problems:
        location = references.definition_location(spec.root, spec.custom_translations)
        job.fail([Finding(code="setup", stage="load", location=location,
                          message=f"custom-translations {spec.custom_translations}: " + "; ".join(problems))])
    # The model's own code counts as model code wherever it is installed (files.py).
    job.workspace.model_files = model_code(type(module) for module in model.modules())
    if getattr(model, "training", False):
        job.log(f"{spec.name}: the model is in training mode; call model.eval() in the factory "
                "unless that is intended (dropout and batch norm export differently)")
    # As the public API: a trailing dict in args is the kwargs.
    if not kwargs and args and isinstance(args[-1], dict):
        args, kwargs = args[:-1], args[-1]
    job.weights_free = weights.weights_free(model)
    if job.weights_free is not None:
        if job.weights_free.device == "meta":  # torch.export needs the inputs on the weights' device
            args, kwargs, job.weights_free.inputs_moved = weights.inputs_on_meta(args, kwargs)
        job.log(f"{spec.name}: weights-free model ({job.weights_free.describe()}): "
                "exporting the graph only, without optimization or verification")
    job.result.shapes_proposal = propose(model, args, kwargs or {})  # declared or not: the fix may extend
    job.raw_dynamic_shapes = dynamic_shapes  # string dims name the ONNX axes after export
    if internals.FULL:  # the public API converts string dims itself
        dynamic_shapes, job.need_axis_mapping = internals.dims_from_strings(dynamic_shapes)
    job.target = loading.LoadedTarget(model=model, args=args, kwargs=kwargs or {},
                                      dynamic_shapes=dynamic_shapes, custom_translations=custom)
    job.opset = spec.opset if spec.opset is not None else DEFAULT_OPSET
    if not internals.FULL:  # the public API builds its own registry
        return
    job.custom_key = custom_table_key(custom)
    rebuilds = len(job.tables.rebuilds)
    job.registry = job.tables.registry(job.opset, custom)
    for rebuild in job.tables.rebuilds[rebuilds:]:  # the user's imports registered ops torchlib translates
        job.log(f"{spec.name}: {rebuild.describe()}")
