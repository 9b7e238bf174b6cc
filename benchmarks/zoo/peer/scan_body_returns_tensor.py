"""onnx-diagnostic, _doc/technical/plot_simple_for_loop.py (MIT), `ModelWithScan`: a Python loop
that crops slices of W rewritten as a scan ("This is a simple example of loop which cannot be
efficiently rewritten with scan"). Its body returns the carried tensor alone."""

import torch


class Model(torch.nn.Module):
    def __init__(self, crop_size):
        super().__init__()
        self.crop_size = crop_size

    def forward(self, W, splits):
        crop_size = self.crop_size
        starts = splits[:-1]
        ends = splits[1:]
        cropped = []
        for start, end in zip(starts, ends):
            extract = W[:, start:end]
            if extract.shape[1] < crop_size:
                cropped.append(extract)
            else:
                cropped.append(extract[:, :crop_size])
        return torch.cat(cropped, axis=1)


class ModelWithScan(Model):
    def forward(self, W, splits):
        crop_size = self.crop_size
        starts = splits[:-1]
        ends = splits[1:]

        def body_scan(init, split, W):
            extract = W[:, split[0].item() : split[1].item()]
            cropped = extract[:, : torch.sym_min(extract.shape[1], crop_size)]
            carried = torch.cat([init, cropped], axis=1)
            return carried

        starts_ends = torch.cat([starts.unsqueeze(1), ends.unsqueeze(1)], axis=1)
        return torch.ops.higher_order.scan(
            body_scan, [torch.empty((W.shape[0], 0), dtype=W.dtype)], [starts_ends], [W]
        )


def build_model():
    return ModelWithScan(4)


def example_inputs():
    return (torch.rand((2, 22)), torch.tensor([0, 5, 15, 20, 22], dtype=torch.int64))
