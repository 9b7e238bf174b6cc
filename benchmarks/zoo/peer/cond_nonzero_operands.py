"""onnx-diagnostic, onnx_diagnostic/torch_export_patches/eval/model_cases.py (MIT):
`ControlFlowCondNonZero`, a torch.cond with an int among its operands whose branches return
nonzero/where results (views of one tensor) next to their input."""

import torch


class ControlFlowCondNonZero(torch.nn.Module):
    def forward(self, input_ids, image_features, vocab_size):
        def then_branch(input_ids, image_features, vocab_size):
            input_shape = input_ids.size()
            input_ids = input_ids.view(-1, input_shape[-1])

            condition = (input_ids < 0) & (input_ids > -int(1e9))
            positions = torch.nonzero(condition, as_tuple=True)
            input_ids = input_ids.clamp_min(0).clamp_max(vocab_size)
            return (input_ids, positions[0], positions[1])

        def else_branch(input_ids, image_features, vocab_size):
            r = torch.where(torch.zeros((1, 1), dtype=torch.bool))
            return (input_ids, r[0], r[1])

        a, b, c = torch.cond(
            image_features.numel() > 0,
            then_branch,
            else_branch,
            [input_ids, image_features, vocab_size],
        )
        return a, b, c


def build_model():
    return ControlFlowCondNonZero()


def example_inputs():
    return (
        (torch.arange(24) - 8).reshape((2, -1)).to(torch.int64),
        torch.arange(32).reshape((2, -1)).to(torch.float32),
        1025,
    )


def dynamic_shapes():
    dim = torch.export.Dim
    return ({0: dim("batch")}, {0: dim("batch"), 1: dim("seq_length")}, None)
