"""Stand-in: transformers' video_utils imports `torchvision.io` when torchvision is installed."""
