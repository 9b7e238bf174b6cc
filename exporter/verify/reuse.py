"""An unchanged verification is not run again.

Verification's answer depends on the ONNX model (its graph and its weights), on the program
torch runs, on the inputs, on the target's verification settings and on the versions of torch,
onnxruntime and onnxlens — not on comments, formatting or line numbers, which a save changes
while the graph stays the same. `digest` hashes exactly those: the ONNX graph without its
nodes' metadata (stack traces name lines), every initializer's bytes, the torch program's code
(its submodules' too), the inputs' bytes, the settings and the versions. A passing verification
is kept with its digest (`<output-dir>/cache/<target>.verified.json`, TargetSpec.verification_record);
the next export with the same digest takes its summary (`reused`) instead of running torch and
onnxruntime again (the segment-anything ViT-B image encoder: under a second of hashing instead
of about a minute: benchmarks/VERIFICATION.md).

Trust: the record lives in the workspace, where anyone who can write a file can write one, and
anyone can compute a digest. A record is used only when it carries an HMAC-SHA256 under this
user's key (exporter/user_key.py, as the result cache's entries): a record written by hand, by
another user, committed to a repository or restored on another machine is ignored, and
verification runs (a key that cannot be used: verification runs every time).

Only passing verifications with no finding are kept: a finding carries lines, and lines move.
A program calling an op outside torch's own namespaces (a custom op: its Python kernel is
code no digest here covers) is never reused. A model built with unseeded random weights has
other weights on every save, hence another digest. `onnxlens check --no-cache` and the
editor's "Re-export" run verification again (the server removes the record).

A reused verification ran nothing, so it has no onnxruntime profile: no cost per line
(the pipeline's verify stage logs it). `profile` is one of the settings hashed, so switching
it on verifies, and profiles, again.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any

import torch

from onnxlens.exporter import atomic
from onnxlens.exporter.torch_internals.active import internals
from onnxlens.exporter.types import TargetSpec, VerificationSummary
from onnxlens.exporter.user_key import KeyRefused, user_key
from onnxlens.exporter.versions import exporter_source_digest

# Where the ops and functions a program calls come from when their code is torch's or Python's
# own: what they compute is fixed by the versions (torch.sym_max & co. are module `torch`).
_TORCH_NAMESPACES = {"aten", "prims", "higher_order", "torch", "_operator", "operator", "math", "builtins"}


def digest(program: Any, onnx_model: Any, args: tuple, kwargs: dict, spec: TargetSpec) -> str | None:
    """The digest of what verifying `onnx_model` against `program` on (args, kwargs) depends on;
    None when it cannot be known (a custom op's kernel)."""
    import onnx
    import onnxruntime

    found = hashlib.sha256()
    _text(found, "versions", torch.__version__, onnxruntime.__version__, onnx.__version__, exporter_source_digest())
    # `profile`: a kept verification has no profile, so turning it on verifies (and profiles) again.
    _text(found, "settings", spec.rtol, spec.atol, spec.verify_inputs, spec.second_shape, spec.profile)
    for module in program.graph_module.modules():
        if isinstance(module, torch.fx.GraphModule):
            for node in module.graph.nodes:
                if node.op == "call_function" and _namespace(node.target) not in _TORCH_NAMESPACES:
                    return None
            _text(found, "program", module.code)
    _graph(found, onnx_model.graph)
    for name, function in onnx_model.functions.items():
        _text(found, "function", *name)
        _graph(found, function)
    _text(found, "opsets", sorted(onnx_model.opset_imports.items()))
    for path, leaf in internals.leaves_with_paths((args, kwargs), lambda value: False):
        _text(found, "input", path)
        _value(found, leaf)
    return found.hexdigest()


def reused(spec: TargetSpec, key: str | None) -> VerificationSummary | None:
    """The kept summary of a passing verification with this digest, signed with this user's
    key, or None."""
    if key is None:
        return None
    try:
        with open(spec.verification_record, encoding="utf-8") as file:
            record = json.load(file)
        payload, signature = record["payload"], bytes.fromhex(record["signature"])
        expected = _signature(payload)
        if expected is None or not hmac.compare_digest(expected, signature):
            return None
        kept = json.loads(payload)
        if kept.get("digest") != key:
            return None
        summary = VerificationSummary.from_dict(kept["summary"])
    except (OSError, ValueError, TypeError, KeyError, AttributeError):  # damaged or foreign: not kept
        return None
    summary.reused = True
    return summary


def keep(spec: TargetSpec, key: str | None, summary: VerificationSummary) -> None:
    """Keep a passing verification's summary under its digest, signed (replacing the previous
    one); nothing without a digest or a usable key."""
    if key is None:
        return
    data = summary.to_dict()
    data.pop("reused", None)
    payload = json.dumps({"digest": key, "kept": time.time(), "summary": data})
    signature = _signature(payload)
    if signature is None:
        return
    atomic.write_text(spec.verification_record, json.dumps({"payload": payload, "signature": signature.hex()}))


def _signature(payload: str) -> bytes | None:
    """The HMAC of `payload` under this user's key; None when the key cannot be used."""
    try:
        secret = user_key()
    except KeyRefused:
        return None
    return hmac.new(secret, payload.encode(), hashlib.sha256).digest()


def _namespace(target: Any) -> str:
    """`aten` for torch.ops.aten.add.Tensor, `higher_order` for torch.cond's op; the module of a
    Python function (`_operator` for operator.getitem)."""
    namespace = getattr(target, "namespace", None)  # op overloads and higher-order ops
    return namespace if isinstance(namespace, str) else (getattr(target, "__module__", "") or "")


def _text(found: Any, kind: str, *parts: Any) -> None:
    found.update(f"\0{kind}:{parts!r}".encode())


def _graph(found: Any, graph: Any) -> None:
    """A graph's structure: inputs, outputs, initializers (bytes), nodes (op, values,
    attributes, subgraphs); not its nodes' metadata or doc strings."""
    _text(found, "inputs", [(v.name, str(v.type), str(v.shape)) for v in graph.inputs])
    _text(found, "outputs", [(v.name, str(v.type), str(v.shape)) for v in graph.outputs])
    for name, value in getattr(graph, "initializers", {}).items():
        _text(found, "initializer", name, str(value.dtype), str(value.shape))
        if value.const_value is not None:
            _tensor(found, value.const_value)
    for node in graph:
        _text(found, "node", node.domain, node.op_type, node.overload,
              [v.name if v is not None else "" for v in node.inputs], [v.name for v in node.outputs])
        for name, attribute in node.attributes.items():
            value = attribute.value
            if hasattr(value, "inputs") and hasattr(value, "outputs") and not hasattr(value, "tobytes"):
                _text(found, "subgraph", name)
                _graph(found, value)
            elif isinstance(value, (list, tuple)) and value and all(hasattr(v, "outputs") for v in value):
                for index, subgraph in enumerate(value):
                    _text(found, "subgraph", name, index)
                    _graph(found, subgraph)
            elif hasattr(value, "tobytes"):
                _text(found, "tensor attribute", name, str(value.dtype), str(value.shape))
                _tensor(found, value)
            else:
                _text(found, "attribute", name, str(attribute.type), repr(value))


def _tensor(found: Any, tensor: Any) -> None:
    """An ONNX tensor's bytes, read in place where they are torch's or numpy's."""
    raw = getattr(tensor, "raw", None)
    if isinstance(raw, torch.Tensor):
        _torch_bytes(found, raw)
    else:
        found.update(tensor.tobytes())


def _value(found: Any, value: Any) -> None:
    if isinstance(value, torch.Tensor):
        _text(found, "tensor", str(value.dtype), tuple(value.shape))
        _torch_bytes(found, value)
    else:
        _text(found, "value", type(value).__name__, repr(value))


def _torch_bytes(found: Any, tensor: torch.Tensor) -> None:
    tensor = tensor.detach().cpu().contiguous()
    if tensor.is_complex():
        tensor = torch.view_as_real(tensor.resolve_conj()).contiguous()
    if tensor.numel():
        found.update(tensor.reshape(-1).view(torch.uint8).numpy())
