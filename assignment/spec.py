"""The assignment's one declaration (assignment/assignment.toml), read, checked and served.

    SPEC                      this checkout's declaration (read once, at import)
    load(path, overrides)     read a declaration; overrides: setting keys laid over its [settings]
    Settings                  every course setting, declared once: its type, default and meaning
    SpecError                 a declaration that cannot be used; the message names the file and what to write

Everything else takes the assignment from here: the handout's generated files (autograder/derived.py),
the engine's graded names, the points and titles of the results (grader/scoring.py), Gradescope's
settings. Dependencies run one way: assignment.spec <- autograder <- grading_tests; this module imports
nothing of the project but its error (spec_error.py), and nothing but the standard library.
"""
from __future__ import annotations

import difflib
import math
import pathlib
import tomllib
import typing
from dataclasses import dataclass, field, fields, replace

from assignment.spec_error import SpecError

SPEC_FILE = pathlib.Path(__file__).resolve().with_name("assignment.toml")
# When students see a part's hidden results on Gradescope (its results.json visibility values).
VISIBILITIES = ("visible", "after_due_date", "after_published", "hidden")
FORBIDDEN_POLICIES = ("cost", "flag")
LATE_POLICIES = ("none", "per_hour", "per_day", "late_days")
OVER_BUDGET = ("keep_last", "grade_hidden")


def setting(default, meaning: str, *, choices: tuple = (), positive: bool = False, at_most: float | None = None,
            scores: bool = False):
    """One course setting: its default and meaning (its type is the field's annotation), as otter declares
    its configuration keys with fica.Key. A number is never negative; positive: nor 0; at_most: its largest.
    scores: the setting can change a score (a change then asks for a regrade); the others change what students
    read, or the grade computed from the score (the late policy), never the score."""
    return field(default=default, metadata={"meaning": meaning, "choices": choices, "positive": positive,
                                            "at_most": at_most, "scores": scores})


@dataclass(frozen=True)
class Settings:
    """The settings an instructor may change, in assignment.toml's [settings] (or, for Otter users, in the
    JSON of `python -m autograder build --otter-config FILE`, with the same keys)."""

    show_hidden: bool = setting(
        True, "when students see the results of a part that sets no visibility of its own: true when grades "
              "are published (Gradescope's after_published), false never (hidden); otter's key of that name")
    show_stdout: bool = setting(
        False, "the autograder's own output (the parts, the isolation line) shown to students when grades are "
               "published; false: to instructors only; otter's key of that name")
    public_checks: bool = setting(
        True, "Gradescope also runs the handout's public checks (student/tests/, the instructor's copies) on the "
              "uploaded code and shows their results to the student at once, worth no points, as otter shows "
              "public tests; false: not run")
    points_possible: float | None = setting(
        None, "the total Gradescope records, the score scaled to it (otter's key); absent: the parts' total",
        positive=True)
    call_timeout: float = setting(
        10.0, "CPU seconds one call into student code (and `import student`) may take, with 6 times that of "
              "wall-clock time; the batch command's --timeout overrides it (in otter_config form also `timeout`)",
        positive=True, scores=True)
    budget: float = setting(
        240.0, "CPU seconds of student code per submission; the batch command's --budget overrides it",
        positive=True, scores=True)
    memory_gb: float = setting(
        4.0, "memory of one sandbox, all its processes together, in GiB; the batch command's --memory-gb "
             "overrides it", positive=True, scores=True)
    forbidden_calls: str = setting(
        "cost", 'a manual path that calls torch\'s fused attention (F.scaled_dot_product_attention, '
                'F.multi_head_attention_forward, nn.MultiheadAttention), or a fused path that never calls '
                'F.scaled_dot_product_attention (or a forward(fused=True) that does not go through '
                'self._fused_attention): "cost" takes the points of every test that ran it (and flags it), "flag" '
                'only flags it for the instructor', choices=FORBIDDEN_POLICIES, scores=True)
    # The late policy (grader/policies/late.py applies it): off by default.
    late_policy: str = setting(
        "none", 'what lateness costs: "per_hour" or "per_day" deducts late_deduction percent of the score per '
                'started hour or day late (at most late_cap), "late_days" deducts nothing for late_days days and '
                'late_cap percent after; "none": nothing. The gradebook keeps the raw score (score) beside the '
                'penalised one (grade)', choices=LATE_POLICIES)
    late_grace_hours: float = setting(
        0.0, "hours after the due date that count as on time (a late policy counts lateness from their end)")
    late_deduction: float = setting(10.0, "percent of the score deducted per started hour or day late",
                                    at_most=100.0)
    late_cap: float = setting(100.0, "the most percent of the score a late policy deducts", at_most=100.0)
    late_days: float = setting(0.0, 'days late that cost nothing under late_policy = "late_days"')
    late_on_gradescope: bool = setting(
        False, "the Gradescope runtime applies the late policy too, from the submission's created_at and the "
               "assignment's due_date (past its late_due_date: late_cap), and the student reads what it deducted")
    # The submission budget (grader/policies/budget.py; Gradescope only: the batch grades what it is given).
    allowed_submissions: int | None = setting(
        None, "submissions that count (are graded and show their results) in any submission_window_hours, on "
              "Gradescope, from its previous_submissions; absent: no budget (otter's RateLimiting key)",
        positive=True)
    submission_window_hours: float = setting(
        24.0, "the rolling window allowed_submissions counts in, in hours", positive=True)
    over_budget: str = setting(
        "keep_last", 'what a submission past the budget gets: "keep_last" is not graded and keeps the score of '
                     'the last one that counted; "grade_hidden" is graded for the instructor alone and keeps that '
                     'score too. Either shows nothing of the hidden tests, and says when the next one counts',
        choices=OVER_BUDGET)


