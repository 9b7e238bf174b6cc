"""Tests run real torch exports, real processes and real editor clients.

tests/ is a package: pytest imports every test module by its full name (`tests.lsp.test_core`)
with the repository root on sys.path (`pythonpath` in pyproject.toml), and helpers are imported
the same way, once each: the shared ones from tests/support/ (`tests.support.lsp`), a folder's
own as `tests.<folder>.<module>`. Benchmarks import tests.support too, run from the repository
root as `python -m benchmarks.<name>`."""
