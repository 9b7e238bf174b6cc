"""Stand-in for torchvision (see ../README.md): `import torchvision` registers its ops."""

import torch

__version__ = "0.28.0+standin"

# As torchvision's C++ library at load time: TORCH_LIBRARY_FRAGMENT(torchvision, m) { m.def(...) }
# (torchvision/csrc/ops/roi_align.cpp; the schema is torchvision's).
_library = torch.library.Library("torchvision", "FRAGMENT")
_library.define(
    "roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
    "int sampling_ratio, bool aligned) -> Tensor")


# As torchvision/_meta_registrations.py: the fake kernel torch.export traces with.
@torch.library.register_fake("torchvision::roi_align")
def _roi_align_fake(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned):
    torch._check(rois.size(1) == 5, lambda: "rois must have shape as Tensor[K, 5]")
    return input.new_empty((rois.size(0), input.size(1), pooled_height, pooled_width))


from torchvision import io, ops, transforms  # noqa: E402,F401 - the submodules torchvision imports
