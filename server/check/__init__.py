"""`onnxlens check` and `onnxlens merge` beyond the export itself: the targets a change reaches
(reach.py), the shards (shards.py), the regression gate against a baseline (gate.py, graphs.py),
findings' identities (fingerprints.py), the outputs — text, JSON, SARIF (formats.py) and the
pull-request summary (summary.py) —, the shards' results joined (merge.py), and the lines of
the files findings point at, as they are on disk (source_lines.py).

No LSP: cli.py calls these; the language server never does.
"""
