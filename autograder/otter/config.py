"""otter_config.json: what autograder.zip tells Otter, and the Otter-style keys an instructor may pass to the build.

    overrides(config)        otter_config keys -> (setting overrides for the spec, Otter's cosmetic keys)
    otter_config(spec, ...)  the otter_config.json autograder.zip carries

The course's settings live in the spec (assignment/assignment.toml, declared in assignment/spec.py's Settings
with their types, defaults and meanings). An instructor who knows Otter may write them in otter_config.json
form (`python -m autograder build --otter-config FILE`): a key of Settings (or `timeout`, the name an Otter
instructor reaches for, meaning call_timeout) overrides the spec's value; Otter's own keys keep their
meanings; any other key is refused at build time with what to write instead, rather than silently ignored
as Otter does. The built autograder.zip carries the resolved spec, so grading reads one declaration.

Otter itself is not imported here: on Gradescope importing otter costs about 2 s of the grading time, and
the image does not install it.
"""
from __future__ import annotations

import json

from assignment.spec import OTTER_ALIASES, Spec, SpecError, setting_fields

# The plugin `otter run` loads: a tiny installed module (otter-loader/) that imports the real one
# from the autograder.zip being run, so the console command works from any folder.
LOADER_PLUGIN = "attention_otter_loader.EngineGradingPlugin"

# Keys whose value is fixed: the engine grades student/ itself, never the notebook, a log or a zip of zips.
FIXED = {"lang": "python", "plugins": [LOADER_PLUGIN], "grade_from_log": False, "zips": False}
# Otter's keys for `otter run`'s console output only (their defaults here).
COSMETIC = {"logo": True, "print_summary": False, "print_score": True}
# Settings of the spec that Otter knows under the same name (mirrored into otter_config.json).
OTTER_SETTINGS = ("show_hidden", "show_stdout", "points_possible")


class ConfigError(ValueError):
    """The otter_config asks for something this grader does not do; the message says what and why."""


def overrides(config: dict) -> tuple[dict, dict]:
    """(setting overrides, cosmetic keys) of an otter_config-style object; ConfigError for anything else."""
    if not isinstance(config, dict):
        raise ConfigError("otter_config must be a JSON object")
    settings, cosmetic, problems = {}, {}, []
    known = set(setting_fields()) | set(OTTER_ALIASES)
    for key, value in config.items():
        if key in FIXED:
            if value != FIXED[key]:
                problems.append(f"{key} must be {json.dumps(FIXED[key])} (got {json.dumps(value)}): "
                                "the engine grades the student/ package itself")
        elif key in COSMETIC:
            if type(value) is not bool:
                problems.append(f"{key} must be true or false, got {json.dumps(value)}")
            cosmetic[key] = value
        elif key in known:
            settings[key] = value
        else:
            problems.append(f"{key} is not supported by this grader (supported: "
                            f"{', '.join(sorted(known | set(COSMETIC) | set(FIXED)))}; the settings' meanings: "
                            f"assignment/spec.py, Settings)")
    if problems:
        raise ConfigError("otter_config cannot be honoured:\n  " + "\n  ".join(problems))
    return settings, cosmetic


def resolved(spec: Spec, config: dict | None) -> tuple[Spec, dict]:
    """The spec with an instructor's otter_config laid over its settings, and the cosmetic keys."""
    settings, cosmetic = overrides(config or {})
    try:
        return spec.with_settings(settings, "otter_config"), cosmetic
    except SpecError as error:
        raise ConfigError(str(error)) from None


def otter_config(spec: Spec, cosmetic: dict | None = None) -> dict:
    """autograder.zip's otter_config.json: the fixed keys, Otter's names of our settings, the cosmetic keys."""
    mirrored = {key: getattr(spec.settings, key) for key in OTTER_SETTINGS}
    if mirrored["points_possible"] is None:
        mirrored["points_possible"] = spec.total
    return {**FIXED, **mirrored, **COSMETIC, **(cosmetic or {})}
