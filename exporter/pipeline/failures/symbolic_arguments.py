"""Where a symbolic value passed to a torch function that wants a plain one was made.

torch's C functions refuse a symbolic value for a plain argument: `scaled_dot_product_attention():
argument 'is_causal' must be bool, not SymBool`. Under a dynamic dimension any comparison of a
size is such a value (`q_length > 1 and mask is None and is_causal`), and the line that made
it is not the call that refuses it: the traceback ends at the call. The call's argument, when
it is a variable, was last assigned on a line of the same function before the call; that line
is where the value became symbolic (related: "made here"). Read from the source (ast), never by
running anything.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from onnxlens.exporter.locations import Frame
from onnxlens.exporter.locations.syntax import enclosing_function, parsed

# torch's wording (torch/csrc/utils/python_arg_parser.cpp): "argument 'NAME' must be TYPE, not SymTYPE"
# (and "argument 'NAME' (position N) must be ...").
_REFUSED = re.compile(r"argument '(\w+)'(?: \(position (\d+)\))? must be [\w.\[\], ]+, not (Sym(?:Bool|Int|Float))")


@dataclass(frozen=True)
class SymbolicArgument:
    """The variable passed as a refused argument and the line that last assigned it."""

    argument: str  # the parameter's name in torch's message
    variable: str  # the caller's variable passed for it
    kind: str  # "SymBool" | "SymInt" | "SymFloat"
    made: Frame  # the assignment


def symbolic_argument(message: str, call: Frame) -> SymbolicArgument | None:
    """For torch's refusal in `message` of the call on `call`'s line: where its variable was
    last assigned before the call, in the same function. None when the message is not such a
    refusal, or the argument is no plain variable (an expression on the call's own line)."""
    refused = _REFUSED.search(message)
    if refused is None:
        return None
    argument, position, kind = refused.group(1), refused.group(2), refused.group(3)
    tree = parsed(call.file)
    if tree is None:
        return None
    variable = _passed_variable(tree, call.line, argument, int(position) - 1 if position else None)
    function = enclosing_function(tree, call.line)
    if variable is None or function is None:
        return None
    assigned = [node.lineno for node in ast.walk(function)
                if isinstance(node, ast.stmt | ast.expr) and node.lineno < call.line
                and _assigns(node, variable) and _can_make(node, kind)]
    if not assigned:
        return None
    return SymbolicArgument(argument, variable, kind, Frame(call.file, max(assigned), function.name))


def _can_make(node: ast.AST, kind: str) -> bool:
    """The assignment can give the variable a symbolic value of that kind: a SymBool is born of
    a comparison (`q_length > 1`, kept by `and`/`or`); a SymInt or SymFloat of any expression
    that is no literal. The branches not taken are not known here: those that cannot make one
    (`is_causal = False`) are ruled out."""
    value = getattr(node, "value", None)
    if value is None or isinstance(value, ast.Constant):
        return False
    if kind == "SymBool":
        return any(isinstance(part, ast.Compare) for part in ast.walk(value))
    return True


def _passed_variable(tree: ast.AST, line: int, argument: str, position: int | None) -> str | None:
    """The name passed for `argument` (by keyword, else at `position`) in a call on `line`."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.lineno <= line <= (node.end_lineno or node.lineno):
            continue
        value = next((keyword.value for keyword in node.keywords if keyword.arg == argument), None)
        if value is None and position is not None and position < len(node.args):
            value = node.args[position]
        if isinstance(value, ast.Name):
            return value.id
    return None


def _assigns(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
        targets = [node.target]
    else:
        return False
    return any(isinstance(target, ast.Name) and target.id == name
               for item in targets for target in ast.walk(item))