# Otter's names for settings of ours (otter_config.json keys an Otter instructor already writes).
OTTER_ALIASES = {"timeout": "call_timeout"}


def setting_fields() -> dict[str, tuple[object, typing.Any]]:
    """key -> (the dataclass field, its resolved type), in declaration order."""
    hints = typing.get_type_hints(Settings)
    return {f.name: (f, hints[f.name]) for f in fields(Settings)}


@dataclass(frozen=True)
class Part:
    number: int
    title: str
    points: float
    module: str                   # student/<module>.py
    names: tuple[str, ...]        # functions, or "<module_class>.<method>"
    uses: tuple[int, ...]         # parts whose graded functions this part's code calls (directly)
    visibility: str | None = None

    @property
    def label(self) -> str:
        return f"Part {self.number} ({self.title})"


@dataclass(frozen=True)
class Spec:
    name: str
    title: str
    total: float
    module_class: str
    parts: tuple[Part, ...]
    settings: Settings
    source: pathlib.Path

    # ---------------------------------------------------------------- what the rest of the project reads
    def part(self, number: int) -> Part:
        for part in self.parts:
            if part.number == number:
                return part
        raise KeyError(f"{self.source.name} declares no Part {number}")

    @property
    def numbers(self) -> tuple[int, ...]:
        return tuple(part.number for part in self.parts)

    @property
    def points(self) -> dict[int, float]:
        return {part.number: part.points for part in self.parts}

    @property
    def titles(self) -> dict[int, str]:
        return {part.number: part.title for part in self.parts}

    @property
    def functions(self) -> tuple[str, ...]:
        """The graded functions (not methods), in the order of the parts."""
        return tuple(name for part in self.parts for name in part.names if "." not in name)

    @property
    def exports(self) -> dict[str, str]:
        """Each name `import student` must expose -> the module of student/ that defines it."""
        found: dict[str, str] = {}
        for part in self.parts:
            for name in part.names:
                found.setdefault(name.split(".")[0], part.module)
        return found

    @property
    def modules(self) -> tuple[str, ...]:
        """The graded modules of student/, in the order of the parts."""
        return tuple(dict.fromkeys(part.module for part in self.parts))

    def part_of(self, qualname: str) -> int:
        """The part a graded function or method belongs to."""
        for part in self.parts:
            if qualname in part.names:
                return part.number
        raise KeyError(f"{qualname} belongs to no part of {self.source.name}")

    def parts_using(self, number: int) -> set[int]:
        """Every part whose code calls Part `number`'s functions, directly or through another part."""
        users = {part.number for part in self.parts if number in part.uses}
        for user in list(users):
            users |= self.parts_using(user)
        return users

    def visibility(self, number: int) -> str:
        """When students see the results of this part's hidden tests (a Gradescope visibility value)."""
        chosen = self.part(number).visibility
        if chosen is not None:
            return chosen
        return "after_published" if self.settings.show_hidden else "hidden"

    def scoring_facts(self) -> str:
        """What of the declaration a score depends on, as text: each part's number, title, points and graded names,
        and the settings declared with scores=True. A course's late policy, budget or visibility is not among them:
        changing one asks for no regrade."""
        parts = [(p.number, p.title, p.points, p.module, p.names) for p in self.parts]
        settings = [(f.name, getattr(self.settings, f.name)) for f in fields(Settings) if f.metadata["scores"]]
        return repr((self.total, self.module_class, parts, settings))

    def with_settings(self, overrides: dict | None, where: str = "the overrides") -> Spec:
        """This declaration with setting keys laid over its settings (checked as [settings] is)."""
        if not overrides:
            return self
        values = {f.name: getattr(self.settings, f.name) for f in fields(Settings)}
        values.update(_settings_values(overrides, where, aliases=True))
        return replace(self, settings=Settings(**values))

    def to_toml(self) -> str:
        """The declaration as TOML (settings resolved): what autograder.zip carries."""
        lines = [f"name = {_toml(self.name)}", f"title = {_toml(self.title)}", f"total = {_toml(self.total)}",
                 f"module_class = {_toml(self.module_class)}"]
        for part in self.parts:
            lines += ["", "[[parts]]", f"number = {part.number}", f"title = {_toml(part.title)}",
                      f"points = {_toml(part.points)}", f"module = {_toml(part.module)}",
                      f"names = {_toml(list(part.names))}", f"uses = {_toml(list(part.uses))}"]
            if part.visibility is not None:
                lines.append(f"visibility = {_toml(part.visibility)}")
        lines += ["", "[settings]"]
        lines += [f"{f.name} = {_toml(getattr(self.settings, f.name))}" for f in fields(Settings)
                  if getattr(self.settings, f.name) is not None]
        return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- reading and checking

