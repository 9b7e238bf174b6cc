"""Stand-in: transformers' image processors import `torchvision.transforms.v2.functional`."""
