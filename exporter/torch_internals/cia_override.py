"""torch's CompositeImplicitAutograd override, entered from a state recorded once per process.

`run_decompositions` wraps its trace in `_override_composite_implicit_decomp(cia_to_decomp)`:
for each of ~525 CompositeImplicitAutograd ops it registers ~22 Python kernels one call at a
time, and a FakeTensor rule; on leaving it puts the ops back. Entering costs 55–110 ms here, on
every export, whatever the model: a sixth of an MLP's whole save.

The state it produces depends only on the table and on the ops' kernels before it (both fixed
between jobs, in the zygote's children). So the table's tables.py entry records that state once
(`RecordedOverride.record`, by entering torch's own context manager and copying what it did),
and a job's decomposition enters by copying it back — the same dictionaries, the same kernel
objects, the same FakeTensor rules — and leaves exactly as torch leaves. Whenever the op kernels
or the table are not what was recorded (a library imported since registered a kernel, custom
translations change the table), torch's own context manager runs instead.

Part of the full adapters (torch_2_13.py: `record_cia_override`, `decompose`): the pipeline's
tables (pipeline/tables.py) keep the recording, the adapter enters it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator


@dataclass
class _RecordedOp:
    op: Any
    before: dict  # op.py_kernels before the override (what leaving restores)
    during: dict  # op.py_kernels inside the override
    had_fake_rule: bool  # a FakeTensor rule before the override (torch then registers none)
    fake_rule: Callable | None  # the FakeTensor rule inside the override


class RecordedOverride:
    def __init__(self, table: dict, ops: list[_RecordedOp]) -> None:
        self.table = table
        self.ops = ops
        self.entries = 0  # times entered from the recording (tests and benchmarks read it)

    @classmethod
    def record(cls, cia_to_decomp: dict) -> RecordedOverride | None:
        """Enter torch's override once and record what it did; None if this torch's pieces are
        not the ones this module knows (then every job runs torch's own)."""
        try:
            from torch._subclasses import fake_impls
            from torch.export import exported_program

            override = exported_program._override_composite_implicit_decomp
            rules = fake_impls.op_implementations_dict
            before = {op: (dict(op.py_kernels), op in rules) for op in cia_to_decomp}
            with override(cia_to_decomp):
                ops = [_RecordedOp(op, before[op][0], dict(op.py_kernels), before[op][1], rules.get(op))
                       for op in cia_to_decomp]
        except (ImportError, AttributeError):
            return None
        return cls(dict(cia_to_decomp), ops)

    def matches(self, cia_to_decomp: dict) -> bool:
        """The table, every op's kernels and FakeTensor rules as they were when recorded."""
        from torch._subclasses import fake_impls

        rules = fake_impls.op_implementations_dict
        return cia_to_decomp == self.table and all(
            recorded.op.py_kernels == recorded.before and (recorded.op in rules) == recorded.had_fake_rule
            for recorded in self.ops)

    @contextlib.contextmanager
    def entered(self) -> Iterator[None]:
        """What torch's `_override_composite_implicit_decomp(table)` does, from the recording."""
        from torch._subclasses import fake_impls

        self.entries += 1
        for recorded in self.ops:
            recorded.op.py_kernels.clear()
            recorded.op.py_kernels.update(recorded.during)
            recorded.op._dispatch_cache.clear()
            if not recorded.had_fake_rule and recorded.fake_rule is not None:
                fake_impls.op_implementations_dict[recorded.op] = recorded.fake_rule
        try:
            yield
        finally:  # as torch leaves (it deregisters every patched op's FakeTensor rule)
            for recorded in self.ops:
                recorded.op.py_kernels.clear()
                recorded.op.py_kernels.update(recorded.before)
                recorded.op._dispatch_cache.clear()
                fake_impls._deregister_op_impl(recorded.op)


@contextlib.contextmanager
def recorded_override(recorded: RecordedOverride | None) -> Iterator[None]:
    """While inside, torch's decomposition enters `recorded` when it matches its table (else its
    own override): the name torch looks up at call time is swapped for the duration."""
    from torch.export import exported_program

    original = exported_program._override_composite_implicit_decomp
    if recorded is None:
        yield
        return

    def override(cia_to_decomp: dict) -> contextlib.AbstractContextManager:
        return recorded.entered() if recorded.matches(cia_to_decomp) else original(cia_to_decomp)

    exported_program._override_composite_implicit_decomp = override
    try:
        yield
    finally:
        exported_program._override_composite_implicit_decomp = original
