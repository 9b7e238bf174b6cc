"""Helpers shared by the test folders and the benchmarks, imported as `tests.support.<module>`
(pytest puts the repository root on sys.path; benchmarks run as `python -m benchmarks.<name>`
from the repository root):

* workspace: copies of examples/, writing files, finding lines by their text;
* data: pygls' replies as plain data;
* lsp: the real server (one command), one recording client, its waits; a bare stdio connection;
* faults: the fault matrix's model, output snapshots, process checks, the stand-in editor.
"""
