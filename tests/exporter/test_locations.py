"""Where a finding lands: which files are the user's, the frame parsers, columns, the chain.

Torch-free: the stack traces are real torch output captured once (data/torch_frames.json), the
tracebacks and faulthandler dumps are produced here by real Python, and the paths are this
machine's: the venv's site-packages, Python's standard library, a workspace in tmp_path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import traceback
from pathlib import Path

import pytest

from tests.support.workspace import line_of
from onnxlens.exporter import locations
from onnxlens.exporter.locations import Origin, Workspace, classify
from onnxlens.exporter.types import Location, TargetSpec
from onnxlens.exporter.worker import crashes

DATA = json.loads((Path(__file__).parent / "data" / "torch_frames.json").read_text())
SITE = sysconfig.get_paths()["purelib"]
TORCH_FILE = os.path.join(SITE, "torch", "nn", "modules", "linear.py")
TRANSFORMERS_FILE = os.path.join(SITE, "transformers", "models", "bert", "modeling_bert.py")
STDLIB_FILE = os.path.realpath(json.__file__)
OWN_FILE = os.path.realpath(locations.__file__)


@pytest.fixture
def root(tmp_path) -> Path:
    """A workspace with the captured models at the paths their stack traces name."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "model.py").write_text(DATA["model_py"])
    (workspace / "libmodel.py").write_text(DATA["library_model_py"])
    return workspace


def trace(name: str, root: Path) -> str:
    return DATA["stack_trace"][name].replace("{workspace}", str(root)).replace("{site_packages}", SITE)


def test_the_real_files_exist():
    for path in (TORCH_FILE, TRANSFORMERS_FILE, STDLIB_FILE):
        assert os.path.isfile(path), path


# -- which files are the user's -------------------------------------------------------------

def test_workspace_files_are_the_users_and_installed_or_generated_files_are_not(root):
    (root / ".venv" / "lib").mkdir(parents=True)
    (root / ".venv" / "lib" / "dep.py").write_text("")
    (root / "env" / "x").mkdir(parents=True)
    (root / "env" / "pyvenv.cfg").write_text("")
    (root / "env" / "x" / "dep.py").write_text("")
    (root / "vendor" / "site-packages").mkdir(parents=True)
    (root / "vendor" / "site-packages" / "lib.py").write_text("")
    (root / "out").mkdir()
    (root / "out" / "gen.py").write_text("")
    workspace = Workspace(str(root), str(root / "out"))
    assert workspace.contains(str(root / "model.py"))
    assert not workspace.contains(str(root / ".venv" / "lib" / "dep.py"))
    assert not workspace.contains(str(root / "env" / "x" / "dep.py"))  # a venv under any name
    assert not workspace.contains(str(root / "vendor" / "site-packages" / "lib.py"))
    assert not workspace.contains(str(root / "out" / "gen.py"))
    for outside in (TORCH_FILE, TRANSFORMERS_FILE, STDLIB_FILE, "<string>", "<frozen os>", ""):
        assert not workspace.contains(outside)


def test_torch_the_onnx_stack_python_and_onnxlens_are_internal_other_libraries_are_not(root):
    workspace = Workspace(str(root))
    internal = [TORCH_FILE, STDLIB_FILE, OWN_FILE, "<string>", "<frozen importlib._bootstrap>",
                "<eval_with_key>.3", os.path.join(SITE, "torch", "_dynamo", "eval_frame.py")]
    internal += [os.path.join(SITE, package, "x.py")
                 for package in ("onnx", "onnxscript", "onnx_ir", "onnxruntime", "functorch")]
    for path in internal:
        assert classify(path, workspace) is Origin.INTERNAL, path
    # Third-party model code stays in the chain; the workspace is the user's.
    assert classify(TRANSFORMERS_FILE, workspace) is Origin.LIBRARY
    assert classify(str(root / "model.py"), workspace) is Origin.USER
    vendored_torch = root / ".venv" / "lib" / "python3.11" / "site-packages" / "torch" / "x.py"
    assert classify(str(vendored_torch), workspace) is Origin.INTERNAL
    # torch names the frames of nodes its passes insert relative to its package (the runtime
    # asserts' sizes: "torch/fx/passes/runtime_assert.py"): torch's, though the process runs in
    # the workspace, where that relative path would resolve.
    assert classify("torch/fx/passes/runtime_assert.py", workspace) is Origin.INTERNAL


