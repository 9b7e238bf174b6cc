"""Real library models through onnxlens check and the language server, one module per kind of failure
that needs a library to happen (library-registered ops, helpers deep in a library, failures past
the scan, mismatches, model code outside the workspace, unflattenable outputs, messages)."""
