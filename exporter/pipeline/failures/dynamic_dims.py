"""Input sizes declared dynamic that the model's code constrains, on the line that does.

The code can contradict what the dynamic-shapes declaration says of a size: fix it to one
number (`x.reshape(2, -1)` of a (batch, 3, 4) input, `assert x.shape[0] == 3`, `if n == 4:` on an
int input), hold only for part of the declared range (`if x.shape[0] > 5:` with
`Dim("batch", max=16)`, `torch._check(x.shape[0] <= 8)` with `Dim.DYNAMIC(min=2, max=64)`), or tie
it to a size declared as a dimension of its own (`x + y` with `dx` and `dy`). torch.export says
which dimension and what value, never where. Depending on the declaration it then refuses it
(`Dim.DYNAMIC`, string dims: a capture error), the stock exporter captures again with torch's
suggested fixes (named Dims), or torch narrows a hint's range silently (`Dim.AUTO`, a hint's
bounds): the export "works", and the ONNX model holds for less than declared — one size, or
the branch the example took with no check of the range.

Either way the finding goes on the line of the model's code that did it: capture records every
size fact with its stack (`internals.shape_facts_recorded`). It names the input, the dimension,
its name in the spec and what the code requires, with the dynamic-shapes factory related: a
`torch-export` warning when the export went on, torch's refusal moved there when it did not.
Without a recorded line, a size that came out static is a warning on the factory.

A higher-order op's body (torch.cond's branches, loop bodies) is traced by dynamo in a shape
environment of its own, even in non-strict capture; the input's size is fixed only when the
body's guards are checked at the op's call. Such a fact takes the body's line: the fact made
inside the body, at the same call, with the same value (`_inner_fact`).
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from typing import Any

from onnxlens.exporter.locations import Origin, Place, classify, from_traceback, locate
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.torch_internals.active import internals
from onnxlens.exporter.types import Finding, Related

DOCS_URL = "https://pytorch.org/docs/stable/export.html#dynamic-shapes"

# An input size as torch's sources (`L['x'].size()[0]`, `L['kwargs']['mask'].size()[1]`, `L['n']`)
# and its messages (`inputs['x'].shape[0]`) name it.
_SIZE = re.compile(r"\b(?:L|inputs)(?P<path>(?:\[(?:'[^']*'|\d+)\])+)(?:\.size\(\)\[(?P<size>\d+)\]|\.shape\[(?P<shape>\d+)\])?")
_KEY = re.compile(r"\['([^']*)'\]|\[(\d+)\]")
# torch's 0/1 specialization: a lower bound up to 2 is torch's own, not the code's.
_SMALLEST_DYNAMIC = 2


@dataclass(frozen=True)
class InputSize:
    """One size of the model's inputs: the input's path (`("x",)`, `("past", 0)`) and the
    dimension (None: an int input)."""

    path: tuple[str | int, ...]
    dim: int | None

    @staticmethod
    def parse(text: str) -> InputSize | None:
        match = _SIZE.fullmatch(text.strip())
        return _size(match) if match else None

    @staticmethod
    def named_in(text: str) -> set[InputSize]:
        return {size for size in map(_size, _SIZE.finditer(text)) if size is not None}

    def describe(self) -> str:
        """`x` dim 0, `past[0]` dim 2, `n`."""
        head, *rest = self.path
        name = str(head) + "".join(f"[{key!r}]" for key in rest)
        return f"`{name}`" + (f" dim {self.dim}" if self.dim is not None else "")


def _size(match: re.Match) -> InputSize | None:
    keys: list[str | int] = [name if index == "" else int(index) for name, index in _KEY.findall(match["path"])]
    if len(keys) > 1 and keys[0] == "kwargs":  # keyword inputs: `L['kwargs']['mask']`
        keys = keys[1:]
    if not keys:
        return None
    dim = match["size"] or match["shape"]
    return InputSize(tuple(keys), int(dim) if dim is not None else None)


@dataclass
class Conflict:
    """What the code does to a size, against its declaration, and the line that does it."""

    size: InputSize
    name: str | None  # its name in the spec ("batch"), when the spec gives one
    declared: str  # "dynamic", "dynamic in [2, 16]"
    code_does: str  # "fixes it to 3", "holds only for sizes ≥ 6", "ties it to `y` dim 0"
    consequence: str  # what torch.export then did, when the export went on
    place: Place  # the line that did it (the model's definition if no line of the workspace)
    in_library: bool = False  # no line of the workspace on the chain: the library's are related
    fixed_to: int | None = None  # the one size the code fixed it to, when it did

    def describe(self) -> str:
        """`x` dim 0 (`batch`)."""
        return self.size.describe() + (f" (`{self.name}`)" if self.name else "")

    def statement(self) -> str:
        subject = "library code" if self.in_library else "this line"
        return f"{self.describe()} is declared {self.declared}, but {subject} {self.code_does}"

    def related(self, job: Job) -> list[Related]:
        """The call chain, innermost first (the library line that did it leads when no line of
        the workspace is on it), then the declaration."""
        declared = job.shapes_location
        factory = ([Related(file=declared.file, line=declared.line, column=declared.column,
                            message=f"{self.describe()} is declared dynamic here")] if declared else [])
        return self.place.related + factory

    def finding(self, job: Job, severity: str, message: str) -> Finding:
        return Finding(code="torch-export", severity=severity, stage="capture", location=self.place.location,
                       related=self.related(job), source_line=self.place.source_line, docs_url=DOCS_URL,
                       message=message)


def check_dynamic_dims(job: Job) -> None:
    """After a capture that went on: warn where the code constrained sizes declared dynamic."""
    import torch

    requested = count_dynamic(job.target.dynamic_shapes)
    if not requested:
        return
    # A size fixed by a guard may still show as a symbol in the program's inputs (Dim.AUTO):
    # what capture recorded decides first.
    found = [conflict for conflict in conflicts(job, went_on=True) if conflict.place.location is not None]
    if found:
        job.result.findings.extend(conflict.finding(job, "warning", f"{conflict.statement()}: {conflict.consequence}")
                                   for conflict in found)
        return
    specs = job.program.graph_signature.input_specs
    user_inputs = {spec.arg.name for spec in specs if spec.kind.name == "USER_INPUT"}
    shapes = []
    dynamic = 0
    for node in job.program.graph.nodes:
        if node.op == "placeholder" and node.name in user_inputs:
            value = node.meta.get("val")
            if isinstance(value, torch.Tensor):
                dynamic += sum(1 for dim in value.shape if isinstance(dim, torch.SymInt))
                shapes.append(f"{node.name}: [{', '.join(str(d) for d in value.shape)}]")
            elif isinstance(value, torch.SymInt):  # an int input kept dynamic
                dynamic += 1
    if dynamic >= requested:
        return
    job.result.findings.append(Finding(
        code="torch-export", severity="warning", stage="capture", location=job.shapes_location or job.fallback,
        source_line=None, docs_url=DOCS_URL,
        message=(f"{requested - dynamic} of the {requested} dimensions declared dynamic came out static: "
                 "the model's code fixes their size, and torch.export specialized them "
                 f"(the exported inputs are {'; '.join(shapes)}). The ONNX model only accepts those sizes.")))


def relocate_refusal(findings: list[Finding], job: Job) -> list[Finding]:
    """A capture failure that is torch refusing the dynamic shapes the code contradicts
    (`Dim.DYNAMIC`, string dims, a range it cannot fix), moved from the model's definition to
    the line of each size it names."""
    found = [conflict for conflict in conflicts(job, went_on=False) if conflict.place.location is not None]
    if not found:
        return findings
    moved = []
    for finding in findings:
        refusal = any(marker in finding.message for marker in _REFUSALS)
        at_fallback = job.fallback is not None and finding.location is not None and (
            finding.location.file, finding.location.line) == (job.fallback.file, job.fallback.line)
        named = InputSize.named_in(finding.message)
        mine = [conflict for conflict in found if conflict.size in named] or ([] if named else found)
        if not (refusal and at_fallback and mine):
            moved.append(finding)
            continue
        lines = [line.strip().lstrip("- ") for line in finding.message.splitlines()]
        for conflict in mine:
            torch_says = next((line for line in lines if conflict.size in InputSize.named_in(line)),
                              next((line for line in lines if any(m in line for m in _REFUSALS)), lines[0]))
            raised = _RAISED.search(finding.message)  # torch's exception class, which the user may search for
            if raised and not torch_says.startswith(raised.group(1)):
                torch_says = f"{raised.group(1)}: {torch_says}"
            moved.append(conflict.finding(job, finding.severity,
                                          f"{conflict.statement()}, so torch.export refused the declaration "
                                          f"(torch: {torch_says})"))
    return moved


# "torch.export (non-strict) failed: ValueError: ...": the class of the exception torch raised.
_RAISED = re.compile(r"failed: ([A-Za-z_][\w.]*(?:Error|Exception|Violation)): ")

# How torch.export says it refused the dynamic shapes.
_REFUSALS = ("inferred a static shape", "specialized", "Constraints violated", "conflicts between user-specified ranges",
             "Not all values of", "must always be equal")


def count_dynamic(shapes: Any) -> int:
    """Dimensions declared dynamic in a dynamic_shapes spec (Dim objects, AUTO/DYNAMIC, names)."""
    import torch

    if shapes is None:
        return 0
    if isinstance(shapes, dict) and all(isinstance(key, int) for key in shapes):
        return sum(1 for value in shapes.values() if _is_dynamic_dim(value, torch))
    if isinstance(shapes, dict):
        return sum(count_dynamic(value) for value in shapes.values())
    if isinstance(shapes, (list, tuple)):
        if shapes and all(not isinstance(v, (dict, list, tuple)) for v in shapes) and any(
                _is_dynamic_dim(v, torch) for v in shapes):
            return sum(1 for value in shapes if _is_dynamic_dim(value, torch))
        return sum(count_dynamic(value) for value in shapes)
    return 1 if _is_dynamic_dim(shapes, torch) else 0  # an int input's


def _is_dynamic_dim(value: Any, torch: Any) -> bool:
    if value is None or isinstance(value, int):
        return False
    dim_hint = getattr(torch.export, "Dim", None)
    if dim_hint is not None and value in (getattr(dim_hint, "STATIC", object()),):
        return False
    return True


# --- what the code did to each declared size ---------------------------------------------------

@dataclass
class _Declared:
    """One size's declaration: its name in the raw spec (a string dim or a Dim's name) and how
    the spec torch got declares it."""

    name: str | None
    dim: Any  # internals.DeclaredDim


def conflicts(job: Job, *, went_on: bool) -> list[Conflict]:
    """Every declared size the code contradicted, each on the line that did it, in the order
    torch learnt the facts (first fixed size per input size; else the range or the tie).

    A named Dim's range or tie counts when torch said so: when the export `went_on`, a suggested
    fix of torch's for it was applied (torch narrows a named Dim in no other way); else its error
    names the size (relocate_refusal). A hint's bounds are narrowed silently: the facts decide."""
    recorded = job.shape_facts
    if recorded is None:
        return []
    facts = recorded.facts
    by_size: dict[InputSize, list[Any]] = {}
    for fact in facts:
        for source in fact.sources:
            size = InputSize.parse(source)
            if size is not None:
                by_size.setdefault(size, []).append(fact)
    fixes = "\n".join(fix.message for fix in recorded.fixes)
    found: list[tuple[int, Conflict]] = []
    tied_pairs: set[frozenset[InputSize]] = set()
    for size, size_facts in by_size.items():
        declared = _declaration(job, size)
        if declared is None or declared.dim.hint == "STATIC":
            continue
        fixed = next((fact for fact in size_facts if fact.value is not None), None)
        if fixed is not None:
            found.append(_conflict(job, facts, fixed, size, declared, f"fixes it to {fixed.value}",
                                   f"torch.export specialized it, and the ONNX model only accepts {fixed.value} there",
                                   fixed_to=fixed.value))
            continue
        confirmed = not went_on or declared.dim.name is None or bool(_suggested_fix(fixes, declared.name))
        if confirmed:
            found.extend(_narrowed(job, facts, size, size_facts, declared, fixes))
        for fact in size_facts:
            tie = _tie(job, size, declared, fact, tied_pairs)
            if tie is not None:
                other, other_declared = tie
                fix = _suggested_fix(fixes, declared.name) or _suggested_fix(fixes, other_declared.name)
                if went_on and not fix:
                    continue
                relation = _relation(size, fact)
                found.append(_conflict(
                    job, facts, fact, size, declared, f"ties it to {other.describe()}"
                    + (f" (`{other_declared.name}`)" if other_declared.name else "")
                    + (f": {relation}" if relation else ""),
                    f"torch.export tied the two{fix}, and the ONNX model only accepts inputs where that holds"))
                break
    found.sort(key=lambda entry: entry[0])
    return [conflict for _, conflict in found]


