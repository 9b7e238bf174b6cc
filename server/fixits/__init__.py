"""Fix-its: the quick fixes, decided torch-free and LSP-free as plain text insertions.

    fix.py            `Fix`, the one shape of a quick fix (title, insertions, where to show
                      once applied); `ConfiguredTarget`, what a target's fix is planned from
    registry.py       which fixes there are and where each is offered: the table the
                      code-action feature (server/lsp/features/code_actions.py) reads
    edits.py          `Insertion`, applied to text (`onnxlens init`) or turned into a
                      WorkspaceEdit (server/lsp/features/workspace_edits.py); the module a fix may edit
    translation.py    "Write an ONNX translation for aten.X": the stub into the target's
                      custom-translations module (created and registered when there is none)
    decomposition.py  "Decompose aten.X with torch's decomposition": the op into the target's
                      `extra-decompositions`
    dynamic_shapes.py "Declare dynamic shapes": the proposed factory and the `dynamic-shapes` key
    New targets ("Add <Name> as an ONNX export target", `onnxlens init`, the offer):
    candidates.py     what in a Python file could be a target, read with ast
    workspace_models.py  which candidates are models of their own: the one rule of init and the offer
    model_usage.py    how the workspace builds and calls its models
    new_targets.py    the edits adding targets (`NewTargets`; its `fix`)
    workspace_scan.py the bounded scan of a workspace for models without a target
    buffer_targets.py the new targets of an editor buffer's selected lines (the helper process)

What a fix writes that only the worker can decide (an op's schema, torch's decompositions, the
example inputs) comes in the export's result, from exporter/proposals/.
"""
