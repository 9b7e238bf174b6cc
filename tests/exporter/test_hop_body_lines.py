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

import importlib.util
import shutil
from pathlib import Path

import pytest
import torch

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


PAST_FIRST = "found past the first failure"


def _only_capture_error(result):
    """The one capture error of torch's own failure (none found past it)."""
    assert result.status == "failed"
    [finding] = [f for f in result.findings if f.code == "torch-export"]
    return finding


def test_a_branch_returning_its_input_is_an_error_on_the_return(tmp_path):
    """test_cond_functionalized_input_aliasing_with_aot_func: the first branch traced returns
    its input; stock names the torch.cond call. Its false branch returns a view of its input,
    which torch refuses once the true branch is fixed (checked by hand: `return x.clone()` in
    true_fn, stock's error is then "Input-to-output aliasing detected at nodes l_args_3_0_ and
    view_x"): a finding of its own, found past the first."""
    path, result = _run(tmp_path, "ReturnsInput")
    assert result.status == "failed"
    [finding, behind] = [f for f in result.findings if f.code == "torch-export"]
    assert finding.location.line == line_of(path, "def true_fn(x):") + 1  # its `return x`
    assert finding.source_line.strip() == "return x"
    assert "in `true_fn`, a body of the higher-order op `cond`: it returns one of its inputs" in finding.message
    assert "strict mode fails here too" in finding.message  # both captures agree on the line
    call = line_of(path, "return torch.cond(x.sum() > 0, true_fn, false_fn, [x])")
    assert (str(path), call) in [(r.file, r.line) for r in finding.related]
    assert behind.message.startswith(PAST_FIRST)
    assert "in `false_fn`, a body of the higher-order op `cond`: it returns one of its inputs" in behind.message
    assert behind.location.line == line_of(path, "view_x = x.view(x.shape)")
    assert (str(path), call) in [(r.file, r.line) for r in behind.related]


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


# onnx-diagnostic's model cases as the zoo's peer workspace transcribes them (benchmarks/zoo/peer/,
# MIT): copied into the test's workspace, so that they are the user's code there.
PEER = Path(__file__).resolve().parents[2] / "benchmarks" / "zoo" / "peer"


def _peer_case(root: Path, name: str, **options):
    path = root / f"{name}.py"
    shutil.copy(PEER / f"{name}.py", path)
    references = {key: f"{name}.py:{function}" for key, function in options.items()}
    return path, shared_pipeline().run(spec_for(root, name, f"{name}.py:build_model", f"{name}.py:example_inputs",
                                                **references))


