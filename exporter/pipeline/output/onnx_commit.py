"""The .onnx and its weights committed with one rename; then the weights named by their content.

The model is saved exactly as `torch.onnx.export(..., f=path, dynamo=True)` saves it, in a
private staging directory next to the destination (the rules of exporter/atomic.py:
`.<name>.*.tmp`), and then committed (`save_onnx`):

1. the weights, `<name>.onnx.data` as torch wrote them, are renamed to a name of their own
   beside the old pair (`<name>.onnx.<16 hex digits>.data`, a random token: onnx_pair.py), which
   nothing names yet. When the committed pair's data file holds exactly the bytes this save
   would write (the usual save: the code changed, the weights did not), that file is hard-linked
   under the token's name instead, and nothing is written (kept_weights.py);
2. the graph, its external-data locations naming that file, is renamed over the .onnx: the
   commit, one rename;
3. only then the data files of earlier saves (and the stock-named `<name>.onnx.data`) go, with
   whatever killed saves left behind.

The export's result follows. Then (`name_by_content`, Pipeline.finish: while verification runs,
on a thread of its own: `Naming`) the weights get their content's name,
`<name>.onnx.<sha256[:16]>.data`, by a second commit:

4. the weights are linked under that name too (a hard link: the same inode), which nothing
   names yet;
5. the graph naming it is renamed over the .onnx: the second commit;
6. the token's name goes.

So the saved pair ends named by content (identical weights, identical files), and the save
does not read the weights back (~0.3 s per 500 MB of hashing) before the result. Where the file
system cannot link, or the .onnx is no longer this save's (a newer save committed), the token's
name stays: the pair is whole either way.

Invariant: a process killed at any instant of a save (either commit) leaves a .onnx that is
either the old pair (its graph and the weights it names, untouched) or the new one; never the
old graph beside the new weights, which onnxruntime would run with wrong numbers
(tests/exporter/test_save_kills.py kills a real save at each of its file-system syscalls). Two
processes saving the same output (the editor and `onnxlens check`) take turns (a lock on the
output directory), so the cleanup of one never removes the data the other committed. Kills, not
power loss: nothing is fsync-ed.

The bytes are the public API's but for the data file's name in the graph
(onnx_pair.public_api_difference). The files get the mode a plain `open()` gives them, as the
public API's do. Each file is recorded as written (`written`, exporter/written.py), for the cache
to check: the saved result the weights by their inode's identity only, the completed one (after
step 6) with their digest.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import secrets
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from typing import Any, Iterator

import onnx

from onnxlens.exporter import atomic, onnx_pair, written
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.pipeline.output import kept_weights
from onnxlens.exporter.types import ExportResult, WrittenFile


@dataclass
class SavedModel:
    onnx: str
    data: str | None  # the data file the .onnx names; None for a model without external weights
    written: list[WrittenFile] = field(default_factory=list)
    weights_kept: bool = False  # the data file is the one the pair before named (kept_weights.py)


def save_onnx(onnx_program: Any, destination: str) -> SavedModel:
    """Save like the public API, the data file under a name of its own, and commit the pair
    with one rename (the module's steps 1-3; `name_by_content` does the rest)."""
    destination = os.path.abspath(destination)
    directory, name = os.path.split(destination)
    os.makedirs(directory, exist_ok=True)
    with _commit_lock(directory):
        staging = tempfile.mkdtemp(prefix=atomic.staging_prefix(name), suffix=".tmp", dir=directory)
        descriptors: list[int] = []
        try:
            staged = os.path.join(staging, name)
            staged_data = os.path.join(staging, onnx_pair.stock_data_file_name(name))
            # The new weights get a name beside the old pair that nothing names yet.
            data = _unused_data_name(directory, name)
            committed = _committed_data(destination)
            kept = committed is not None and kept_weights.save_keeping(onnx_program, staged, committed, data)
            if not kept:
                onnx_program.save(staged, include_initializers=True, keep_initializers_as_inputs=False,
                                  external_data=True)
            model = onnx.load(staged, load_external_data=False)
            if _names_weights(model, name):
                data_fd = _open(data if kept else staged_data, os.O_RDONLY, descriptors)
                onnx_pair.relocate(model, os.path.basename(staged_data), os.path.basename(data))
                graph_fd = _open(staged, os.O_RDWR | os.O_TRUNC, descriptors)
                _write_all(graph_fd, model.SerializeToString())
                if not kept:
                    os.replace(staged_data, data)
            else:
                if kept:  # weights no graph will name (a committed data file that held nothing)
                    os.remove(data)
                data = None
                graph_fd = _open(staged, os.O_RDONLY, descriptors)
            graph_sha256 = written.sha256_of_fd(graph_fd)
            try:
                os.replace(staged, destination)  # the commit
            except OSError:
                if data is not None:  # weights no graph will name
                    with contextlib.suppress(OSError):
                        os.remove(data)
                raise
            _remove_superseded_data(directory, name, keep=data)
            # Recorded after the removals: kept weights are an inode the old pair's name also
            # linked, and its unlinking changed the inode's ctime.
            files = [written.recorded(destination, graph_fd, graph_sha256)]
            if data is not None:
                files.append(written.recorded(data, data_fd))  # its digest: name_by_content
            atomic.remove_stale_staging(directory, name, keep=staging)
            return SavedModel(onnx=destination, data=data, written=files, weights_kept=kept and data is not None)
        finally:
            for fd in descriptors:
                os.close(fd)
            shutil.rmtree(staging, ignore_errors=True)


def name_by_content(saved: SavedModel) -> SavedModel:
    """The weights of a committed save renamed to their content's name (the module's steps
    4-6); `saved` itself, its weights' digest taken, where the file system cannot link. Raises
    OSError when the files are no longer the ones `saved` records (a newer save's, say)."""
    if saved.data is None:
        return saved
    graph_file, data_file = saved.written
    directory, name = os.path.split(saved.onnx)
    with _commit_lock(directory):
        descriptors: list[int] = []
        staging = None
        try:
            data_fd = _open(saved.data, os.O_RDONLY | os.O_NOFOLLOW, descriptors)
            graph_fd = _open(saved.onnx, os.O_RDONLY | os.O_NOFOLLOW, descriptors)
            if not (written.is_file(data_fd, data_file) and written.is_file(graph_fd, graph_file)):
                raise FileExistsError(f"{saved.onnx} is no longer the pair this export saved")
            data_sha256 = written.sha256_of_fd(data_fd)
            data = os.path.join(directory, onnx_pair.data_file_name(name, data_sha256))
            model = onnx.load_from_string(written.read_fd(graph_fd))
            onnx_pair.relocate(model, os.path.basename(saved.data), os.path.basename(data))
            graph = model.SerializeToString()
            staging = tempfile.mkdtemp(prefix=atomic.staging_prefix(name), suffix=".tmp", dir=directory)
            linked = os.path.join(staging, os.path.basename(data))
            try:
                os.link(saved.data, linked)
            except OSError:  # no hard links here: the pair keeps the token's name
                return SavedModel(saved.onnx, saved.data, [graph_file, written.recorded(saved.data, data_fd, data_sha256)])
            staged = os.path.join(staging, name)
            staged_fd = _open(staged, os.O_RDWR | os.O_CREAT | os.O_EXCL, descriptors)  # the mode open() gives
            _write_all(staged_fd, graph)
            os.replace(linked, data)  # the weights under their content's name too; nothing names it yet
            os.replace(staged, saved.onnx)  # the second commit
            _remove_superseded_data(directory, name, keep=data)  # the token's name among them
            return SavedModel(saved.onnx, data, [written.recorded(saved.onnx, staged_fd, hashlib.sha256(graph).hexdigest()),
                                                 written.recorded(data, data_fd, data_sha256)])
        finally:
            for fd in descriptors:
                os.close(fd)
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)