def test_without_a_workspace_files_outside_installed_packages_are_the_users(root):
    assert classify(str(root / "model.py"), None) is Origin.USER
    assert classify(TRANSFORMERS_FILE, None) is Origin.LIBRARY
    assert classify(TORCH_FILE, None) is Origin.INTERNAL


# -- parsers ---------------------------------------------------------------------------------

def test_fx_stack_trace_of_non_strict_capture_with_a_helper(root):
    frames = locations.from_stack_trace(trace("non_strict_helper", root))
    assert [(f.file, f.line, f.func) for f in frames] == [
        (str(root / "model.py"), line_of(root / "model.py", "# call-line"), "forward"),
        (str(root / "model.py"), line_of(root / "model.py", "# helper-line"), "squash")]


def test_fx_stack_trace_of_strict_capture_keeps_code_lines_not_carets(root):
    frames = locations.from_stack_trace(trace("strict_helper", root))
    assert [f.func for f in frames] == ["forward", "forward", "squash"]
    assert frames[0].file == os.path.join(SITE, "torch", "_dynamo", "functional_export.py")
    assert frames[2].code == "return torch.special.zeta(x, 2.0) * 2  # helper-line"
    assert all(not (f.code or "").startswith("^") for f in frames)


def _raise_from_workspace(root: Path) -> BaseException:
    path = root / "raiser.py"
    path.write_text('def boom():\n    größe = 4; raise ValueError(f"no weights for {größe}")  # raise\n')
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    try:
        namespace["boom"]()
    except ValueError as error:
        return error
    raise AssertionError("did not raise")


def test_traceback_frames_have_character_columns_on_non_ascii_lines(root):
    error = _raise_from_workspace(root)
    frames = locations.from_traceback(error)
    assert frames == locations.from_traceback(traceback.extract_tb(error.__traceback__))
    frame = frames[-1]
    text = (root / "raiser.py").read_text().splitlines()[frame.line - 1]
    assert text[frame.column - 1:frame.end_column - 1] == 'raise ValueError(f"no weights for {größe}")'


def test_byte_offsets_become_character_columns(root):
    path = root / "raiser.py"
    path.write_text("größe = f(x)\n")
    offset = "größe = ".encode("utf-8").__len__()  # 10 bytes, 8 characters
    assert locations.character_column("größe = f(x)", offset) == 9
    assert locations.character_column("größe = f(x)", 0) == 1


_DUMP_SCRIPT = '''
import faulthandler, sys, threading, time
sys.path.insert(0, {root!r})
import hang
hang.main({mode!r})
'''

_HANG = '''import faulthandler, sys, threading, time


def spin(event):
    event.wait()  # thread-line


def work(mode):
    if mode == "dump":
        faulthandler.dump_traceback(all_threads=True)  # dump-line
    else:
        faulthandler._sigsegv()  # crash-line


def main(mode):
    event = threading.Event()
    threading.Thread(target=spin, args=(event,), daemon=True).start()
    time.sleep(0.1)
    faulthandler.enable()
    work(mode)  # call-line
    event.set()
'''


def faulthandler_output(root: Path, mode: str) -> str:
    (root / "hang.py").write_text(_HANG)
    process = subprocess.run([sys.executable, "-c", _DUMP_SCRIPT.format(root=str(root), mode=mode)],
                             capture_output=True, text=True, timeout=60)
    return process.stderr


@pytest.mark.parametrize("mode, line", [("dump", "# dump-line"), ("crash", "# crash-line")])
def test_faulthandler_dumps_current_thread_first(root, mode, line):
    text = faulthandler_output(root, mode)
    threads = locations.from_faulthandler(text)
    hang = str(root / "hang.py")
    assert (threads[0][-1].file, threads[0][-1].line) == (hang, line_of(root / "hang.py", line))
    assert [f.func for f in threads[0] if f.file == hang] == ["main", "work"]  # outermost first
    assert any(f.func == "spin" for thread in threads[1:] for f in thread)


