"""What an export's graph changed since the previous export of the same target: nodes added and
removed by op type, initializer bytes, the inputs and outputs (dtypes, dynamic axes), the lines
whose nodes changed, and the changes the user may not have meant (`ChangeNotice`: an axis that
became static, a dtype that changed, a jump in size), each on the line responsible.

Torch-free: the language server compares each result with the target's previous one, and the
export's report (written by the worker, given the same previous graph) says the same.

Lines are matched by their text, file by file, in order (difflib over the sequence of lines
that made nodes): a line added above others moves them without changing them, and a line whose
text was edited is compared with the line it replaced.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from onnxlens.exporter.wire.plain import Plain
from onnxlens.exporter.types import ExportedGraph, GraphValue, LineInfo, Location

@dataclass
class LineChange(Plain):
    """A line whose ONNX nodes changed since the last export (lines are matched by their text)."""

    file: str
    line: int  # in the newer export; for a line that is gone, in the older
    code: str
    added: dict[str, int] = field(default_factory=dict)  # ONNX op type -> nodes added
    removed: dict[str, int] = field(default_factory=dict)
    weight_bytes: int = 0  # its initializers' bytes, the newer export's minus the older's
    new: bool = False  # its text is new since the last export (added, or edited)
    gone: bool = False  # the line makes no nodes any more (edited away, or deleted)

    def describe(self) -> str:
        """"+1 node (LayerNormalization), initializers read +2,048 B", "+2 nodes (Mul, Add), -1 node
        (Div)". The bytes are those the line reads, shared ones included: the model's own size
        may not change (the exporter keeps one copy of equal initializers)."""
        parts = [describe_ops(sign, ops) for sign, ops in (("+", self.added), ("-", self.removed)) if ops]
        if self.weight_bytes:
            parts.append(f"initializers read {signed_bytes(self.weight_bytes)}")
        return ", ".join(parts)


def describe_ops(sign: str, ops: dict[str, int], shown: int = 4) -> str:
    """"+3 nodes (Mul ×2, Sqrt)": a count of nodes and their op types, the most frequent first."""
    total = sum(ops.values())
    ranked = sorted(ops.items(), key=lambda item: (-item[1], item[0]))
    names = [f"{op} ×{count}" if count > 1 else op for op, count in ranked[:shown]]
    if len(ranked) > shown:
        names.append(f"+{len(ranked) - shown} more")
    return f"{sign}{total} node{'s' if total != 1 else ''} ({', '.join(names)})"


def signed_bytes(count: int) -> str:
    """"+0 B", "+2,048 B", "-1.5 MiB": exact below 10 KiB."""
    sign = "-" if count < 0 else "+"
    size = abs(count)
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= 10 * scale or (unit != "KiB" and size >= scale):
            return f"{sign}{size / scale:.1f} {unit}"
    return f"{sign}{size:,} B"


@dataclass
class ChangeNotice(Plain):
    """A change of the graph the user may not have meant (an axis that became static, a dtype
    that changed, a jump in size): an Information diagnostic on the line responsible."""

    message: str
    location: Location | None = None  # None: where the target is defined


@dataclass
class GraphChange(Plain):
    """One export's graph against the previous one of the same target (exporter/graph_change.py)."""

    ops_added: dict[str, int] = field(default_factory=dict)  # ONNX op type -> nodes added
    ops_removed: dict[str, int] = field(default_factory=dict)
    initializer_bytes: int = 0  # the newer export's minus the older's
    initializer_bytes_before: int = 0
    values: list[str] = field(default_factory=list)  # inputs and outputs that changed, described
    lines: list[LineChange] = field(default_factory=list)
    notices: list[ChangeNotice] = field(default_factory=list)

    @property
    def unchanged(self) -> bool:
        return not (self.ops_added or self.ops_removed or self.initializer_bytes or self.values or self.lines)

    def describe(self) -> str:
        """One line: "+3 nodes (Mul, Add, Sqrt), +0 B", the changed inputs and outputs after it."""
        if self.unchanged:
            return "graph unchanged"
        parts = [describe_ops(sign, ops) for sign, ops in (("+", self.ops_added), ("-", self.ops_removed)) if ops]
        parts.append(signed_bytes(self.initializer_bytes))
        text = ", ".join(parts)
        if self.values:
            text += "; " + "; ".join(self.values[:2]) + (f"; {len(self.values) - 2} more" if len(self.values) > 2 else "")
        return text


