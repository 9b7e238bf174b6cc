"""pytorch/pytorch test/onnx/exporter/test_small_models_e2e.py,
`DynamoExporterTest.test_export_of_rename_dynamic_axes_required_model_with_mixed_type_of_dynamic_shapes`
(BSD-3-Clause): `if x.shape[0] < 3 and c.shape[0] != 4:` with a `Dim("dim_x", min=3)`, custom axis
names and `Dim.AUTO` mixed; the test expects the export to succeed (the branch is decided by the
declared range)."""

import torch


class NestedModel(torch.nn.Module):
    def forward(
        self,
        x: torch.Tensor,
        ys: list[torch.Tensor],
        zs: dict[str, torch.Tensor],
        c: torch.Tensor,
    ):
        y = ys[0] + ys[1] + zs["a"] + zs["b"]
        w = 5
        if x.shape[0] < 3 and c.shape[0] != 4:
            return x + w, x + y, c
        else:
            return x - w, x - y, c


def build_model():
    return NestedModel()


def example_inputs():
    return (
        torch.ones(5),
        [torch.zeros(5), torch.ones(5)],
        {"a": torch.zeros(5), "b": torch.ones(5)},
        torch.ones(6),
    )


def dynamic_shapes():
    return (
        {0: torch.export.Dim("dim_x", min=3)},
        [("custom_name_axis_ys_0",), (torch.export.Dim.AUTO,)],
        {"a": {0: torch.export.Dim.AUTO}, "b": ("custom_name_axis_zs_b_0",)},
        {0: "custom_name_axis_c_0"},
    )
