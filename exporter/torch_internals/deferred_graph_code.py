"""Graph modules whose Python code is made when first needed, and named as if made at once.

A `torch.fx.GraphModule` generates and compiles Python code for its graph each time it
recompiles: when it is made, and after each pass that edits its graph. torch.export makes and
recompiles graph modules throughout capture and decomposition, mostly for code nothing ever
runs or reads. torch has a lazy kind (`_LazyGraphModule`, what dynamo and inductor make):
`recompile()` only marks the code stale, and the code is made when something first runs the
module or reads its code. Measured in one process with its gc off, as in a worker child
(alternating with eager capture, medians): the 7B Llama's capture 2.99 -> 2.27 s, nanoGPT's
1.18 -> 1.07 s, BERT-base's 641 -> 571 ms. The decomposition, eager against torch's own lazy
kind: the Llama 4.28 -> 4.00 s, BERT-base 0.96 -> 0.89 s, the encoder 1.22 -> 1.20 s; against
this kind, the same (Llama 4.23 / 4.18 s, BERT-base 913 / 910 ms).

torch's lazy modules alone change the .onnx, though. torch.fx names each piece of code it
compiles `<eval_with_key>.N`, N from a process-wide counter (`graph_module._loader`), and those
names reach the file: the stack traces of the nodes traced by running a graph module (autocast
regions, torch.cond bodies) name its code. A lazy module takes its N when its code is made, so
fewer and later: the Llama's rotary embedding (under `torch.autocast`) said `.7` where the
stock exporter says `.42`.

So the modules made here (`EagerlyNamedGraphModule`) keep the counter as eager ones do:
* `recompile()` takes the number an eager recompile would take at that moment, then recompiles
  the submodules, as an eager recompile does at that point (they take theirs in the same order);
* when the code is made, it is named with the number taken last, takes no new one, and does not
  recompile the submodules again (that was done when the number was taken).
Every other way to make the code (pickling calls `_real_recompile`) is torch's own, as in an
eager module, which recompiles there too.

Only modules torch would have made eager are made lazily here: inside dynamo, which chooses
lazy modules itself, torch's own lazy ones are made, numbered as stock numbers them. The
identity tests (tests/exporter/test_pipeline_identity.py: an autocast region, torch.cond
bodies, against a fresh process's public export) and the zoo's byte-identical models check
that the files stay stock's.

Part of the full adapters (torch_2_13.py: `capture`, `decompose` run inside
`graph_code_deferred()`).
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from torch.fx import _lazy_graph_module
from torch.fx.graph import _PyTreeCodeGen
from torch.fx.graph_module import GraphModule, _loader

_LazyGraphModule = _lazy_graph_module._LazyGraphModule


class EagerlyNamedGraphModule(_LazyGraphModule):
    """A lazy graph module whose code is named as an eager module's would be (module docstring).

    The number an eager recompile would have taken is kept on the module's own class, where
    torch keeps its `forward` (`GraphModule.__new__` makes a class per module)."""

    _code_number: int | None = None  # the number the next code made takes (None: take a new one)
    _making_code = False  # True while the code is made under `_code_number`

    def recompile(self) -> None:  # type: ignore[override]
        cls = type(self)
        if isinstance(self._graph._codegen, _PyTreeCodeGen):  # as GraphModule.recompile does first
            self._in_spec = self._graph._codegen.pytree_info.in_spec
            self._out_spec = self._graph._codegen.pytree_info.out_spec
        cls._code_number = _loader.next_id  # what `_loader._get_key()` takes
        _loader.next_id += 1
        cls.forward = cls._lazy_forward
        GraphModule._recompile_submodules(self)

    def real_recompile(self) -> None:
        cls = type(self)
        if not self._needs_recompile():
            return
        if cls._code_number is None:
            super().real_recompile()
            return
        # The counter is set back for the one number this compile takes, then restored: an
        # export runs on one thread (a worker child's job, or an in-process pipeline's).
        counter = _loader.next_id
        _loader.next_id, cls._code_number = cls._code_number, None
        cls._making_code = True
        try:
            self._real_recompile()  # takes exactly one number: its submodules are not recompiled
        finally:
            cls._making_code = False
            _loader.next_id = counter

    def _recompile_submodules(self) -> list[tuple[str, Any]]:
        if type(self)._making_code:
            return []
        return super()._recompile_submodules()


@contextlib.contextmanager
def graph_code_deferred() -> Iterator[None]:
    """Inside, the graph modules torch would make eager are `EagerlyNamedGraphModule`s.

    torch chooses the class in `_lazy_graph_module._get_graph_module_cls`, which
    `_make_graph_module` (what tracing, the interpreter and splitting make modules with) calls
    each time; its lazy flag is set by dynamo's own context, its skip flag by callers that need
    eager modules (TorchScript)."""
    stock = _lazy_graph_module._get_graph_module_cls

    def graph_module_class() -> type[GraphModule]:
        chosen = stock()
        if chosen is GraphModule and not _lazy_graph_module._force_skip_lazy_graph_module_flag:
            return EagerlyNamedGraphModule
        return chosen

    _lazy_graph_module._get_graph_module_cls = graph_module_class
    try:
        yield
    finally:
        _lazy_graph_module._get_graph_module_cls = stock