# -- the chain -------------------------------------------------------------------------------

def test_unsupported_op_lands_on_the_helper_call_with_the_caller_related(root):
    frames = locations.from_stack_trace(trace("non_strict_helper", root))
    names = locations.call_names_for_op("builtin_function_or_method.special_zeta", "aten.special_zeta.default")
    place = locations.locate(frames, Workspace(str(root)), call_names=names)
    location, related, text = place.location, place.related, place.source_line
    model = root / "model.py"
    assert (location.file, location.line) == (str(model), line_of(model, "# helper-line"))
    assert text[location.column - 1:location.end_column - 1] == "torch.special.zeta(x, 2.0)"
    assert [(r.line, r.message, r.column) for r in related] == [
        (line_of(model, "# call-line"), "called from here", 9)]


def test_library_model_frames_stay_in_the_chain_torch_frames_do_not(root):
    frames = locations.from_stack_trace(trace("library_model", root))
    place = locations.locate(frames, Workspace(str(root)))
    assert (place.location.file, place.location.line) == (
        str(root / "libmodel.py"), line_of(root / "libmodel.py", "# wrapper"))
    assert [(os.path.basename(r.file), r.message, r.column) for r in place.related] == [
        ("activations.py", "inside forward (library code)", 9),
        ("modeling_bert.py", "inside forward (library code)", 9)]


def test_without_a_workspace_frame_there_is_no_primary_and_the_library_chain_is_related(root, tmp_path):
    frames = locations.from_stack_trace(trace("library_model", root))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    place = locations.locate(frames, Workspace(str(elsewhere)))
    assert place.location is None and place.source_line is None
    assert [os.path.basename(r.file) for r in place.related] == ["activations.py", "modeling_bert.py", "libmodel.py"]
    assert all(r.message == "inside forward (library code)" for r in place.related)
    # The finding then goes to the model's definition.
    definition = Location(file=str(root / "libmodel.py"), line=line_of(root / "libmodel.py", "class Wrapper"))
    assert place.at_fallback(definition) and place.location == definition
    assert place.source_line.startswith("class Wrapper")
    assert not place.at_fallback(definition)


def test_a_node_lands_on_the_call_of_its_module_with_the_module_path(root):
    meta = {"stack_trace": trace("strict_linear", root),
            "nn_module_stack": DATA["nn_module_stack"]["strict_linear"]}
    place = locations.locate_node(meta, Workspace(str(root)))
    model = root / "model.py"
    assert (place.location.file, place.location.line) == (str(model), line_of(model, "h = self.proj(x)"))
    text = place.source_line
    assert text[place.location.column - 1:place.location.end_column - 1] == "self.proj(x)"
    assert place.module_path == "proj" and place.related == []


def test_a_node_in_a_library_model_names_the_library_modules_in_the_chain(root):
    meta = {"stack_trace": trace("library_model", root),
            "nn_module_stack": DATA["nn_module_stack"]["library_model"]}
    place = locations.locate_node(meta, Workspace(str(root)))
    assert place.location.line == line_of(root / "libmodel.py", "# wrapper-line")
    assert place.source_line[place.location.column - 1:place.location.end_column - 1] == "self.inner(x)"
    assert place.module_path == "inner.intermediate_act_fn"
    assert [r.message for r in place.related] == [
        "inside GELUActivation.forward() of `inner.intermediate_act_fn`: return self.act(input)",
        "inside BertIntermediate.forward() of `inner`: "
        "hidden_states = self.intermediate_act_fn(hidden_states)"]