TOP_KEYS = {"name": str, "title": str, "total": float, "module_class": str, "parts": list, "settings": dict}
PART_KEYS = {"number": int, "title": str, "points": float, "module": str, "names": list, "uses": list,
             "visibility": str}
OPTIONAL_PART_KEYS = {"visibility"}


def load(path: pathlib.Path | str = SPEC_FILE, overrides: dict | None = None) -> Spec:
    """Read and check a declaration; raises SpecError naming the file, the key and what to write."""
    path = pathlib.Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as error:
        raise SpecError(f"cannot read the assignment's declaration {path}: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise SpecError(f"{path.parent.name}/{path.name}: not valid TOML ({error})") from None
    spec = _spec(data, path)
    return spec.with_settings(overrides, f"the setting overrides for {path.name}")


def _spec(data: dict, path: pathlib.Path) -> Spec:
    where = f"{path.parent.name}/{path.name}"
    _known_keys(data, TOP_KEYS, where, "top level")
    for key in ("name", "title", "total", "module_class", "parts"):
        if key not in data:
            raise SpecError(f"{where}: the top level needs `{key}` (see the comments at the top of the file)")
    name, title = _typed(data, "name", str, where), _typed(data, "title", str, where)
    total = _typed(data, "total", float, where)
    module_class = _typed(data, "module_class", str, where)
    if not module_class.isidentifier():
        raise SpecError(f"{where}: module_class must be a Python class name, got {module_class!r}")
    if type(data["parts"]) is not list or not data["parts"]:
        raise SpecError(f"{where}: declare at least one part as a [[parts]] table")
    parts = tuple(_part(table, index, where, module_class) for index, table in enumerate(data["parts"]))
    _check_parts(parts, total, where, module_class)
    settings = Settings(**_settings_values(data.get("settings", {}), f"{where} [settings]", aliases=False))
    return Spec(name, title, total, module_class, parts, settings, path)


def _known_keys(table: dict, allowed, where: str, what: str) -> None:
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        key = unknown[0]
        close = difflib.get_close_matches(key, list(allowed), n=1)
        hint = f" (did you mean `{close[0]}`?)" if close else ""
        raise SpecError(f"{where}: unknown key `{key}` at the {what}{hint}; the keys are "
                        f"{', '.join(sorted(allowed))}")


def _typed(table: dict, key: str, kind: type, where: str):
    value = table[key]
    if kind is float:
        if type(value) not in (int, float) or not math.isfinite(value):
            raise SpecError(f"{where}: `{key}` must be a number, got {value!r}: write for example {key} = 10")
        return float(value)
    if type(value) is not kind:
        example = {str: f'{key} = "..."', int: f"{key} = 3", list: f"{key} = [...]"}.get(kind, "")
        raise SpecError(f"{where}: `{key}` must be a {kind.__name__}, got {value!r}: write for example {example}")
    return value


def _part(table, index: int, where: str, module_class: str) -> Part:
    if type(table) is not dict:
        raise SpecError(f"{where}: parts[{index}] must be a [[parts]] table")
    label = f"{where} [[parts]] #{index + 1}"
    _known_keys(table, PART_KEYS, label, "part")
    missing = [key for key in PART_KEYS if key not in table and key not in OPTIONAL_PART_KEYS]
    if missing:
        needed = ", ".join(sorted(set(PART_KEYS) - OPTIONAL_PART_KEYS))
        raise SpecError(f"{label}: missing `{missing[0]}` (each part needs {needed})")
    number = _typed(table, "number", int, label)
    label = f"{where} Part {number}"
    points = _typed(table, "points", float, label)
    if points < 0:
        raise SpecError(f"{label}: points must not be negative, got {points:g}")
    module = _typed(table, "module", str, label)
    if not module.isidentifier():
        raise SpecError(f"{label}: module must be a file name of student/ without .py (e.g. \"heads\"), got {module!r}")
    names = _typed(table, "names", list, label)
    if not names or not all(type(n) is str and _graded_name(n, module_class) for n in names):
        raise SpecError(f"{label}: names must be a non-empty list of function names, or methods written "
                        f"\"{module_class}.<method>\"; got {names!r}")
    uses = _typed(table, "uses", list, label)
    if not all(type(n) is int for n in uses):
        raise SpecError(f"{label}: uses must list part numbers, e.g. uses = [1, 2]; got {uses!r}")
    visibility = table.get("visibility")
    if visibility is not None and visibility not in VISIBILITIES:
        raise SpecError(f"{label}: visibility must be one of {', '.join(map(repr, VISIBILITIES))}; got {visibility!r}")
    return Part(number, _typed(table, "title", str, label), points, module, tuple(names), tuple(uses), visibility)


def _graded_name(name: str, module_class: str) -> bool:
    head, _, method = name.partition(".")
    if not method:
        return name.isidentifier()
    return head == module_class and method.isidentifier()


def _check_parts(parts: tuple[Part, ...], total: float, where: str, module_class: str) -> None:
    numbers = [part.number for part in parts]
    if len(set(numbers)) != len(numbers):
        raise SpecError(f"{where}: two parts have the number {max(numbers, key=numbers.count)}")
    if numbers != sorted(numbers) or numbers[0] < 1:
        raise SpecError(f"{where}: number the parts 1, 2, 3, ... in the order of the file (got {numbers})")
    owners: dict[str, int] = {}
    homes: dict[str, str] = {}
    for part in parts:
        for name in part.names:
            if name in owners:
                raise SpecError(f"{where}: {name} is in Part {owners[name]} and Part {part.number}; a graded name "
                                f"belongs to one part")
            owners[name] = part.number
            export = name.split(".")[0]
            if homes.setdefault(export, part.module) != part.module:
                raise SpecError(f"{where}: {export} is in student/{homes[export]}.py for one part and in "
                                f"student/{part.module}.py for Part {part.number}; it can live in one file only")
        for used in part.uses:
            if used not in numbers:
                raise SpecError(f"{where}: Part {part.number} uses Part {used}, which is not declared")
            if used == part.number:
                raise SpecError(f"{where}: Part {part.number} lists itself in uses")
    by_number = {part.number: part for part in parts}

    def reaches(start: int, goal: int, seen: set[int]) -> bool:
        return any(used == goal or (used not in seen and reaches(used, goal, seen | {used}))
                   for used in by_number[start].uses)

    for part in parts:
        if reaches(part.number, part.number, set()):
            raise SpecError(f"{where}: Part {part.number} uses itself through other parts: `uses` must not "
                            f"form a cycle")
    added = sum(part.points for part in parts)
    if abs(added - total) > 1e-9:
        listing = " + ".join(f"{part.points:g}" for part in parts)
        raise SpecError(f"{where}: the parts' points add up to {added:g} ({listing}), not total = {total:g}: "
                        f"change the points of a part, or total")


def _settings_values(table, where: str, *, aliases: bool) -> dict:
    if type(table) is not dict:
        raise SpecError(f"{where}: the settings must be a table of keys")
    declared = setting_fields()
    values = {}
    for raw_key, value in table.items():
        key = OTTER_ALIASES.get(raw_key, raw_key) if aliases else raw_key
        if key not in declared:
            close = difflib.get_close_matches(str(raw_key), list(declared), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise SpecError(f"{where}: unknown setting {raw_key!r}{hint}; the settings are "
                            f"{', '.join(declared)} (their meanings: assignment/spec.py, Settings)")
        values[key] = _setting_value(str(raw_key), value, declared[key], where)
    return values


def _setting_value(key: str, value, declared, where: str):
    """value checked against the declared field (key: the name the instructor wrote)."""
    the_field, kind = declared
    meta = the_field.metadata
    allowed = typing.get_args(kind) or (kind,)
    if value is None and type(None) in allowed:
        return None
    if bool in allowed:
        if type(value) is not bool:
            raise SpecError(f"{where}: {key} must be true or false, got {value!r}: write {key} = "
                            f"{str(the_field.default).lower()} (meaning: {meta['meaning']})")
        return value
    if int in allowed:
        if type(value) is not int or value < 0 or (meta["positive"] and value == 0):
            raise SpecError(f"{where}: {key} must be a whole number{' above 0' if meta['positive'] else ''}, got "
                            f"{value!r}: write for example {key} = 3 (meaning: {meta['meaning']})")
        return value
    if float in allowed:   # never negative; zero too where the setting is positive
        number = type(value) in (int, float) and math.isfinite(value)
        if not number or value < 0 or (meta["positive"] and value == 0) or value > (meta["at_most"] or math.inf):
            most = f" of at most {meta['at_most']:g}" if meta["at_most"] else ""
            raise SpecError(f"{where}: {key} must be a {'positive' if meta['positive'] else 'non-negative'} "
                            f"number{most}, got {value!r}: write for example "
                            f"{key} = {the_field.default if the_field.default is not None else 100} "
                            f"(meaning: {meta['meaning']})")
        return float(value)
    if type(value) is not str or (meta["choices"] and value not in meta["choices"]):
        options = " or ".join(f'"{c}"' for c in meta["choices"])
        raise SpecError(f"{where}: {key} must be {options}, got {value!r}: write {key} = \"{the_field.default}\" "
                        f"(meaning: {meta['meaning']})")
    return value


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    raise TypeError(f"cannot write {value!r} as TOML")


SPEC = load()


def describe(spec: Spec = SPEC) -> str:
    """The declaration as an instructor reads it: the parts, then every setting with its value and meaning."""
    lines = [f"{spec.title} ({spec.source}): {len(spec.parts)} parts, {spec.total:g} points", ""]
    for part in spec.parts:
        uses = f"; uses Part{'s' if len(part.uses) > 1 else ''} {', '.join(map(str, part.uses))}" if part.uses else ""
        lines.append(f"  Part {part.number} {part.title}: {part.points:g} points, student/{part.module}.py: "
                     f"{', '.join(part.names)}{uses}; results shown {spec.visibility(part.number)}")
    lines += ["", "Settings ([settings] of the file; `build --otter-config FILE` may override them):"]
    for key, (the_field, _kind) in setting_fields().items():
        value = getattr(spec.settings, key)
        default = "" if value == the_field.default else f" (default {the_field.default})"
        lines.append(f"  {key} = {value}{default}\n      {the_field.metadata['meaning']}")
    return "\n".join(lines)


def main(argv=None) -> int:
    print(describe())
    return 0
