"""Editor settings (section "onnxlens"): from initializationOptions and
workspace/didChangeConfiguration.

Settings are the user's editor preferences; the project's own choices (targets, verify, timeout)
live in the config file. `verify` and `profile` here override the config when set, so a user
can switch the slow onnxruntime comparison off, or its profiler on, while editing without
touching the repository.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Any

from onnxlens.exporter.types import TargetSpec

LOG_LEVELS = {"error": logging.ERROR, "warning": logging.WARNING, "info": logging.INFO, "debug": logging.DEBUG}


@dataclass(frozen=True)
class Settings:
    export_on_save: bool = True  # exportOnSave: re-export when a file of a target's closure is saved
    verify: bool | None = None  # verify: None = as the config says
    jobs: int = 1  # jobs: export jobs at once (takes effect when the worker (re)starts)
    log_level: str = "info"  # logLevel: error | warning | info | debug (window/logMessage)
    debounce_ms: int = 200  # debounceMs: quiet time after the last trigger before exporting
    inlay_hints: bool = True  # inlayHints: what each line produced (shapes, dtypes), after each export
    profile: bool | None = None  # profile: onnxruntime's profiler on the verification run; None = as the config says
    cost_lens_threshold: float = 5.0  # costLensThreshold: a line's share of inference (%) from which it gets a cost lens

    @property
    def logging_level(self) -> int:
        return LOG_LEVELS[self.log_level]

    def applied_to(self, spec: TargetSpec) -> TargetSpec:
        """The target as configured, with this editor's `verify` and `profile` applied where set."""
        overrides = {name: value for name, value in (("verify", self.verify), ("profile", self.profile))
                     if value is not None}
        return dataclasses.replace(spec, **overrides) if overrides else spec

    def describe(self) -> str:
        """The settings under their wire names, for the log."""
        values = {wire: getattr(self, name) for wire, (name, _, _) in _FIELDS.items()}
        return ", ".join(f"{wire}={value!r}" for wire, value in values.items())


# wire name -> (field name, check, what a valid value is)
_FIELDS: dict[str, tuple[str, Any, str]] = {
    "exportOnSave": ("export_on_save", lambda v: isinstance(v, bool), "true or false"),
    "verify": ("verify", lambda v: v is None or isinstance(v, bool), "true, false or null"),
    "jobs": ("jobs", lambda v: isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 64, "an integer 1-64"),
    "logLevel": ("log_level", lambda v: v in LOG_LEVELS, " | ".join(LOG_LEVELS)),
    "debounceMs": ("debounce_ms", lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 10_000,
                   "an integer 0-10000"),
    "inlayHints": ("inlay_hints", lambda v: isinstance(v, bool), "true or false"),
    "profile": ("profile", lambda v: v is None or isinstance(v, bool), "true, false or null"),
    "costLensThreshold": ("cost_lens_threshold",
                          lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 100,
                          "a number of percent, 0-100"),
}


def parse_settings(raw: Any, base: Settings | None = None) -> tuple[Settings, list[str]]:
    """Apply the user's settings on top of `base`; returns the settings and one message per bad value.

    Accepts either the section's own object ({"exportOnSave": ...}) or a whole settings object
    that contains it ({"onnxlens": {...}}), because clients send both shapes. A bad value keeps
    the previous one: a typo in settings must not stop the server.
    """
    settings = base or Settings()
    if raw is None:
        return settings, []
    if isinstance(raw, dict) and isinstance(raw.get("onnxlens"), dict):
        raw = raw["onnxlens"]
    if not isinstance(raw, dict):
        return settings, [f"onnxlens settings must be an object, got {type(raw).__name__}"]
    changes: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in raw.items():
        if key not in _FIELDS:
            problems.append(f"unknown onnxlens setting {key!r} (known: {', '.join(_FIELDS)})")
            continue
        name, valid, expected = _FIELDS[key]
        if key == "logLevel" and isinstance(value, str):
            value = value.lower()
        if not valid(value):
            problems.append(f"onnxlens setting {key!r} must be {expected}, got {value!r}")
            continue
        changes[name] = value
    return dataclasses.replace(settings, **changes), problems
