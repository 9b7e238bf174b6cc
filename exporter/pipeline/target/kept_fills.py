"""Random fills kept from the previous export of a target, replayed when they would compute the same.

A model built from its config (`BertModel(BertConfig())`, nanoGPT's `GPT(config)`) spends most of
its construction in random initialisation: `normal_`, `uniform_` over every weight (BERT-base:
~3.5 s of its ~4 s here, while the export itself never reads those values before it saves them).
The factory still runs on every save (it is the user's code: it decides the modules, the shapes,
and whatever else it does), but each random fill is looked up first.

The rule (why a replay is the fill's own result, byte for byte): an in-place random fill on a
contiguous CPU tensor — `normal_`, `uniform_`, `random_`, `bernoulli_` with a scalar p,
`exponential_`, `geometric_`, `log_normal_`, `cauchy_` — writes every element of its tensor,
and what it writes, and the state it leaves its generator in, depend on nothing but the op, its
scalar arguments, the tensor's shape, strides and dtype, the thread count and the generator's
state before it (a CPU generator's whole state: the Mersenne twister and the cached normal
samples). The key holds all of these; a fill whose key was seen in the previous export of the
target gets the bytes that fill wrote then and leaves its generator in the state it left it
then. Everything after it sees the same values and the same generator, so the model (and its
saved weights) is the one the fill would have built. The factory seeds or not (a forked child
starts from the zygote's generator state, the same for every job): the key decides. Anything
else (another op, a CUDA or meta tensor, a view that is not contiguous, a fill whose key is
new) runs as it is; a new key's result is recorded for the next export.

The load stage runs the factories inside `replayed(job)`: the fills looked up and recorded
through the adapter's op interception (a torch without an adapter runs them as they are).

Where the fills are kept: a memory file (memfd) the zygote holds per target and each child of
that target inherits (exporter/worker/zygote.py): in memory, private to this user's worker,
gone with it. Layout: a header (magic, index offset and length), the fills' bytes, and the
index (msgpack) of the last export's fills, written after them; the header is written last, so
a child killed while recording leaves the previous index valid (the file only grows during a
job). When dead bytes pass the live ones, the next job starts it afresh. A fill that would take
the file past `LIMIT_BYTES` is not recorded, and the zygote keeps the files of all targets
together within it too (it drops the least recently exported target's first). A POSIX lock (per process: children share the zygote's open file) keeps
two jobs of one target from using it at once; the second runs without it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator

import msgpack

from onnxlens.exporter.torch_internals.active import internals

if TYPE_CHECKING:
    from onnxlens.exporter.pipeline.job import Job

MAGIC = b"onnxlens-fills-1"
HEADER = 32  # magic (16), index offset (8), index length (8)
DATA_START = 4096
ALIGN = 64
# Memory the kept fills may hold: 4 GB (a model of ~1 B float parameters), or an eighth of the
# machine's memory if that is less.
LIMIT_BYTES = min(4 << 30, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 8)
FILL_OPS = ("normal_", "uniform_", "random_", "bernoulli_", "exponential_", "geometric_", "log_normal_", "cauchy_")


@dataclass(frozen=True)
class Kept:
    offset: int
    size: int
    state_after: bytes


@dataclass
class KeptFills:
    """The kept fills of one target, as one job reads and records them (see the module's rule)."""

    fd: int
    previous: dict[str, Kept] = field(default_factory=dict)
    recorded: dict[str, Kept] = field(default_factory=dict)
    end: int = DATA_START  # where the next recorded fill goes
    usable: bool = False
    hits: int = 0
    misses: int = 0
    replayed_bytes: int = 0

    @classmethod
    def open(cls, fd: int) -> KeptFills:
        """The kept fills in `fd`, locked for this job (unusable if another job holds them)."""
        kept = cls(fd)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return kept
        kept.usable = True
        kept.previous, kept.end = _read(fd)
        live = sum(entry.size for entry in kept.previous.values())
        if kept.end - DATA_START > 2 * live + (64 << 20):  # mostly dead: start afresh
            kept.previous, kept.end = {}, DATA_START
            os.ftruncate(fd, 0)
        return kept

    def fill(self, op: Any, args: tuple, kwargs: dict, run: Callable[[], Any]) -> Any:
        """The fill `op(*args, **kwargs)`: replayed from the kept fills when its key was kept,
        else run (and recorded)."""
        import torch

        target = args[0] if args else None
        if (not self.usable or not isinstance(target, torch.Tensor) or target.device.type != "cpu"
                or type(target) not in (torch.Tensor, torch.nn.Parameter)  # no subclass of its own semantics
                or not target.is_contiguous() or target.numel() == 0
                or not all(_scalar(a) for a in args[1:])
                or not all(_scalar(v) for k, v in kwargs.items() if k != "generator")):
            return run()
        generator = kwargs.get("generator") or torch.default_generator
        if not isinstance(generator, torch.Generator) or generator.device.type != "cpu":
            return run()
        before = bytes(generator.get_state().numpy())
        key = _key(op, args[1:], {k: v for k, v in kwargs.items() if k != "generator"}, target, before)
        view = _bytes_of(target)
        kept = self.previous.get(key)
        if kept is not None and kept.size == len(view):
            _read_into(self.fd, view, kept.offset)
            generator.set_state(torch.frombuffer(bytearray(kept.state_after), dtype=torch.uint8))
            self.recorded[key] = kept
            self.hits += 1
            self.replayed_bytes += kept.size
            return target
        result = run()
        self.misses += 1
        offset = _aligned(self.end)
        if offset + len(view) <= LIMIT_BYTES:
            _write_from(self.fd, view, offset)
            self.recorded[key] = Kept(offset, len(view), bytes(generator.get_state().numpy()))
            self.end = offset + len(view)
        return result

    def close(self) -> None:
        """Record this job's index (the fills it replayed or ran), then the header: the commit."""
        if not self.usable:
            return
        try:
            index = msgpack.packb({key: [k.offset, k.size, k.state_after] for key, k in self.recorded.items()},
                                  use_bin_type=True)
            at = _aligned(self.end)
            _write_from(self.fd, memoryview(index), at)
            header = MAGIC + at.to_bytes(8, "little") + len(index).to_bytes(8, "little")
            _write_from(self.fd, memoryview(header), 0)
        finally:
            try:
                fcntl.lockf(self.fd, fcntl.LOCK_UN)
            except OSError:
                pass
            self.usable = False


def _read(fd: int) -> tuple[dict[str, Kept], int]:
    """The index the last job committed, and the end of the file's data (DATA_START if none)."""
    header = os.pread(fd, HEADER, 0)
    if len(header) != HEADER or header[:16] != MAGIC:
        return {}, DATA_START
    at, length = int.from_bytes(header[16:24], "little"), int.from_bytes(header[24:32], "little")
    try:
        raw = msgpack.unpackb(os.pread(fd, length, at), raw=False)
        index = {key: Kept(int(value[0]), int(value[1]), bytes(value[2])) for key, value in raw.items()}
    except Exception:  # noqa: BLE001 - an unreadable index keeps nothing
        return {}, DATA_START
    return index, max(DATA_START, at + length)  # past the index: it stays intact until a new header


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float))