def test_a_crash_lands_on_the_innermost_workspace_frame_of_the_dump(root):
    threads = locations.from_faulthandler(faulthandler_output(root, "crash"))
    spec = TargetSpec(name="m", root=str(root), model="model.py:M", inputs="model.py:inputs",
                      output=str(root / "out" / "m.onnx"), report=str(root / "out" / "m.md"))
    frames = crashes.running_frames(threads, Workspace.of(spec))
    finding = crashes.finding_at("crash", "died", "capture", frames, spec)
    hang = root / "hang.py"
    assert (finding.location.file, finding.location.line) == (str(hang), line_of(hang, "# crash-line"))
    text = hang.read_text().splitlines()[finding.location.line - 1]
    assert text[finding.location.column - 1:finding.location.end_column - 1] == text.strip()  # the whole line
    assert [(r.line, r.message) for r in finding.related] == [
        (line_of(hang, "work(mode)  # call-line"), "called from here (in main)")]
    without = crashes.finding_at("crash", "died", "capture", [], spec)
    model = root / "model.py"
    assert (without.location.file, without.location.line) == (str(model), line_of(model, "class M("))


def test_a_crash_outside_the_users_code_is_shown_at_the_model_with_the_library_chain_related(root, tmp_path):
    library = tmp_path / "library"
    library.mkdir()
    threads = locations.from_faulthandler(faulthandler_output(library, "crash"))
    spec = TargetSpec(name="m", root=str(root), model="model.py:M", inputs="model.py:inputs",
                      output=str(root / "out" / "m.onnx"), report=str(root / "out" / "m.md"))
    finding = crashes.finding_at("crash", "died", "capture", crashes.running_frames(threads, Workspace.of(spec)), spec)
    assert finding.location.line == line_of(root / "model.py", "class M(")
    assert [(os.path.basename(r.file), r.message) for r in finding.related] == [
        ("hang.py", "inside work (library code)"), ("hang.py", "inside main (library code)")]


def test_find_call_and_the_names_a_user_may_have_written():
    assert locations.call_names_for_op("builtin_function_or_method.linalg_eigvals", "aten.linalg_eig.default")[:2] == [
        "linalg.eigvals", "linalg_eigvals"]
    assert locations.find_call("    y = torch.linalg.eigvals(h).real  # x", ["linalg.eigvals"]) == (8, 31)
    assert locations.find_call("y = f(g(x)", ["f"]) == (4, 10)  # unbalanced: to the line's end


def test_a_node_without_a_workspace_frame_has_no_primary_and_the_library_chain_is_related(root, tmp_path):
    """A mismatch stays in the workspace as an error does (docs/diagnostics.md): no primary in
    transformers' files; the caller puts it at the model's definition, the library frames
    (transformers', and libmodel.py, outside this workspace) still say where it happened. The
    innermost library frame as the primary would put a warning in site-packages, where the user
    cannot act on it."""
    meta = {"stack_trace": trace("library_model", root),
            "nn_module_stack": DATA["nn_module_stack"]["library_model"]}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    place = locations.locate_node(meta, Workspace(str(elsewhere)))
    assert place.location is None
    assert [os.path.basename(r.file) for r in place.related] == ["activations.py", "modeling_bert.py", "libmodel.py"]
    assert place.related[0].message.startswith("inside GELUActivation.forward()")


def test_module_lists_read_as_ranges_in_numeric_order():
    from onnxlens.exporter.locations.names import module_list

    assert module_list([f"layers.{i}.attn" for i in range(32)]) == "layers.0–31.attn"
    assert module_list([f"layers.{i}" for i in (10, 0, 1, 2, 5, 11)]) == "layers.[0–2, 5, 10–11]"
    assert module_list([f"blocks.{b}.layers.{i}" for b in range(2) for i in range(4)]) == "blocks.0–1.layers.0–3"
    assert module_list(["pooler", "encoder.layer.10.output", "encoder.layer.2.output"]) == (
        "encoder.layer.[2, 10].output, pooler")


def test_library_places_are_named_inside_their_package(root):
    from onnxlens.exporter.locations.names import calling_library_frame, library_function, short_path

    assert short_path(TRANSFORMERS_FILE) == "transformers/models/bert/modeling_bert.py"
    workspace = Workspace(str(root))
    assert short_path(str(root / "model.py"), workspace) == "model.py"
    frames = locations.from_stack_trace(trace("library_model", root))
    innermost = calling_library_frame(frames, workspace)
    assert library_function(innermost, workspace).startswith("in `forward`, transformers/activations.py:")
    user_only = [f for f in frames if f.file.startswith(str(root))]
    assert calling_library_frame(user_only, workspace) is None  # the user's own line called it
