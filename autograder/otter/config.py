"""The otter_config.json inside autograder.zip: the otter keys this grader honours, with otter's meanings.

    default_config(total)      what `python -m autograder build` writes (hidden tests shown after publication)
    merged(overrides, total)   an instructor's otter_config.json laid over the defaults; ConfigError if unsupported
    load(path)                 the Settings that grading reads from the shipped file

Otter itself is not imported here: on Gradescope importing otter costs about 2 s of the grading time, and
the image does not install it. Instead the keys below keep the names, types and meanings that otter
documents (tests/test_gradescope_harness.py checks them against otter's own AutograderConfig), and any
other key of otter's is refused at build time rather than silently ignored.
"""
from __future__ import annotations

import json
import pathlib
from dataclasses import dataclass

# The plugin `otter run` loads: a tiny installed module (otter-loader/) that imports the real plugin
# from the autograder.zip being run, so the console command works from any folder.
LOADER_PLUGIN = "attention_otter_loader.EngineGradingPlugin"

# Keys whose value is fixed: the engine grades student/ itself, never the notebook, a log or a zip of zips.
FIXED = {"lang": "python", "plugins": [LOADER_PLUGIN], "grade_from_log": False, "zips": False}
# Keys an instructor may set, with otter's defaults (what otter assumes when a key is absent).
OTTER_DEFAULTS = {
    # Results of hidden tests: true -> shown to students once grades are published ("after_published"),
    # false -> never shown ("hidden").
    "show_hidden": False,
    # The autograder's stdout: true -> shown to students once grades are published; false -> instructors only.
    "show_stdout": False,
    # The total the score is scaled to (otter: score / possible * points_possible); None -> the parts' total.
    "points_possible": None,
    # Cosmetic, for `otter run`'s console output only.
    "logo": True,
    "print_summary": True,
    "print_score": True,
}
# What this assignment's build writes: hidden tests' results appear when grades are published.
OUR_DEFAULTS = {**OTTER_DEFAULTS, "show_hidden": True, "print_summary": False}
TYPES = {"show_hidden": bool, "show_stdout": bool, "points_possible": (int, float), "logo": bool,
         "print_summary": bool, "print_score": bool}


class ConfigError(ValueError):
    """The otter_config asks for something this grader does not do; the message says what and why."""


@dataclass(frozen=True)
class Settings:
    show_hidden: bool
    show_stdout: bool
    points_possible: float | None

    @property
    def hidden_test_visibility(self) -> str:
        """Gradescope's visibility for a hidden test's result, as otter maps show_hidden."""
        return "after_published" if self.show_hidden else "hidden"

    @property
    def stdout_visibility(self) -> str:
        return "after_published" if self.show_stdout else "hidden"


def default_config(total: float) -> dict:
    return {**FIXED, **OUR_DEFAULTS, "points_possible": total}


def problems(config: dict) -> list[str]:
    """Why a config cannot be honoured (empty: it can)."""
    found = []
    for key, value in config.items():
        if key in FIXED:
            if value != FIXED[key]:
                found.append(f"{key} must be {json.dumps(FIXED[key])} (got {json.dumps(value)}): "
                             "the engine grades the student/ package itself")
        elif key in OTTER_DEFAULTS:
            allowed = TYPES[key]
            if value is None and key == "points_possible":
                continue
            if (isinstance(value, bool) and allowed is not bool) or not isinstance(value, allowed):
                found.append(f"{key} must be {getattr(allowed, '__name__', 'a number')}, got {json.dumps(value)}")
            elif key == "points_possible" and value <= 0:
                found.append(f"points_possible must be positive, got {value}")
        else:
            found.append(f"{key} is not supported by this grader (supported: {', '.join(sorted(OTTER_DEFAULTS))})")
    return found


def merged(overrides: dict, total: float) -> dict:
    """The defaults with an instructor's keys on top; raises ConfigError naming every unsupported key."""
    if not isinstance(overrides, dict):
        raise ConfigError("otter_config must be a JSON object")
    config = {**default_config(total), **overrides}
    found = problems(config)
    if found:
        raise ConfigError("otter_config cannot be honoured:\n  " + "\n  ".join(found))
    return config


def settings(config: dict) -> Settings:
    found = problems(config)
    if found:
        raise ConfigError("otter_config cannot be honoured:\n  " + "\n  ".join(found))
    values = {**OTTER_DEFAULTS, **config}
    return Settings(values["show_hidden"], values["show_stdout"], values["points_possible"])


def load(path: pathlib.Path) -> Settings:
    try:
        config = json.loads(pathlib.Path(path).read_text())
    except (OSError, ValueError) as error:
        raise ConfigError(f"cannot read {path}: {error}") from None
    if not isinstance(config, dict):
        raise ConfigError(f"{path} must hold a JSON object")
    return settings(config)
