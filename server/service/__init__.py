"""The export service: `ExportService` (exports.py), the server side's one way to get an
ExportResult for a TargetSpec, and what it stands on: the client of the export worker process
(worker.py), when a job may start (admission.py), the result cache (cache.py) with the file
times (file_times.py) and installed packages (installed.py) its keys hold, and what a listener
is told while an export runs (events.py).

Shared by `onnxlens check` (cli.py) and the language server (lsp/exporting/service.py); no torch.
"""