# A change of the weights' size the user may not have meant: at least this share of the
# previous size, and at least this many bytes.
SIZE_JUMP_RATIO = 0.2
SIZE_JUMP_BYTES = 1 << 20


def graph_change(before: ExportedGraph, after: ExportedGraph) -> GraphChange:
    added, removed = _difference(before.graph.ops, after.graph.ops)
    change = GraphChange(ops_added=added, ops_removed=removed,
                         initializer_bytes=after.graph.initializer_bytes - before.graph.initializer_bytes,
                         initializer_bytes_before=before.graph.initializer_bytes,
                         lines=_line_changes(before.lines, after.lines))
    for old, new in _paired(_effective(before.graph.inputs, before), _effective(after.graph.inputs, after),
                            by_name=True):
        change.values += _value_changes("input", old, new, after, change)
    fixed_inputs = len(change.notices)
    for old, new in _paired(before.graph.outputs, after.graph.outputs, by_name=False):
        change.values += _value_changes("output", old, new, after, change, axes=not fixed_inputs)
    size_jump = _size_jump(change)
    if size_jump is not None:
        change.notices.append(size_jump)
    return change


def _difference(old: dict[str, int], new: dict[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    before, after = Counter(old), Counter(new)
    return dict(after - before), dict(before - after)


# -- lines ----------------------------------------------------------------------------------------

def _line_changes(old: list[LineInfo], new: list[LineInfo]) -> list[LineChange]:
    changes: list[LineChange] = []
    for file in sorted({info.file for info in old} | {info.file for info in new}):
        old_lines = sorted((i for i in old if i.file == file), key=lambda i: i.line)
        new_lines = sorted((i for i in new if i.file == file), key=lambda i: i.line)
        matcher = difflib.SequenceMatcher(None, [i.code for i in old_lines], [i.code for i in new_lines], autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            olds, news = old_lines[i1:i2], new_lines[j1:j2]
            paired = min(len(olds), len(news)) if tag in ("equal", "replace") else 0
            for before, after in zip(olds[:paired], news[:paired]):
                changes += _compared(before, after, new=tag == "replace")
            changes += [_gone(info) for info in olds[paired:]]
            changes += [c for info in news[paired:] for c in _compared(None, info, new=True)]
    return sorted(changes, key=lambda c: (c.file, c.line, c.gone))


def _compared(before: LineInfo | None, after: LineInfo, *, new: bool) -> list[LineChange]:
    """`after` against the line it replaces (None: a line new to the graph); `new`: its text is."""
    added, removed = _difference(before.ops if before else {}, after.ops)
    weight = after.weight_bytes - (before.weight_bytes if before else 0)
    if not (added or removed or weight):
        return []
    return [LineChange(file=after.file, line=after.line, code=after.code, added=added, removed=removed,
                       weight_bytes=weight, new=new)]


def _gone(info: LineInfo) -> LineChange:
    return LineChange(file=info.file, line=info.line, code=info.code, removed=dict(info.ops),
                      weight_bytes=-info.weight_bytes, gone=True)


def _responsible(change: GraphChange) -> Location | None:
    """Where a change of the graph's values most likely comes from: the first line (in file
    order) whose text is new, else the first whose nodes changed (and that still exists)."""
    lines = [c for c in change.lines if not c.gone]
    line = next((c for c in lines if c.new), None) or next(iter(lines), None)
    return Location(file=line.file, line=line.line) if line is not None else None


# -- inputs and outputs ---------------------------------------------------------------------------

def _paired(old: list[GraphValue], new: list[GraphValue], *, by_name: bool) -> Iterable[tuple[GraphValue | None, GraphValue | None]]:
    """Inputs by name (the forward's parameters); outputs by position (their names are the
    program's node names, which any edit upstream renumbers)."""
    if not by_name:
        for index in range(max(len(old), len(new))):
            yield (old[index] if index < len(old) else None), (new[index] if index < len(new) else None)
        return
    old_by_name = {value.name: value for value in old}
    for value in new:
        yield old_by_name.pop(value.name, None), value
    for value in old_by_name.values():
        yield value, None


def _effective(inputs: list[GraphValue], exported: ExportedGraph) -> list[GraphValue]:
    """The inputs with the sizes the code fixed: a dimension torch specialized (`Dim.AUTO`) may
    keep its symbol on the ONNX input, and the model still only accepts that size."""
    fixed = {(axis.input, axis.dim): axis.size for axis in exported.graph.fixed_axes}
    if not fixed:
        return inputs
    return [dataclasses.replace(value, dims=[fixed.get((value.name, dim), size) for dim, size in enumerate(value.dims)])
            for value in inputs]


def _value_changes(kind: str, old: GraphValue | None, new: GraphValue | None, after: ExportedGraph,
                   change: GraphChange, *, axes: bool = True) -> list[str]:
    """The value's changes, described; the unexpected ones also become notices of `change`
    (`axes`: a dynamic axis that became static too; an output's is not when an input's was,
    since that is its cause)."""
    present = new or old
    label = f"input `{present.name}`" if kind == "input" else f"output {_index(present, after)}(`{present.name}`)"
    if old is None or new is None:
        return [f"{label} {'added' if old is None else 'removed'} ({present.dtype}[{', '.join(map(str, present.dims))}])"]
    described: list[str] = []
    if old.dtype != new.dtype:
        described.append(f"{label}: {old.dtype} → {new.dtype}")
        change.notices.append(ChangeNotice(
            message=f"since the last export, {label} is {new.dtype}; it was {old.dtype}",
            location=None if kind == "input" else (_responsible(change) or new.line)))
    if len(old.dims) != len(new.dims):
        described.append(f"{label}: [{', '.join(map(str, old.dims))}] → [{', '.join(map(str, new.dims))}]")
        return described
    for dim, (was, now) in enumerate(zip(old.dims, new.dims)):
        if was == now:
            continue
        described.append(f"{label} axis {dim}: {_dim(was)} → {_dim(now)}")
        if axes and isinstance(was, str) and isinstance(now, int):
            change.notices.append(ChangeNotice(
                message=f"since the last export, {label} axis {dim} is fixed to {now}: it was dynamic "
                        f"(`{was}`), and the ONNX model now only accepts {now} there",
                location=_fixed_at(kind, new.name, dim, after) or _responsible(change)
                or (new.line if kind == "output" else after.graph.shapes_location)))
    return described


def _index(value: GraphValue, after: ExportedGraph) -> str:
    """"0 " for the first output of the newer export (outputs are matched by position)."""
    outputs = after.graph.outputs
    return f"{outputs.index(value)} " if value in outputs else ""


def _dim(value: int | str) -> str:
    return f"`{value}` (dynamic)" if isinstance(value, str) else f"{value} (static)"


def _fixed_at(kind: str, name: str, dim: int, after: ExportedGraph) -> Location | None:
    """The line that fixed an input's dimension, when capture recorded it (dynamic_dims.py)."""
    if kind != "input":
        return None
    return next((axis.location for axis in after.graph.fixed_axes if axis.input == name and axis.dim == dim), None)


# -- size -----------------------------------------------------------------------------------------

def _size_jump(change: GraphChange) -> ChangeNotice | None:
    delta, before = change.initializer_bytes, change.initializer_bytes_before
    if abs(delta) < SIZE_JUMP_BYTES or abs(delta) < SIZE_JUMP_RATIO * before:
        return None
    share = f" ({delta / before:+.0%})" if before else ""
    biggest = max((c for c in change.lines if not c.gone and c.weight_bytes), key=lambda c: abs(c.weight_bytes),
                  default=None)
    where = f"; this line's by {signed_bytes(biggest.weight_bytes)}" if biggest is not None else ""
    return ChangeNotice(message=f"since the last export, the model's initializers changed by {signed_bytes(delta)}{share}{where}",
                        location=Location(file=biggest.file, line=biggest.line) if biggest is not None else None)