def _narrowed(job: Job, facts: list[Any], size: InputSize, size_facts: list[Any], declared: _Declared,
              fixes: str) -> list[tuple[int, Conflict]]:
    """The bounds the code put on a size beyond the declared ones: the lower and the upper, each
    on the line that first reached it."""
    bounds = declared.dim
    named = declared.dim.name is not None
    lowers = [fact.lower for fact in size_facts if fact.lower is not None]
    uppers = [fact.upper for fact in size_facts if fact.upper is not None]
    lower = max(lowers) if lowers else None
    upper = min(uppers) if uppers else None
    # A named Dim claims its whole range (torch's default one too); a hint only the bounds given.
    lower_conflict = lower is not None and (named or bounds.min is not None) and lower > max(
        bounds.min or 0, _SMALLEST_DYNAMIC)
    upper_conflict = upper is not None and (named or bounds.max is not None) and (
        bounds.max is None or upper < bounds.max)
    culprits = []
    if lower_conflict:
        culprits.append(next(fact for fact in size_facts if fact.lower == lower))
    if upper_conflict:
        culprit = next(fact for fact in size_facts if fact.upper == upper)
        if all(culprit is not other for other in culprits):
            culprits.append(culprit)
    if not culprits:
        return []
    narrowed = _interval(lower if lower_conflict else bounds.min, upper if upper_conflict else bounds.max)
    fix = _suggested_fix(fixes, declared.name)
    found = []
    for culprit in culprits:
        holds = _range_text(culprit.lower if lower_conflict and culprit.lower == lower else None,
                            culprit.upper if upper_conflict and culprit.upper == upper else None)
        found.append(_conflict(
            job, facts, culprit, size, declared,
            f"holds only for sizes {holds}",
            f"torch.export narrowed it to {narrowed}{fix} and exported; the ONNX model does not check the range: "
            "with a size outside it, it may compute something else than torch, or fail",
            bounds=_range_text(bounds.min, bounds.max)))
    return found


