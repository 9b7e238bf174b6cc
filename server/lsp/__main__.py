from onnxlens.server.lsp.server import serve

serve()
