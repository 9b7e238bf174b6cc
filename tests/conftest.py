"""Tests run real torch exports, real processes and real editor clients.

Helpers shared across the test folders live in tests/example_workspace.py and tests/lsp_data.py
(this folder is on sys.path because it holds this conftest)."""
