"""`python -I -m onnxlens.server.lsp`: the language server on stdio, as `python -I -m onnxlens.server`."""

from onnxlens.server.lsp.app import serve

if __name__ == "__main__":
    serve()
