"""Stand-in: transformers' image_utils imports pil_to_tensor when torchvision is installed."""


def pil_to_tensor(picture):
    raise NotImplementedError("torchvision stand-in: image conversion is not available")
