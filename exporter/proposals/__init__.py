"""What the worker proposes for the quick fixes: the halves of the fix-its that need torch.

The server's fix-its (server/fixits/) decide the edits that write a proposal into the user's
files, torch-free; what to write is decided here, in the worker, because only it has what the
decision needs: the op's schema, torch's decomposition tables, the example inputs.

    translation_stubs.py     per op without a translation, the start of an ONNX translation
                             (parameters from the op's schema): "Write an ONNX translation"
    decomposition_offers.py  torch's decompositions the exporter leaves out, offered for an op
                             when, traced on the call, they lead to translated ops: "Decompose
                             aten.X"; the table a target's `extra-decompositions` applies
    dynamic_shapes.py        a dynamic-shapes factory for a target that declares none, from its
                             example inputs: "Declare dynamic shapes"

A wing: the stages (exporter/pipeline/) import it, it never imports a stage. Each proposal
travels in the result as plain data (exporter/types.py: TranslationStub, DecompositionOffer,
ShapesProposal).
"""
