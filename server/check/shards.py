"""`onnxlens check --shard K/N`: the targets split over N machines, the same split on each.

The split is a function of the selected targets (config order) and, when a baseline gives them,
the seconds each target's last export took: every shard of a CI matrix computes it alone and
they agree, so together they export every target exactly once. Targets are dealt out longest
first to the shard with the least work so far (ties: the lower shard), a target without a time
counting as the median of the known ones; without any times each counts the same, and the shards
get equal numbers of targets. Each shard exports its targets in config order.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from typing import Any

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


class ShardError(ValueError):
    """A `--shard` value that is not K/N with 1 <= K <= N."""


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int
    targets: tuple[str, ...]  # the whole selection, in config order: the order `onnxlens merge` restores
    assigned: tuple[str, ...]  # this shard's targets
    balanced_by: str  # "times" (a baseline's) or "count"

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "count": self.count, "targets": list(self.targets),
                "assigned": list(self.assigned), "balanced_by": self.balanced_by}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Shard:
        return cls(int(data["index"]), int(data["count"]), tuple(data["targets"]), tuple(data["assigned"]),
                   str(data.get("balanced_by", "count")))


def parse_shard(text: str) -> tuple[int, int]:
    match = _SPEC.match(text)
    if not match:
        raise ShardError(f"--shard must be K/N (e.g. 2/4), not {text!r}")
    index, count = int(match.group(1)), int(match.group(2))
    if not 1 <= index <= count:
        raise ShardError(f"--shard {text}: K must be between 1 and N")
    return index, count


def split(names: list[str], count: int, seconds: dict[str, float]) -> list[list[str]]:
    """`names` (config order) dealt into `count` shards, each in config order."""
    known = [seconds[name] for name in names if seconds.get(name, 0) > 0]
    default = statistics.median(known) if known else 1.0
    weight = {name: seconds[name] if seconds.get(name, 0) > 0 else default for name in names}
    position = {name: index for index, name in enumerate(names)}
    loads = [0.0] * count
    shards: list[list[str]] = [[] for _ in range(count)]
    for name in sorted(names, key=lambda n: (-weight[n], position[n])):
        lightest = min(range(count), key=lambda k: (loads[k], k))
        loads[lightest] += weight[name]
        shards[lightest].append(name)
    return [sorted(shard, key=position.__getitem__) for shard in shards]


def shard_of(names: list[str], index: int, count: int, seconds: dict[str, float]) -> Shard:
    """The `index`-th of `count` shards of `names`, balanced by `seconds` when there are any."""
    timed = any(seconds.get(name, 0) > 0 for name in names)
    parts = split(names, count, seconds if timed else {})
    return Shard(index, count, tuple(names), tuple(parts[index - 1]), "times" if timed else "count")