class Naming:
    """`name_by_content` for a saved result, on a thread of its own (hashlib lets go of the GIL:
    it runs beside verification); `join` puts the outcome on the result, on the caller's thread
    (the job's events go out from there only)."""

    def __init__(self, result: ExportResult) -> None:
        self.saved = SavedModel(result.onnx, result.onnx_data, list(result.written)) if result.onnx else None
        self.outcome: SavedModel | BaseException | None = None
        self.thread = threading.Thread(target=self._name, name="onnxlens-naming", daemon=True)
        if self.saved is not None and self.saved.data is not None:
            self.thread.start()

    def _name(self) -> None:
        try:
            self.outcome = name_by_content(self.saved)
        except BaseException as error:  # noqa: BLE001 - reported by join, on the job's thread
            self.outcome = error

    def join(self, job: Job) -> None:
        if not self.thread.is_alive() and self.outcome is None:
            return
        self.thread.join()
        if isinstance(self.outcome, SavedModel):
            job.result.onnx_data, job.result.written = self.outcome.data, self.outcome.written
        else:
            job.log(f"{job.spec.name}: the weights keep the name {self.saved.data}: "
                    f"{type(self.outcome).__name__}: {self.outcome}")


def _committed_data(destination: str) -> str | None:
    """The data file the committed .onnx at `destination` names, one of its own beside it (ours or
    the stock name); None for none, or a .onnx that cannot be read as one."""
    try:
        data = onnx_pair.named_data_file(destination)
    except Exception:  # noqa: BLE001 - no pair, or not one to keep anything of: a full save
        return None
    if data is None or not onnx_pair.is_data_file_of(data.name, os.path.basename(destination)):
        return None
    return str(data)


def _unused_data_name(directory: str, name: str) -> str:
    """A data file name no file in `directory` has: a random token (a clash, one in 2**64, draws
    again), so the new weights never land on a file the old pair names."""
    while True:
        path = os.path.join(directory, onnx_pair.data_file_name(name, secrets.token_hex(onnx_pair.DIGEST_CHARS // 2)))
        if not os.path.lexists(path):
            return path


def _names_weights(model: onnx.ModelProto, name: str) -> bool:
    """The saved graph keeps weights in the stock data file (a model without any names none;
    torch still leaves an empty data file, which goes with the staging directory)."""
    named = onnx_pair.locations(model)
    stock = onnx_pair.stock_data_file_name(name)
    if named - {stock}:
        raise RuntimeError(f"the saved graph names {sorted(named)} for its weights, expected {stock} only")
    return bool(named)


def _remove_superseded_data(directory: str, name: str, keep: str | None) -> None:
    """Every data file of `name` but the committed one: earlier saves', killed saves' and the
    stock-named one."""
    for entry in os.scandir(directory):
        if entry.path != keep and onnx_pair.is_data_file_of(entry.name, name):
            with contextlib.suppress(FileNotFoundError):
                os.remove(entry.path)


@contextlib.contextmanager
def _commit_lock(directory: str) -> Iterator[None]:
    """One save at a time in `directory` across processes (a lock on the directory itself: no
    file of its own; the kernel releases it when a holder dies). Where the file system has no
    such locks (some network file systems), saves go on unlocked."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _open(path: str, flags: int, descriptors: list[int]) -> int:
    fd = os.open(path, flags | os.O_CLOEXEC, 0o666)  # (a new file: the mode open() gives)
    descriptors.append(fd)
    return fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
