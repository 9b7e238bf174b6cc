"""One export job in a fresh process: TargetSpec as msgpack on stdin, ExportResult on stdout.

BOOTSTRAP: the server's ExportService uses this until the fork server (zygote.py) replaces it.
"""

import sys

import msgpack

from onnxlens.exporter.pipeline import Pipeline
from onnxlens.exporter.types import TargetSpec


def main() -> None:
    spec = TargetSpec.from_dict(msgpack.unpackb(sys.stdin.buffer.read()))
    result = Pipeline().run(spec)
    sys.stdout.buffer.write(msgpack.packb(result.to_dict()))


if __name__ == "__main__":
    main()
