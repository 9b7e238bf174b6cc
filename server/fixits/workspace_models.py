"""Which of a workspace's candidates (server/fixits/candidates.py) are the models a user means:
what `onnxlens init` and the offer for a workspace without a config add a target for.

* a factory function callable without arguments;
* a top-level class that is a model of its own, not a building block:
  - not a part: no other candidate class of the workspace uses it in its `__init__`
    (`Block(config)` inside `GPT.__init__`, `norm_class = RMSNorm`), whatever its file — a class
    nothing builds is a model even when it would fit in one — unless the workspace also builds
    it outside any class (`model = TransformerWrapper(...)` in a `__main__` block, a script, a
    test, the README): its authors use it on its own;
  - not a subclass of one of torch's own layers (`class LayerNorm(nn.LayerNorm)`): only
    nn.Module and the containers (`nn.Sequential`, `nn.ModuleList`, `nn.ModuleDict`) as torch
    bases, or a library's own base (BERT's `PreTrainedModel`);
  - with a forward (a base class without one is no model);
  - not one a factory of its file builds without arguments (the factory is its author's way);
  - built with arguments too: server/fixits/model_usage.py finds how the workspace builds it, and
    server/fixits/new_targets.py writes a `build_<name>()` from that.

A part is known by its module: the file's own class, or the module an import names (through a
package's `__init__` that re-exports it), so a `ViT` another file defines for itself does not
make vit.py's `ViT` a part.

Torch-free and LSP-free.
"""

from __future__ import annotations

from typing import Callable

from onnxlens.server.fixits.candidates import Candidate, absolute_module

TORCH_MODEL_BASES = frozenset({"Module", "Sequential", "ModuleList", "ModuleDict"})


def is_model(candidate: Candidate, siblings: list[Candidate], module: str, parts: frozenset[tuple[str, str]],
             built_outside_models: bool = False) -> bool:
    """The candidate is a model of its own (module docstring); `siblings`: its file's
    candidates, `module`: its file's dotted name from the root, `parts`: what the workspace's
    candidate classes build in their `__init__` (workspace_parts); `built_outside_models`: the
    workspace builds it outside any class too (a script, test, document, `__main__` block or
    function: server/fixits/model_usage.py), which makes a part a model as well."""
    if not candidate.top_level:
        return False
    if candidate.kind == "factory":
        return not candidate.needs_arguments
    if candidate.torch_base is not None and candidate.torch_base not in TORCH_MODEL_BASES:
        return False
    if candidate.forward is None and candidate.torch_base == "Module":
        return False
    if not built_outside_models and (module, candidate.name) in parts:
        return False
    return not any(s.kind == "factory" and not s.needs_arguments and s.model_class == candidate.name
                   for s in siblings)


def workspace_parts(candidates: dict[str, list[Candidate]],
                    defining_module: Callable[[str, str], str]) -> frozenset[tuple[str, str]]:
    """(module, class name) of the classes some candidate class uses in its `__init__`, other
    than itself; `candidates` by their file's dotted name; `defining_module(module, name)`: the
    module that defines a name imported from a module (a package's re-export followed:
    server/fixits/model_usage.py UsageIndex.defining_module)."""
    found = set()
    for module, in_file in candidates.items():
        for candidate in in_file:
            for where, name in candidate.parts if candidate.kind == "class" else ():
                origin = absolute_module(where, module)
                if origin is not None and where:
                    origin = defining_module(origin, name)
                if origin is not None and (origin, name) != (module, candidate.name):
                    found.add((origin, name))
    return frozenset(found)
