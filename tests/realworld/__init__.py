"""Real library models through onnxlens check and the language server, one module per failure class of issue 10."""
