"""`onnxlens/stats`: a custom request returning the export counters and last job timings.

An honest observable for tests and benchmarks (how many exports really ran), and handy when a
user asks "why did it export twice?".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .server import OnnxlensServer

STATS = "onnxlens/stats"


def register(server: OnnxlensServer) -> None:
    server.feature(STATS)(stats)


def stats(ls: OnnxlensServer, params: Any = None) -> dict[str, Any]:
    data = ls.scheduler.stats.to_dict()
    data["running"] = sorted(name for project in ls.projects.values()
                             for name, state in project.targets.items() if state.running)
    data["projects"] = [{"config": key, "targets": sorted(project.targets)} for key, project in ls.projects.items()]
    data["service_ready"] = ls.service_ready.is_set()
    worker = getattr(ls.service, "worker", None)
    data["worker_pid"] = worker.pid if worker is not None else None
    return data