def _tie(job: Job, size: InputSize, declared: _Declared, fact: Any,
         seen: set[frozenset[InputSize]]) -> tuple[InputSize, _Declared] | None:
    """The other size a fact ties this one to, when the spec declares them as different named
    Dims (hints may be tied as the code needs; a derived Dim is tied to its root by design)."""
    if declared.dim.root is None:
        return None
    for source in fact.tied_to:
        other = InputSize.parse(source)
        other_declared = _declaration(job, other) if other is not None and other != size else None
        if other_declared is None or other_declared.dim.root in (None, declared.dim.root):
            continue
        pair = frozenset((size, other))
        if pair in seen:
            return None
        seen.add(pair)
        return other, other_declared
    return None


def _relation(size: InputSize, fact: Any) -> str:
    """`y` dim 0 = `x` dim 0 + 1, over the sizes as messages name them ("" if unknown)."""
    if not fact.expression:
        return ""
    relation = fact.expression
    for source in sorted(fact.tied_to, key=len, reverse=True):
        other = InputSize.parse(source)
        if other is not None:
            relation = relation.replace(source, other.describe())
    return f"{size.describe()} = {relation}"


def _conflict(job: Job, facts: list[Any], fact: Any, size: InputSize, declared: _Declared, code_does: str,
              consequence: str, *, bounds: str = "", fixed_to: int | None = None) -> tuple[int, Conflict]:
    placed = _inner_fact(job, facts, fact) or fact
    place = locate(from_traceback(placed.stack), job.workspace)
    in_library = place.at_fallback(job.fallback)
    return _position(facts, fact), Conflict(size, declared.name, "dynamic" + (f" (sizes {bounds})" if bounds else ""),
                                       code_does, consequence, place, in_library, fixed_to)


