"""`onnxlens/stats`: a custom request returning the export counters and last job timings.

An honest observable for tests and benchmarks (how many exports really ran), and handy when a
user asks "why did it export twice?".
"""

from __future__ import annotations

from typing import Any

from onnxlens.server.lsp.handlers import Feature, handles

STATS = "onnxlens/stats"


class Stats(Feature):
    @handles(STATS)
    def stats(self, params: Any = None) -> dict[str, Any]:
        session = self.session
        data = session.scheduler.stats.to_dict()
        data["running"] = sorted(name for project in session.projects.values()
                                 for name, state in project.targets.items() if state.running)
        data["pending"] = session.scheduler.pending_targets()
        data["projects"] = [{"config": key, "targets": sorted(project.targets)}
                            for key, project in session.projects.items()]
        data["service_ready"] = session.service.ready
        data["worker_pid"] = session.service.worker_pid
        return data
