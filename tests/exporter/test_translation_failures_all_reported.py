"""Every node whose translation fails is a finding on its own line, all at once; a value the
model returns that ONNX cannot hold lands on the `return` that returned it (translation_failures.py,
outputs.py; docs/diagnostics.md "Where a failure outside the unsupported-op scan comes from").

The stock translation stops at its first failing node. Cases:

* shifts by an amount the input holds (`x << n` and `x >> n`, `n = int(s)`): torch's ONNX test
  `test/onnx/test_pytorch_onnx_onnxruntime.py::TestONNXRuntime.test_bitshift` shifts by
  literals, which translate; by a data-dependent amount, `aten.__lshift__.Scalar` and
  `aten.__rshift__.Scalar` both fail in their translations (`int()` of a symbolic value:
  `x << s` / `x >> s`). Ruled out: one finding, the `<<` line.
* segment-anything's `SamOnnxModel.select_masks` (segment_anything/utils/onnx.py, a
  line users hit): `iou_preds + (num_points - 2.5) * score_reweight` with the number of points
  dynamic fails translating `aten.mul.Scalar` (`float()` of a symbolic value); next to an op
  without any translation (`torch.special.zeta`), which the scan stage reports and after which
  the translation never ran. Ruled out: the zeta finding only.
* torch's export test `test/export/test_passes.py::TestPasses.test_remove_auto_functionalized_pass`:
  a custom op that mutates a registered buffer (`Tensor(a!) y`) is wrapped by functionalization
  in `auto_functionalized_v2`, which has no translation; stock does not get as far as asking
  (converting the node's arguments, the wrapped op among them, raises KeyError first). Beside an
  op without any translation (zeta): stock's KeyError on the custom op's line, zeta on its own.
  Ruled out: an unsupported-op finding for the wrapper, an answer stock never gives.
* torch's export tests `test/export/test_serialize.py::TestSerialize.test_serialize_constant_outputs`
  (`return x + 1, None, 1024`) and `test/export/test_export.py::TestExport.test_no_tensor_computation`
  (`return y`, an int input): the program's output node holds a constant, and the exporter
  fails with `'int' object has no attribute 'name'`, naming the output node only. Ruled out: at
  the model's definition.
"""

from __future__ import annotations

import importlib.util

import pytest
import torch

from tests.exporter.engine_support import run_target, write
from tests.support.workspace import line_of

pytestmark = pytest.mark.slow  # library models (segment-anything) and the stock exporter beside

MODELS = '''
import torch
from torch.export import Dim


class Shifts(torch.nn.Module):
    def forward(self, x, s):
        n = int(s)
        left = x << n
        right = x >> n
        return left + right


def shift_inputs():
    return (torch.arange(8, dtype=torch.int64), torch.tensor(2, dtype=torch.int64))


class SelectMasks(torch.nn.Module):
    def forward(self, iou_preds, point_coords):
        num_points = point_coords.shape[1]
        score_reweight = torch.tensor([[1000] + [0] * 3])
        score = iou_preds + (num_points - 2.5) * score_reweight
        return torch.argmax(score, dim=1)


class SelectMasksAndZeta(SelectMasks):
    def forward(self, iou_preds, point_coords):
        return super().forward(iou_preds, point_coords), torch.special.zeta(iou_preds, 2.0)


def mask_inputs():
    return (torch.randn(1, 4), torch.randn(1, 3, 2))


def points_dynamic():
    return {"iou_preds": None, "point_coords": {1: Dim("points")}}


class ConstantOutputs(torch.nn.Module):
    def forward(self, x):
        return x + 1, None, 1024


def ones():
    return (torch.ones(10),)


class NoTensorComputation(torch.nn.Module):
    def forward(self, x, y):
        return y


def list_and_int():
    return ([torch.ones(1, 3)], 1)


class Labelled(torch.nn.Module):
    def forward(self, x):
        return describe(x * 2)


def describe(y):
    return y, "doubled"
'''

# A module a job may import more than once (and the stock run once more): the op is defined
# only where it is not yet.
MUTATING_OP = '''
import torch

try:
    torch.ops.ONNXLENS_TEST_MUTATES.mutator
except AttributeError:
    lib = torch.library.Library("ONNXLENS_TEST_MUTATES", "DEF")
    lib.define("mutator(Tensor x, Tensor(a!) y) -> Tensor")
    lib.impl("mutator", lambda x, y: torch.empty_like(x), "Meta")
    lib.impl("mutator", lambda x, y: x + y.add_(1), "CompositeExplicitAutograd")


class MutatesBufferAndZeta(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("state", torch.zeros(1))

    def forward(self, x):
        y = torch.ops.ONNXLENS_TEST_MUTATES.mutator(x, self.state)
        return torch.special.zeta(y, 2.0)


def three_by_three():
    return (torch.randn(3, 3),)
'''


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("translation-failures")
    write(root, "failing_translations.py", MODELS)
    write(root, "mutating_op.py", MUTATING_OP)
    return root


