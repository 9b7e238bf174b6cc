"""onnx-diagnostic, _doc/examples/plot_export_locate_issue.py (MIT): `ModelWithIssue`, "the first
dimension of x is equal to 1 or equal to the number of elements in the list ys. It is not really
dynamic." The example's `torch_export_patches(stop_if_static=1)` patch stops export at the line
that turns the dynamic dimension into a constant."""

import torch


class ModelWithIssue(torch.nn.Module):
    def forward(self, x: torch.Tensor, ys: list[torch.Tensor]):
        caty = torch.cat([y.unsqueeze(0) for y in ys], axis=0)
        z = x * caty
        return z


def build_model():
    return ModelWithIssue()


def example_inputs():
    return (torch.rand(2, 3, 1), [torch.rand(3, 4), torch.rand(3, 4)])


def dynamic_shapes():
    dyn = torch.export.Dim.DYNAMIC
    return ({0: dyn, 1: dyn}, [{0: dyn, 1: dyn}, {0: dyn, 1: dyn}])
