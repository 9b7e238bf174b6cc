"""The saved model as two files: the .onnx and the data file it names, and what "the public
API's bytes" means for them.

`torch.onnx.export(..., f="net.onnx", dynamo=True)` writes the weights to `net.onnx.data` and
the graph to `net.onnx`, whose external initializers name that file in their `location`.
Replacing both under fixed names takes two renames, and a process killed between them (the
out-of-memory killer, a cancel) leaves the old graph beside the new weights: onnxruntime loads
the pair and computes wrong numbers without a word. onnxlens names the data file by its
content instead, `net.onnx.<the first 16 hex digits of its sha256>.data` (`data_file_name`),
so the new weights land beside the old pair without touching it and one rename of the .onnx
switches from the old pair to the new one (pipeline/output/onnx_commit.py; a save first commits them under a
random token of the same form, and names them by content after its result).

That name is the only difference from the public API's files, and `public_api_difference` is
the one definition of byte identity with them, used by every identity check (the engine's
tests, the zoo's scorer): the data files are byte-identical, and so are the graphs once each
`location` naming our data file is mapped back to the stock name. Nothing else is mapped, so a
graph that differs anywhere else is reported.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterator

import onnx

DIGEST_CHARS = 16
_DATA_FILE = re.compile(rf"^(?P<onnx>.+)\.[0-9a-f]{{{DIGEST_CHARS}}}\.data$")


def data_file_name(onnx_name: str, sha256: str) -> str:
    """The data file of `onnx_name` (a file name, `net.onnx`) holding weights with this digest
    (or, until the save names them by content, a random token of 16 hex digits)."""
    return f"{onnx_name}.{sha256[:DIGEST_CHARS]}.data"


def stock_data_file_name(onnx_name: str) -> str:
    """The name the public API gives the data file (`net.onnx.data`)."""
    return f"{onnx_name}.data"


def is_data_file_of(file_name: str, onnx_name: str) -> bool:
    """`file_name` is a data file some save of `onnx_name` wrote (ours, or the stock name)."""
    match = _DATA_FILE.match(file_name)
    return file_name == stock_data_file_name(onnx_name) or bool(match and match["onnx"] == onnx_name)


def external_tensors(model: onnx.ModelProto) -> Iterator[onnx.TensorProto]:
    """Every tensor of the model whose data lives in an external file (subgraphs included)."""
    def in_graph(graph: onnx.GraphProto) -> Iterator[onnx.TensorProto]:
        yield from graph.initializer
        yield from (sparse.values for sparse in graph.sparse_initializer)
        for node in graph.node:
            yield from in_attributes(node.attribute)

    def in_attributes(attributes) -> Iterator[onnx.TensorProto]:
        for attribute in attributes:
            if attribute.HasField("t"):
                yield attribute.t
            yield from attribute.tensors
            if attribute.HasField("g"):
                yield from in_graph(attribute.g)
            for graph in attribute.graphs:
                yield from in_graph(graph)

    tensors = [*in_graph(model.graph)]
    for function in model.functions:
        for node in function.node:
            tensors.extend(in_attributes(node.attribute))
    return (t for t in tensors if t.data_location == onnx.TensorProto.EXTERNAL)


def _location(tensor: onnx.TensorProto):
    return next((entry for entry in tensor.external_data if entry.key == "location"), None)


def locations(model: onnx.ModelProto) -> set[str]:
    """The data files the model's external tensors name."""
    return {entry.value for entry in map(_location, external_tensors(model)) if entry is not None}


def relocate(model: onnx.ModelProto, old: str, new: str) -> int:
    """Rename the data file `old` to `new` in every external tensor that names it (in place);
    how many tensors did."""
    count = 0
    for tensor in external_tensors(model):
        entry = _location(tensor)
        if entry is not None and entry.value == old:
            entry.value = new
            count += 1
    return count


def named_data_file(onnx_path: str | os.PathLike) -> Path | None:
    """The data file the .onnx at `onnx_path` names, beside it; None for a model without one."""
    model = onnx.load(str(onnx_path), load_external_data=False)
    named = locations(model)
    if not named:
        return None
    if len(named) > 1:
        raise ValueError(f"{onnx_path} names {len(named)} data files: {sorted(named)}")
    return Path(onnx_path).parent / named.pop()


def public_api_difference(ours: str | os.PathLike, stock: str | os.PathLike) -> str | None:
    """How the pair saved at `ours` differs from the public API's pair at `stock`, saved under
    the same file name in another directory (None: the same bytes, our data file's name in the
    graph aside)."""
    ours, stock = Path(ours), Path(stock)
    if ours.name != stock.name:
        raise ValueError(f"save the public API's model under the same name as ours ({ours.name}), not {stock.name}")
    data = named_data_file(ours)
    stock_data = stock.with_name(stock_data_file_name(stock.name))
    if data is None:
        # Without weights the public API still leaves an empty data file, which nothing names.
        if stock_data.exists() and stock_data.stat().st_size:
            return f"the public API wrote weights ({stock_data.name}), {ours.name} names no data file"
        mapped = ours.read_bytes()
    else:
        if data.name == stock_data.name or not is_data_file_of(data.name, ours.name):
            return f"{ours.name} names {data.name}, not a data file named by its content"
        if not data.exists():
            return f"{ours.name} names {data.name}, which does not exist"
        if not stock_data.exists():
            return f"{ours.name} has weights in {data.name}, the public API wrote none"
        if not _same_bytes(data, stock_data):
            return f"the weights differ: {data.name} and the public API's {stock_data.name}"
        model = onnx.load(str(ours), load_external_data=False)
        relocate(model, data.name, stock_data_file_name(ours.name))
        mapped = model.SerializeToString()
    if mapped != stock.read_bytes():
        return f"the graphs differ beyond the data file's name: {ours.name} and the public API's {stock.name}"
    return None


def _same_bytes(a: Path, b: Path) -> bool:
    if a.stat().st_size != b.stat().st_size:
        return False
    with open(a, "rb") as left, open(b, "rb") as right:
        while True:
            chunk = left.read(1 << 20)
            if chunk != right.read(1 << 20):
                return False
            if not chunk:
                return True