def import_file(path):
    """The models module as stock's run imports it: apart from the pipeline's imports."""
    spec = importlib.util.spec_from_file_location(f"stock_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(workspace, model, inputs, **options):
    return run_target(workspace, f"failing_translations.py:{model}", f"failing_translations.py:{inputs}", **options)


def test_both_shifts_by_a_data_dependent_amount_are_reported_each_on_its_line(workspace):
    result = run(workspace, "Shifts", "shift_inputs")
    models = workspace / "failing_translations.py"
    assert result.status == "failed"
    assert [(f.code, f.location.line) for f in result.findings] == [
        ("translation", line_of(models, "left = x << n")), ("translation", line_of(models, "right = x >> n"))]
    assert "at node lshift (aten.__lshift__.Scalar)" in result.findings[0].message
    assert "at node rshift (aten.__rshift__.Scalar)" in result.findings[1].message
    # Each worded as the stock exporter words its failure for that node.
    assert all("(ConversionError: Error when translating node %" in f.message for f in result.findings)
    assert all(f.stage == "translate" for f in result.findings)


def test_a_failing_translation_is_reported_with_the_ops_the_scan_found(workspace, tmp_path):
    """Whether `aten.mul.Scalar` of a symbolic size translates depends on the torch release
    (2.13 raises, 2.12 translates it): stock's answer on the model without zeta, measured here,
    says whether its line must be among the findings."""
    models = workspace / "failing_translations.py"
    module = import_file(models)
    try:
        torch.onnx.export(module.SelectMasks(), module.mask_inputs(), str(tmp_path / "stock.onnx"), dynamo=True,
                          dynamic_shapes=module.points_dynamic())
        stock_fails = False
    except Exception as error:  # noqa: BLE001 - stock's answer, whatever it raises
        stock_fails = "float() argument must be" in str(error)
    result = run(workspace, "SelectMasksAndZeta", "mask_inputs", dynamic_shapes="failing_translations.py:points_dynamic")
    assert result.status == "failed"
    found = {(f.code, f.location.line) for f in result.findings}
    assert found == {("unsupported-op", line_of(models, "torch.special.zeta(iou_preds, 2.0)"))} | (
        {("translation", line_of(models, "(num_points - 2.5) * score_reweight"))} if stock_fails else set())
    for translation in [f for f in result.findings if f.code == "translation"]:
        assert "float() argument must be" in translation.message and "(aten.mul.Scalar)" in translation.message


def test_a_constant_among_the_outputs_lands_on_the_return(workspace):
    result = run(workspace, "ConstantOutputs", "ones")
    models = workspace / "failing_translations.py"
    [finding] = result.findings
    assert (finding.code, finding.location.line) == ("translation", line_of(models, "return x + 1, None, 1024"))
    assert "ConstantOutputs.forward returns 1024 (an int) as output 2" in finding.message
    assert "'int' object has no attribute 'name'" in finding.message
    assert "model's definition" not in finding.message


def test_an_int_input_returned_lands_on_the_return(workspace):
    result = run(workspace, "NoTensorComputation", "list_and_int")
    models = workspace / "failing_translations.py"
    [finding] = result.findings
    assert (finding.code, finding.location.line) == ("translation", line_of(models, "        return y"))
    assert "returns 1 (an int) as output 0" in finding.message


def test_a_constant_made_by_a_helper_lands_on_the_helpers_return_with_forwards_related(workspace):
    result = run(workspace, "Labelled", "ones")
    models = workspace / "failing_translations.py"
    [finding] = result.findings
    assert finding.location.line == line_of(models, 'return y, "doubled"')
    assert [(r.line, r.message) for r in finding.related] == [
        (line_of(models, "return describe(x * 2)"), "Labelled.forward returns it here")]
    assert "'doubled' (a str)" in finding.message and "torch.tensor" not in finding.message


def test_where_stock_stops_before_dispatching_a_node_its_error_is_the_finding(workspace):
    """Stock's answer for the wrapped mutating op is a KeyError while translating it (measured
    here, in this process, with the public exporter), not a missing translation."""
    models = workspace / "mutating_op.py"
    result = run_target(workspace, "mutating_op.py:MutatesBufferAndZeta", "mutating_op.py:three_by_three")
    module = import_file(models)
    with pytest.raises(Exception) as stock:
        torch.onnx.export(module.MutatesBufferAndZeta(), module.three_by_three(), dynamo=True,
                          f=str(workspace / "stock.onnx"))
    assert "KeyError" in str(stock.value) and "auto_functionalized_v2" in str(stock.value)

    assert result.status == "failed"
    found = {(f.code, f.location.line) for f in result.findings}
    assert found == {("translation", line_of(models, "torch.ops.ONNXLENS_TEST_MUTATES.mutator(x, self.state)")),
                     ("unsupported-op", line_of(models, "return torch.special.zeta(y, 2.0)"))}
    [translation] = [f for f in result.findings if f.code == "translation"]
    assert "KeyError" in translation.message and "auto_functionalized_v2" in translation.message
    assert not any("auto_functionalized" in f.message for f in result.findings if f.code == "unsupported-op")
