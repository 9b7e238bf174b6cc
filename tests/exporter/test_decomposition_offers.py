"""Torch's decompositions the exporter leaves out: offered on an `unsupported-op`
finding when they lead to ops that all have translations, applied with `extra-decompositions`.

The model aggregates graph messages with `Tensor.index_reduce`, which the exporter cannot
translate and torch._decomp cannot decompose; torch._inductor's table can, for "mean" (into
index_put, div, ...), and gives up (returns NotImplemented) for "amax" on the CPU. Whether an
offer is made is decided by tracing the decomposition on the call, so the two differ.
"""

from __future__ import annotations

import inspect

import torch

from tests.exporter.engine_support import shared_pipeline, spec_for, write
from tests.support.workspace import line_of

MODEL = '''
import torch
from torch import nn


class Aggregate(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x, src, dst):
        messages = self.lin(x)[src]
        out = torch.zeros(5, messages.shape[1])
        return out.index_reduce(0, dst, messages, "{reduce}", include_self=False)


def inputs():
    torch.manual_seed(0)
    return (torch.randn(5, 8), torch.tensor([0, 1, 2, 3, 4, 0]), torch.tensor([1, 2, 3, 4, 0, 2]))
'''


def _export(root, reduce="mean", **options):
    write(root, "gnn.py", MODEL.replace("{reduce}", reduce))
    return shared_pipeline().run(spec_for(root, "gnn", "gnn.py:Aggregate", "gnn.py:inputs", **options))


def _index_reduce_finding(result):
    findings = [f for f in result.findings if f.code == "unsupported-op"]
    assert len(findings) == 1, [f.message for f in result.findings]
    return findings[0]


def test_the_decomposition_is_offered_when_it_leads_to_translated_ops(tmp_path):
    result = _export(tmp_path)
    finding = _index_reduce_finding(result)
    assert finding.location.line == line_of(tmp_path / "gnn.py", "out.index_reduce(")
    [offer] = finding.decomposition_offers
    assert offer.op == "aten.index_reduce.default"
    # Where torch writes it, found by reading torch: inductor's index_reduce decomposition.
    from torch._inductor import decomposition
    expected_line = inspect.getsourcelines(decomposition.index_reduce)[1]
    assert offer.source == f"torch/_inductor/decomposition.py:{expected_line}"
    assert "aten.index_put.default" in offer.into and "aten.index_reduce.default" not in offer.into
    assert 'add "aten.index_reduce.default" to the target\'s extra-decompositions' in finding.message
    # The translation stub is still there: the two fixes are alternatives.
    assert [stub.op for stub in finding.translation_stubs] == ["aten.index_reduce.default"]


def test_no_offer_when_the_decomposition_does_not_apply_to_the_call(tmp_path):
    # "amax" on the CPU: inductor's decomposition hands back to the kernel (NotImplemented).
    finding = _index_reduce_finding(_export(tmp_path, reduce="amax"))
    assert finding.decomposition_offers == []
    assert "extra-decompositions" not in finding.message


def test_no_offer_when_torch_has_no_other_decomposition(tmp_path):
    write(tmp_path, "eig.py", '''
        import torch
        from torch import nn

        class Net(nn.Module):
            def forward(self, x):
                return torch.linalg.eigvals(x).real

        def inputs():
            return (torch.randn(3, 3),)
    ''')
    result = shared_pipeline().run(spec_for(tmp_path, "eig", "eig.py:Net", "eig.py:inputs"))
    finding = next(f for f in result.findings if f.code == "unsupported-op")
    assert finding.decomposition_offers == []


def test_extra_decompositions_export_and_verify(tmp_path):
    result = _export(tmp_path, verify=True, extra_decompositions=["aten.index_reduce.default"])
    assert result.status == "ok", [f.message for f in result.findings]
    assert result.verification is not None and result.verification.passed
    assert not [f for f in result.findings if f.severity in ("error", "warning")]


def test_an_overload_packet_names_all_its_overloads(tmp_path):
    result = _export(tmp_path, extra_decompositions=["aten.index_reduce"])
    assert result.status == "ok", [f.message for f in result.findings]


def test_a_name_torch_cannot_use_is_a_warning_and_the_rest_still_applies(tmp_path):
    result = _export(tmp_path, extra_decompositions=["aten.no_such_op.default", "aten.relu.default",
                                                     "aten.index_reduce.default"])
    assert result.status == "ok"
    [warning] = [f for f in result.findings if f.severity == "warning"]
    assert warning.code == "config"
    assert "aten.no_such_op.default is not an op torch knows" in warning.message
    # relu has a translation and torch._decomp's table: nothing more to decompose it with.
    assert "torch has no decomposition of aten.relu.default beyond" in warning.message


def test_the_extra_decomposition_does_not_leak_into_the_next_job(tmp_path):
    _export(tmp_path / "a", extra_decompositions=["aten.index_reduce.default"])
    result = _export(tmp_path / "b")
    assert result.status == "failed"
    assert _index_reduce_finding(result).decomposition_offers
    assert torch.ops.aten.index_reduce.default not in shared_pipeline().tables.decompositions(
        shared_pipeline().tables.registry(18)).python_decomp_table
