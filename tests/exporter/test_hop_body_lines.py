"""Problems inside torch.cond / while_loop / scan bodies, on the body's line.

dynamo traces a higher-order op's body (even in non-strict capture) and checks it as a whole:
an output that is an input or a view of one, an input changed in place. The error names no line
of the body; stock's traceback ends at the op's call. The finding goes on the body's node at
fault (the view, the in-place call), else on the body's `return`, the op's call related. A size
fixed inside a body is fixed in the body's own shape environment, and the input's size only when
the body's guards are checked at the call: the warning goes on the body's line too. A body's
data-dependent branch, which dynamo names, gets the op's call (Python's frame) related.

The branches are transcribed from torch's own suites (test/functorch/test_control_flow.py), each
named in its test, with a tensor predicate so that torch.cond traces both branches.
"""

from __future__ import annotations

from pathlib import Path

from tests.exporter.engine_support import shared_pipeline, spec_for, write
from tests.support.workspace import line_of

MODELS = '''
    import torch
    from torch import nn
    from torch._higher_order_ops.scan import scan
    from torch._higher_order_ops.while_loop import while_loop


    class ReturnsInput(nn.Module):
        def forward(self, x):
            def true_fn(x):
                return x

            def false_fn(x):
                view_x = x.view(x.shape)
                return view_x

            return torch.cond(x.sum() > 0, true_fn, false_fn, [x])


    class MutatesView(nn.Module):
        def forward(self, x):
            def true_fn(x):
                view_x = x.view(x.shape)
                view_x.add_(1)
                return view_x.sin().sum()

            def false_fn(x):
                return x.cos().sum()

            return torch.cond(x.sum() > 0, true_fn, false_fn, [x])


    class LoopReturnsView(nn.Module):
        def forward(self, x):
            def cond_fn(i, x):
                return i < 3

            def body_fn(i, x):
                return i + 1, x.view(x.shape)

            return while_loop(cond_fn, body_fn, (torch.tensor(0), x))


    class ScanCarriesInput(nn.Module):
        def forward(self, xs):
            def body(carry, x):
                return carry, x

            return scan(body, torch.zeros(5), xs)


    class ScanReturnsOneTensorTwice(nn.Module):
        @staticmethod
        def add(carry, y):
            next_carry = carry + y
            return [next_carry, next_carry]

        def forward(self, x):
            init = torch.zeros_like(x[0])
            carry, _out = torch.ops.higher_order.scan(ScanReturnsOneTensorTwice.add, [init], [x],
                                                      additional_inputs=[])
            return carry


    class ScanBranchesOnData(nn.Module):
        def forward(self, xs):
            def body(carry, x):
                if x.sum() > 0:
                    return carry + x, x * 2
                return carry - x, x * 3

            return scan(body, torch.zeros(5), xs)


    class BranchFixesBatch(nn.Module):
        def forward(self, x):
            def true_fn(x):
                return x.reshape(20) * 2

            def false_fn(x):
                return x.reshape(20) - 1

            return torch.cond(x.sum() > 0, true_fn, false_fn, (x,))


    def ones():
        return (torch.ones(4, 5),)


    def batch():
        return {"x": {0: torch.export.Dim.AUTO}}
'''


def _run(root: Path, model: str, **options):
    path = write(root, "bodies.py", MODELS)
    return path, shared_pipeline().run(spec_for(root, model.lower(), f"bodies.py:{model}", "bodies.py:ones", **options))


def _only_capture_error(result):
    assert result.status == "failed"
    [finding] = [f for f in result.findings if f.code == "torch-export"]
    return finding


