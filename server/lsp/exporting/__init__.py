"""How the language server exports the workspace's targets for the editor: what triggers an
export (triggers.py: saves, and changes on disk from watcher.py), when it runs (scheduler.py), the
export service it runs on (service.py), what it knows of each configured workspace and its targets'
results (project.py), and what the editor is told while and after it runs (progress.py,
status.py).

Knows no LSP feature: features read projects' results through the session.
"""
