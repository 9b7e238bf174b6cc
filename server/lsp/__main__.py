from onnxlens.server.lsp.app import serve

serve()
