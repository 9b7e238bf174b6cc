"""A stand-in for torchvision in this zoo workspace, NOT torchvision.

torchvision's PyPI wheels are CUDA builds whose compiled operators do not load next to the CPU
torch of this project (see ../../README.md, "What cannot be loaded here"). What matters for
onnxlens is what `import torchvision` does to torch: its compiled library registers operators in
the `torchvision` namespace (torchvision/csrc/ops/*.cpp, `STABLE_TORCH_LIBRARY_FRAGMENT(torchvision,
m)`) and Python fake kernels for them (torchvision/_meta_registrations.py). This package does the
same at import, with the same namespace and the same schemas, and CPU kernels written in Python
(_C.py, _meta_registrations.py), so that the user's code here imports it exactly as it imports
torchvision.

It has to be named `torchvision`: torch.onnx's registry (torch/onnx/_internal/exporter/
_registration.py, `_get_overload`) only takes torchlib's `torchvision::*` translations when
`importlib.util.find_spec("torchvision")` finds a module of that name AND `torch.ops.torchvision.<op>`
exists when the registry is built.
"""

from torchvision import _C, _meta_registrations  # noqa: F401  (registers the operators, as torchvision's _C does)
from torchvision import ops  # noqa: F401

__version__ = "0.0+zoo-stand-in"
