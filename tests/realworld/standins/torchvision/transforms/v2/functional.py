"""Stand-in: imported by transformers' image processors, never called by the tests' models."""