def _inner_fact(job: Job, facts: list[Any], fact: Any) -> Any | None:
    """For a fact learnt at a higher-order op's call (the body's guards checked on the op's
    inputs), the fact learnt inside the body at that call with the same outcome: the same
    frames of the model's code up to the call, then the body's (traced) frames."""
    if fact.traced_from < len(fact.stack):
        return None
    outer = _visible(job, fact.stack)
    for earlier in facts[:_position(facts, fact)]:
        same = (earlier.value, earlier.lower, earlier.upper) == (fact.value, fact.lower, fact.upper)
        if same and earlier.traced_from < len(earlier.stack) and _visible(job, earlier.stack[:earlier.traced_from]) == outer:
            return earlier
    return None


def _position(facts: list[Any], fact: Any) -> int:
    """Where a fact is in the order torch learnt them (by identity: equal facts may repeat)."""
    return next(index for index, other in enumerate(facts) if other is fact)


def _visible(job: Job, stack: list[Any]) -> list[tuple[str, int]]:
    return [(frame.file, frame.line) for frame in from_traceback(stack)
            if classify(frame.file, job.workspace) is not Origin.INTERNAL]


def _declaration(job: Job, size: InputSize) -> _Declared | None:
    """How the spec declares a size; None when it declares none (a static size, another capture's
    view of the inputs: strict's `flat_args`, a higher-order op's operands)."""
    spec = _lookup(_by_name(job.target.dynamic_shapes, job.target.model), size)
    if spec is _MISSING:
        return None
    dim = internals.declared_dim(spec)
    if dim is None:
        return None
    raw = _lookup(_by_name(job.raw_dynamic_shapes, job.target.model), size)
    name = raw if isinstance(raw, str) else dim.name if dim.hint is None else None
    return _Declared(name, dim)


