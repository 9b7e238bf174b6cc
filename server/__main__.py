"""`python -I -m onnxlens.server`: the language server on stdio (`onnxlens serve`). -I keeps the
current directory, PYTHONPATH and the user site off sys.path: the server imports nothing from
the workspace (README, "Security")."""

from onnxlens.server.cli import main

if __name__ == "__main__":
    main(["serve"])
