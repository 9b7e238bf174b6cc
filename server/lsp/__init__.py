"""The onnxlens language server (pygls): re-export on save, diagnostics on the user's lines.

Entry point: `onnxlens.server.lsp.app.serve()`; also `python -m onnxlens.server.lsp`.
"""
