"""`onnxlens` command line: `onnxlens serve` (LSP on stdio) and `onnxlens check` (CI)."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="onnxlens")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help="language server on stdio")
    sub.add_parser("check", help="export every target and report problems")
    args = parser.parse_args(argv)
    print(f"onnxlens {args.command}: not implemented yet", file=sys.stderr)
    sys.exit(2)
