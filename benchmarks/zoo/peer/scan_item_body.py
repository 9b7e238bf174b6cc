"""onnx-diagnostic, onnx_diagnostic/torch_export_patches/eval/model_cases.py (MIT):
`ControlFlowScanDecomposition_151564` (pytorch/pytorch#151564); the same model is
pytorch/pytorch test/onnx/exporter/test_small_models_e2e.py `test_scan_loop_inplace` (marked xfail
"Data dependent error" there). A scan body that calls `.item()` and bounds it with torch._check;
`forward` selects the scan version while exporting."""

import torch


class ControlFlowScanDecomposition_151564(torch.nn.Module):
    @classmethod
    def dummy_loop(cls, padded: torch.Tensor, pos: torch.Tensor):
        copy = torch.zeros(padded.shape)
        for i in range(pos.shape[0]):
            p = pos[i]
            copy[i, :p] = padded[i, :p]
        return copy

    @classmethod
    def dummy_loop_with_scan(cls, padded: torch.Tensor, pos: torch.Tensor):
        def pad_row(padded, p):
            row = torch.zeros((padded.shape[0],))
            torch._check(p.item() > 0)
            torch._check(p.item() < padded.shape[0])
            # this check is not always true, we add it anyway to make this dimension >= 2
            # and avoid raising an exception about dynamic dimension in {0, 1}
            if torch.compiler.is_exporting():
                torch._check(p.item() > 1)
            row[: p.item()] = padded[: p.item()]
            return (row,)

        return torch.ops.higher_order.scan(
            pad_row,
            [],
            [padded, pos],
            [],
        )

    @classmethod
    def select_when_exporting(cls, f, f_scan):
        return f_scan if torch.compiler.is_exporting() else f

    def forward(self, images, position):
        return self.select_when_exporting(self.dummy_loop, self.dummy_loop_with_scan)(
            images, position
        )


def build_model():
    return ControlFlowScanDecomposition_151564()


def example_inputs():
    return (torch.randn((5, 6)), torch.arange(5, dtype=torch.int64) + 1)


def dynamic_shapes():
    dyn = torch.export.Dim.DYNAMIC
    return {"images": {0: dyn, 1: dyn}, "position": {0: dyn}}