def _key(op: Any, args: tuple, kwargs: dict, target: Any, state: bytes) -> str:
    import torch

    return "|".join((str(op), repr(args), repr(sorted(kwargs.items())), repr(tuple(target.shape)),
                     repr(target.stride()), str(target.dtype), str(torch.get_num_threads()),
                     hashlib.sha256(state).hexdigest()))


def _bytes_of(tensor: Any) -> memoryview:
    """The tensor's bytes, writable, in place (contiguous, CPU)."""
    import torch

    return memoryview(tensor.detach().reshape(-1).view(torch.uint8).numpy()).cast("B")


def _aligned(offset: int) -> int:
    return (offset + ALIGN - 1) // ALIGN * ALIGN


def _read_into(fd: int, view: memoryview, offset: int) -> None:
    while view:
        count = os.preadv(fd, [view], offset)
        if count <= 0:
            raise OSError(f"the kept fills ended at {offset}")
        view, offset = view[count:], offset + count


def _write_from(fd: int, view: memoryview, offset: int) -> None:
    while view:
        count = os.pwrite(fd, view, offset)
        view, offset = view[count:], offset + count


@contextlib.contextmanager
def replayed(job: Job) -> Iterator[None]:
    """The factories' random fills replayed from, and recorded to, the target's kept fills."""
    if job.kept_fills_fd is None or not internals.FULL:
        yield
        return
    kept = KeptFills.open(job.kept_fills_fd)
    try:
        with internals.ops_intercepted(FILL_OPS, kept.fill):
            yield
    finally:
        kept.close()
        if kept.hits or kept.misses:
            job.log(f"{job.spec.name}: random fills: {kept.hits} replayed ({kept.replayed_bytes / 2**20:.0f} MB), "
                    f"{kept.misses} computed")