def _stock_failure(module_path: Path, dynamic_shapes: bool) -> BaseException:
    """What stock torch.onnx.export raises on the case (the innermost cause of its error)."""
    spec = importlib.util.spec_from_file_location(f"stock_{module_path.stem}", module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(Exception) as raised:
        torch.onnx.export(module.build_model(), module.example_inputs(), dynamo=True,
                          dynamic_shapes=module.dynamic_shapes() if dynamic_shapes else None)
    error = raised.value
    while error.__cause__ is not None:
        error = error.__cause__
    return error


def test_the_branches_behind_a_cond_operand_error_are_each_a_finding_on_their_return(tmp_path):
    """onnx-diagnostic's `ControlFlowCondNonZero` (torch_export_patches/eval/model_cases.py):
    stock stops at the int among torch.cond's operands (non-strict capture, the cond call).
    Fixed one at a time on copies, by hand: with the int taken by closure, stock refuses
    then_branch ("Output-to-output aliasing detected at nodes child and child_1": its `return`
    hands out positions[0] and positions[1], two views of one nonzero result); with those
    cloned, else_branch (r[0] and r[1] of one torch.where, and input_ids itself); with all
    cloned, stock exports. Strict capture gets past the operand and stops at then_branch; the
    bodies are checked again past that refusal, which shows else_branch too. Before: the cond
    call, and then_branch on its nonzero line; else_branch nowhere."""
    path, result = _peer_case(tmp_path, "cond_nonzero_operands", dynamic_shapes="dynamic_shapes")
    assert result.status == "failed"
    findings = [f for f in result.findings if f.code == "torch-export"]
    call = line_of(path, "a, b, c = torch.cond(")
    then_return = line_of(path, "return (input_ids, positions[0], positions[1])")
    else_return = line_of(path, "return (input_ids, r[0], r[1])")
    assert [f.location.line for f in findings] == [call, then_return, else_return]
    operands, then_branch, else_branch = findings
    assert "Expect operands to be a tuple of possibly nested dict/list/tuple" in operands.message
    assert PAST_FIRST not in then_branch.message and else_branch.message.startswith(PAST_FIRST)
    assert "in `then_branch`, a body of the higher-order op `cond`: it returns one tensor more than once" in (
        then_branch.message)
    assert "in `else_branch`, a body of the higher-order op `cond`" in else_branch.message
    # The op's call and the line that made the tensor the outputs share, related.
    assert [r.line for r in then_branch.related] == [
        call, line_of(path, "positions = torch.nonzero(condition, as_tuple=True)")]
    assert [r.line for r in else_branch.related] == [
        call, line_of(path, "r = torch.where(torch.zeros((1, 1), dtype=torch.bool))")]
    # The bodies checked again leave torch as it was: stock's answer is the same after.
    stock = _stock_failure(path, dynamic_shapes=True)
    assert type(stock).__name__ == "RuntimeError" and str(stock).startswith("Expect operands to be a tuple")


def test_a_scan_body_returning_a_bare_tensor_is_on_its_return_and_its_growing_carry_past_it(tmp_path):
    """onnx-diagnostic's `ModelWithScan` (_doc/technical/plot_simple_for_loop.py): the body given
    to torch.ops.higher_order.scan returns `carried` alone. Non-strict capture traces it, and
    scan's `_extract_carry_and_out` takes `len()` of the body's output, a single node:
    `TypeError: object of type 'Node' has no len()`, raised inside torch's scan code with the
    body's output in hand (an error about the operands would not have it: it stays on the call).
    Fixed on a copy, by hand (`return [carried, carried.clone()]`), stock then refuses the carry:
    "Expected init and carry to have same metadata ... torch.Size([2, 0]) vs torch.Size([2,
    Min(4, u2)])" — `carried = torch.cat([init, cropped], axis=1)` grows every step. Before: the
    scan call only."""
    path, result = _peer_case(tmp_path, "scan_body_returns_tensor")
    assert result.status == "failed"
    findings = {f.location.line: f for f in result.findings if f.code == "torch-export"}
    body_return = line_of(path, "return carried")
    carry = line_of(path, "carried = torch.cat([init, cropped], axis=1)")
    call = line_of(path, "return torch.ops.higher_order.scan(")
    assert sorted(findings) == sorted([body_return, carry, call])
    first = findings[body_return]
    assert first.message.startswith("torch.export (non-strict) failed: TypeError: object of type 'Node' has no len()")
    assert "in `body_scan`, the body of the higher-order op `scan`: torch's code for the op could not read what it " \
           "returns (one value, not a list or tuple)" in first.message
    assert [r.line for r in first.related] == [call]
    behind = findings[carry]
    assert behind.message.startswith(f"{PAST_FIRST} by torch's next check of `scan`")
    assert "Expected init and carry to have same metadata" in behind.message
    assert "torch.Size([2, 0]) vs torch.Size([2, Min(4, u2)])" in behind.message
    assert [r.line for r in behind.related] == [call]
    # Strict capture refuses the call itself (a plain function given to the op): stays there.
    assert "improper combine_fn" in findings[call].message
    stock = _stock_failure(path, dynamic_shapes=False)
    assert type(stock) is TypeError and str(stock) == "object of type 'Node' has no len()"