_MISSING = object()


def _lookup(spec: Any, size: InputSize) -> Any:
    for key in size.path:
        if isinstance(spec, dict) and key in spec:
            spec = spec[key]
        elif isinstance(spec, (list, tuple)) and isinstance(key, int) and key < len(spec):
            spec = spec[key]
        else:
            return _MISSING
    if size.dim is None:
        return spec
    if isinstance(spec, dict):
        return spec.get(size.dim, _MISSING)
    if isinstance(spec, (list, tuple)) and size.dim < len(spec):
        return spec[size.dim]
    return _MISSING


def _by_name(spec: Any, model: Any) -> Any:
    """A spec given as a tuple (positional inputs) as torch reads it: by forward's parameters."""
    if not isinstance(spec, (list, tuple)):
        return spec
    try:
        parameters = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):
        return spec
    names = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return dict(zip(names, spec)) if len(spec) <= len(names) else spec


def _range_text(lower: int | None, upper: int | None) -> str:
    """`in [6, 16]`, `≥ 6`, `≤ 8`; "" for no bound."""
    if lower is not None and upper is not None:
        return f"in [{lower}, {upper}]"
    if lower is not None:
        return f"≥ {lower}"
    return f"≤ {upper}" if upper is not None else ""


def _interval(lower: int | None, upper: int | None) -> str:
    """`[6, 16]`, `[6, ∞)`, `[0, 8]`."""
    return f"[{lower or 0}, " + (f"{upper}]" if upper is not None else "∞)")


def _suggested_fix(fixes: str, name: str | None) -> str:
    """torch's suggested fix for a spec name, as the exporter applied it: ` (torch's suggested
    fix `batch = Dim('batch', min=6, max=16)`, which the exporter applied)`."""
    if not name:
        return ""
    match = re.search(rf"^\s*{re.escape(name)} = (.+)$", fixes, re.MULTILINE)
    return f" (torch's suggested fix `{name} = {match[1].strip()}`, which the exporter applied)" if match else ""
