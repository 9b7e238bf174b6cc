"""File times come from the kernel's coarse clock: a time is the tick the change happened in, and
a file (or directory) changed twice within one tick keeps the first change's time. A time within
MTIME_SLACK_NS of now therefore does not prove that nothing changes after it was read: such a
file is taken as still changing (the "racily clean" problem of every mtime-based cache).
"""

from __future__ import annotations

import os

MTIME_SLACK_NS = 20_000_000  # one tick of the coarse clock at the slowest (HZ=100), twice over


def changed_since(stat: os.stat_result, since_ns: int) -> bool:
    """Whether the file's content (a directory's: its entries) may have changed at or after
    `since_ns`: its mtime is within the slack of it, or later."""
    return stat.st_mtime_ns >= since_ns - MTIME_SLACK_NS
