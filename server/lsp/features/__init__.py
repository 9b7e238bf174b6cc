"""The language server's features, one module each: a `Feature` (handlers.py) made for one session,
whose handler table app.py registers. Features never import each other; the modules beside them
here serve one or two of them (command_ids.py: the commands, declared once; target_offer.py: the
offer of a config for a folder without one; workspace_edits.py: insertions as a WorkspaceEdit).
"""