def test_a_branch_returning_its_input_is_an_error_on_the_return(tmp_path):
    """test_cond_functionalized_input_aliasing_with_aot_func: the first branch traced returns
    its input; stock names the torch.cond call."""
    path, result = _run(tmp_path, "ReturnsInput")
    finding = _only_capture_error(result)
    assert finding.location.line == line_of(path, "def true_fn(x):") + 1  # its `return x`
    assert finding.source_line.strip() == "return x"
    assert "in `true_fn`, a body of the higher-order op `cond`: it returns one of its inputs" in finding.message
    assert "strict mode fails here too" in finding.message  # both captures agree on the line
    call = line_of(path, "return torch.cond(x.sum() > 0, true_fn, false_fn, [x])")
    assert (str(path), call) in [(r.file, r.line) for r in finding.related]


def test_a_branch_changing_its_input_in_place_is_an_error_on_the_in_place_call(tmp_path):
    """test_cond_functionalized_input_mutation_on_true_branch: the mutation goes through a view."""
    path, result = _run(tmp_path, "MutatesView")
    finding = _only_capture_error(result)
    assert finding.location.line == line_of(path, "view_x.add_(1)")
    assert "it changes one of its inputs in place" in finding.message


def test_a_loop_body_returning_a_view_of_its_input_is_an_error_on_the_view(tmp_path):
    path, result = _run(tmp_path, "LoopReturnsView")
    finding = _only_capture_error(result)
    assert finding.location.line == line_of(path, "return i + 1, x.view(x.shape)")
    assert "a body of the higher-order op `while_loop`" in finding.message
    call = line_of(path, "return while_loop(cond_fn, body_fn, (torch.tensor(0), x))")
    assert call in [r.line for r in finding.related]


def test_a_scan_body_carrying_its_input_is_an_error_on_the_return(tmp_path):
    """scan wraps the body in a partial of its own function: the body is found through it."""
    path, result = _run(tmp_path, "ScanCarriesInput")
    finding = _only_capture_error(result)
    assert finding.location.line == line_of(path, "return carry, x")
    assert "in `body`, a body of the higher-order op `scan`" in finding.message


def test_a_data_dependent_branch_in_a_scan_body_is_on_its_line_with_the_call_related(tmp_path):
    """dynamo names the body's line; the op's call, which Python ran (non-strict capture), is
    related. Written here: no library body branches on its data."""
    path, result = _run(tmp_path, "ScanBranchesOnData")
    findings = [f for f in result.findings if f.code == "torch-export"]
    assert result.status == "failed" and findings
    assert findings[0].location.line == line_of(path, "if x.sum() > 0:")
    assert line_of(path, "return scan(body, torch.zeros(5), xs)", 2) in [r.line for r in findings[0].related]


def test_a_size_a_branch_fixes_is_a_warning_on_the_branch_line(tmp_path):
    path, result = _run(tmp_path, "BranchFixesBatch", dynamic_shapes="bodies.py:batch")
    assert result.status == "ok"
    [finding] = [f for f in result.findings if f.code == "torch-export"]
    assert finding.severity == "warning"
    assert finding.location.line == line_of(path, "return x.reshape(20) * 2")
    assert finding.message.startswith("`x` dim 0 is declared dynamic, but this line fixes it to 4")
    call = line_of(path, "return torch.cond(x.sum() > 0, true_fn, false_fn, (x,))")
    assert call in [r.line for r in finding.related]


def test_a_scan_body_returning_one_tensor_twice_is_a_decomposition_error_on_the_return(tmp_path):
    """onnx-diagnostic's `ControlFlowScan` (torch_export_patches/eval/model_cases.py): capture
    accepts the body; the decomposition's functionalization of `scan` finds its outputs aliasing
    ("scan might be aliasing the input or the output!"), naming the scan node only."""
    path, result = _run(tmp_path, "ScanReturnsOneTensorTwice")
    assert result.status == "failed"
    [finding] = [f for f in result.findings if f.code == "decomposition"]
    assert "scan might be aliasing the input or the output" in finding.message
    assert finding.location.line == line_of(path, "return [next_carry, next_carry]")
    call = line_of(path, "carry, _out = torch.ops.higher_order.scan(")
    assert call in [r.line for r in finding.related]
