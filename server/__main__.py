from onnxlens.server.cli import main

main(["serve"])
