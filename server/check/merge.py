"""`onnxlens merge`: the results of the shards of one check joined into the unsharded result.

Each shard's result (JSON or SARIF, as `onnxlens check --shard K/N` wrote it) names its part:
`shard` {index, count, targets: the whole selection in config order, assigned: its own}, at the
top of the JSON and in the SARIF run's `properties`. The shards belong together when they are
1..N of the same N over the same selection of the same config, each once, and every target was
exported by exactly one of them. The joined result is what the unsharded check prints: targets
(JSON) or results (SARIF) in config order, the config's own findings once (every shard has them),
and without `shard`; a gate's verdict is recounted over all targets.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class MergeError(Exception):
    """Files that are not the shards of one check: a message for the user."""


def merge_files(paths: list[Path]) -> tuple[str, dict[str, Any]]:
    """("json" | "sarif", the joined result) of the shards' files."""
    documents = []
    for path in paths:
        try:
            documents.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, ValueError) as error:
            raise MergeError(f"{path}: not a JSON or SARIF result of onnxlens: {error}") from None
    kinds = {_kind(document, path) for document, path in zip(documents, paths)}
    if len(kinds) > 1:
        raise MergeError("the files mix JSON and SARIF results: merge each format on its own")
    kind = kinds.pop()
    if kind == "json":
        return kind, merge_json(documents, [str(p) for p in paths])
    return kind, merge_sarif(documents, [str(p) for p in paths])


def _kind(document: Any, path: Path) -> str:
    if isinstance(document, dict) and document.get("version") == 1 and isinstance(document.get("targets"), list):
        return "json"
    if isinstance(document, dict) and document.get("version") == "2.1.0" and isinstance(document.get("runs"), list):
        return "sarif"
    raise MergeError(f"{path}: not a JSON or SARIF result of onnxlens")


def _order(shards: list[dict[str, Any] | None], names: list[str]) -> list[str]:
    """The selection in config order, once the shards are checked to be 1..N of it."""
    if any(shard is None for shard in shards):
        missing = [name for name, shard in zip(names, shards) if shard is None]
        raise MergeError(f"{', '.join(missing)}: not the result of `onnxlens check --shard K/N`")
    first = shards[0]
    for name, shard in zip(names, shards):
        if shard["count"] != first["count"] or shard["targets"] != first["targets"]:
            raise MergeError(f"{name} is a shard of another split (shard {shard['index']}/{shard['count']} "
                             f"of {len(shard['targets'])} targets; {names[0]}: /{first['count']} of "
                             f"{len(first['targets'])})")
    indices = sorted(shard["index"] for shard in shards)
    if indices != list(range(1, first["count"] + 1)):
        raise MergeError(f"the shards are {', '.join(map(str, indices))} of {first['count']}: "
                         f"each of 1..{first['count']} is needed once")
    assigned = [target for shard in shards for target in shard["assigned"]]
    if sorted(assigned) != sorted(first["targets"]):
        raise MergeError("the shards' targets are not the selection, each once")
    return list(first["targets"])


def _same(values: list[Any], what: str, names: list[str]) -> Any:
    for name, value in zip(names[1:], values[1:]):
        if value != values[0]:
            raise MergeError(f"{name} differs from {names[0]} in {what}: not shards of one check")
    return values[0]


def merge_json(documents: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    order = _order([d.get("shard") for d in documents], names)
    config = _same([d["config"] for d in documents], "its config file", names)
    config_diagnostics = _same([d["config_diagnostics"] for d in documents], "the config's findings", names)
    targets = {t["name"]: t for d in documents for t in d["targets"]}
    missing = [name for name in order if name not in targets]
    if missing:
        raise MergeError(f"no shard has a result for {', '.join(missing)}")
    merged: dict[str, Any] = {"version": 1, "targets": [targets[name] for name in order], "config": config,
                              "config_diagnostics": config_diagnostics}
    gates = [d.get("gate") for d in documents]
    if any(gate is not None for gate in gates):
        if any(gate is None for gate in gates):
            raise MergeError("some shards were compared with a baseline and some were not")
        merged["gate"] = _merge_gates(gates, order, names)
    return merged


def _merge_gates(gates: list[dict[str, Any]], order: list[str], names: list[str]) -> dict[str, Any]:
    position = {name: index for index, name in enumerate(order)}
    fixed = {json.dumps(entry, sort_keys=True): entry for gate in gates for entry in gate["fixed"]}
    regressions = sum(gate["regressions"] for gate in gates)
    measures = {name: values for gate in gates for name, values in gate["measures"].items()}
    # The config's new findings are counted by every shard: once here.
    config_new = _same([gate.get("config_new_findings", 0) for gate in gates], "the config's new findings", names)
    new = sum(gate["new_findings"] - gate.get("config_new_findings", 0) for gate in gates) + config_new
    return {
        "baseline": _same([gate["baseline"] for gate in gates], "the baseline", names),
        "passed": regressions == 0 and new == 0,
        "regressions": regressions,
        "new_findings": new,
        "config_new_findings": config_new,
        "measures": {name: measures[name] for name in order if name in measures},
        "fixed": sorted(fixed.values(), key=lambda e: -1 if e["target"] is None else position.get(e["target"], len(order))),
        "new_targets": sorted({t for gate in gates for t in gate["new_targets"]}, key=position.__getitem__),
        "removed_targets": _same([gate["removed_targets"] for gate in gates], "the targets removed", names),
        "notes": [note for gate in gates for note in gate["notes"]],
        "thresholds": _same([gate["thresholds"] for gate in gates], "the gate's thresholds", names),
    }


def merge_sarif(documents: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    runs = []
    for name, document in zip(names, documents):
        if len(document["runs"]) != 1:
            raise MergeError(f"{name}: {len(document['runs'])} runs; a shard's SARIF log has one")
        runs.append(document["runs"][0])
    order = _order([(run.get("properties") or {}).get("shard") for run in runs], names)
    _same([run["tool"]["driver"]["rules"] for run in runs], "its rules (another onnxlens version?)", names)
    config_results = _same([[r for r in run["results"] if "target" not in r.get("properties", {})] for run in runs],
                           "the config's findings", names)
    by_target: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        for result in run["results"]:
            target = result.get("properties", {}).get("target")
            if target is not None:
                by_target.setdefault(target, []).append(result)
    merged_run = dict(runs[0])
    merged_run.pop("properties", None)
    merged_run["invocations"] = [{"executionSuccessful": all(
        invocation.get("executionSuccessful", True) for run in runs for invocation in run.get("invocations", []))}]
    merged_run["results"] = config_results + [result for name in order for result in by_target.get(name, [])]
    merged = dict(documents[0])
    merged["runs"] = [merged_run]
    return merged
