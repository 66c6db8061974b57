"""What the runs ran with: torch versions and config (an option a torch upgrade renamed is no change), the compile
steps one torch version has and the other not, frames in Python's own library that a torch version compiles, and the
program's files run from another directory (relocated_files), matched by name."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import orjson

from ...wording import count, first_listed, format_seconds, possessive
from ..user_locations import is_python_library_file
from ..run_facts import RunFacts
from . import Change, RunDiff


def torch_changed(a: RunFacts, b: RunFacts) -> bool:
    """Both runs name their torch version, and the versions differ: what an upgrade's own differences are said with."""
    return bool(a.torch_version and b.torch_version and a.torch_version != b.torch_version)


def _config_value(value: str | None, side: str) -> str:
    """A config value as a person reads it: a string without its JSON quotes (`compile_error`), null as unset;
    true, 3 or [1, 2] as JSON writes them."""
    if value is None:
        return f"(not in {possessive(side)} config)"
    try:
        parsed = orjson.loads(value)
    except orjson.JSONDecodeError:
        return value
    if parsed is None:
        return "(unset)"
    if isinstance(parsed, str):
        return parsed or "(empty)"
    return value


def _same_set(key: str, va: str | None, vb: str | None) -> bool:
    """Both runs' values of a Dynamo option are one list in another order: a set, which torch before its config logging
    sorted them wrote in the order of Python's string hashing, that each process draws anew (peer-tlparse's simple.log
    and chromium_events.log, one torch: allowed_functions_module_string_ignorelist in two orders). Dynamo's list
    options are sets of names or ops, whose order does nothing."""
    if not key.startswith("dynamo.") or va is None or vb is None:
        return False
    try:
        la, lb = orjson.loads(va), orjson.loads(vb)
    except orjson.JSONDecodeError:
        return False
    if not (isinstance(la, list) and isinstance(lb, list) and len(la) == len(lb)):
        return False
    return sorted(map(orjson.dumps, la)) == sorted(map(orjson.dumps, lb))


def _option_words(leaf: str) -> tuple[str, ...]:
    return tuple(word for word in leaf.split("_") if word)


def renamed_options(gone: set[str], new: set[str], config_a: dict[str, str], config_b: dict[str, str]) -> dict[str, str]:
    """Options of one torch version (gone) that the other has under another name (new), gone -> new: the same leaf name
    under another prefix (`inductor.cuda.x` -> `inductor.x`), or, under one prefix and with one value, a leaf whose
    words are the other's with words added (`dynamo._shapes_spec` -> `dynamo._dynamic_shapes_spec`). Only a pair that
    each of its options forms with nothing else: two candidates either way are no rename."""
    def candidates(key: str, among: set[str], mine: dict[str, str], theirs: dict[str, str]) -> set[str]:
        prefix, _, leaf = key.rpartition(".")
        found = set()
        for other in among:
            other_prefix, _, other_leaf = other.rpartition(".")
            if leaf == other_leaf and prefix != other_prefix:
                found.add(other)
            elif prefix == other_prefix and mine[key] == theirs[other]:
                words, other_words = _option_words(leaf), _option_words(other_leaf)
                shorter, longer = sorted((words, other_words), key=len)
                if len(shorter) >= 2 and len(shorter) < len(longer) and set(shorter) <= set(longer):
                    found.add(other)
        return found
    pairs = {}
    for key in gone:
        [match] = found if len(found := candidates(key, new, config_a, config_b)) == 1 else [None]
        if match is not None and candidates(match, gone, config_b, config_a) == {key}:
            pairs[key] = match
    return dict(sorted(pairs.items()))


def config_changes(a: RunFacts, b: RunFacts) -> list[Change]:
    """A change for each config key whose value differs. Across two torch versions, the keys only one version has are
    that version's options, not a change the user made (2.13 -> 2.14 adds and drops dozens): one change each way,
    naming a few, every key and value in its detail."""
    changes: list[Change] = []
    upgrade = torch_changed(a, b)
    only = {"A": {}, "B": {}}  # type: dict[str, dict[str, str]]
    for key in sorted(set(a.config) | set(b.config)):
        va, vb = a.config.get(key), b.config.get(key)
        if va == vb or _same_set(key, va, vb):
            continue
        if upgrade and (va is None or vb is None):
            only["B" if va is None else "A"][key] = _config_value(vb if va is None else va, "")
            continue
        kind = "added" if va is None else "removed" if vb is None else "changed"
        changes.append(Change("environment", kind, f"config {key}: {_config_value(va, 'A')} → "
                              f"{_config_value(vb, 'B')}", None, va, vb))
    for old, new in renamed_options(set(only["A"]), set(only["B"]), a.config, b.config).items():
        va, vb = a.config[old], b.config[new]
        value = (f"{_config_value(va, 'A')}, as before" if va == vb
                 else f"{_config_value(va, 'A')} → {_config_value(vb, 'B')}")
        changes.append(Change("environment", "changed", f"config {old} renamed {new} (torch {a.torch_version} → "
                              f"{b.torch_version}): {value}", None, va, vb, {"renamed": {"a": old, "b": new}}))
        del only["A"][old], only["B"][new]
    for side, kind in (("A", "removed"), ("B", "added")):
        keys = only[side]
        if not keys:
            continue
        mine, other = (a, b) if side == "A" else (b, a)
        named = first_listed(list(keys), shown=3)
        changes.append(Change(
            "environment", kind, f"config: {count(len(keys), 'option')} of torch {mine.torch_version} that "
            f"{other.torch_version} does not have ({named})", None,
            len(keys) if side == "A" else None, len(keys) if side == "B" else None,
            {"version_options": keys, "torch": mine.torch_version}))
    return changes


def _program_files(facts: RunFacts) -> set[str]:
    """The files a run compiled frames of or broke graphs in (not the code torch generated, `<eval_with_key>`)."""
    files = {f.filename for f in facts.frames.values() if f.filename and not f.filename.startswith("<")}
    return files | {x["file"] for x in facts.graph_breaks if x.get("file") and not x["file"].startswith("<")}


def relocated_files(a: RunFacts, b: RunFacts) -> dict[str, str]:
    """B's files that are A's in another directory -> A's path: the same program run from another checkout, machine
    or venv (torch 2.14 in a venv of its own runs its optimizer.py from another site-packages). Logs name files by
    absolute path, so every frame and break of such a file read as gone and new. A file of one side only is matched
    to the other side's file with the same name and the most trailing directories in common, where that is one file
    both ways (a package's __init__.py by its folder too); paths both runs name are left alone."""
    files_a, files_b = _program_files(a), _program_files(b)
    only_a, only_b = files_a - files_b, files_b - files_a

    def common_tail(x: str, y: str) -> int:
        n = 0
        for part_x, part_y in zip(reversed(x.split("/")), reversed(y.split("/"))):
            if part_x != part_y:
                break
            n += 1
        return n

    def best(path: str, candidates: set[str]) -> str | None:
        scored = [(common_tail(path, other), other) for other in candidates]
        top = max((n for n, _ in scored), default=0)
        found = [other for n, other in scored if n == top]
        # A package's __init__.py or __main__.py names no module by itself: such a file needs its folder too.
        enough = 2 if path.rsplit("/", 1)[-1] in ("__init__.py", "__main__.py") else 1
        return found[0] if top >= enough and len(found) == 1 else None

    return {path: match for path in sorted(only_b) if (match := best(path, only_a)) and best(match, only_b) == path}


def moved_onto(facts: RunFacts, moved: dict[str, str]) -> RunFacts:
    """facts with each file of moved named by its other path, wherever a path is (frame keys, breaks, graph nodes'
    lines, symbols)."""
    pattern = re.compile(r"(?<![\w/.-])(" + "|".join(map(re.escape, sorted(moved, key=len, reverse=True)))
                         + r")(?![\w.-])")

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return pattern.sub(lambda m: moved[m.group(1)], value)
        if isinstance(value, dict):
            return {walk(k): walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    doc = walk(facts.to_json())
    doc["source"] = facts.source  # the log's own path is no program file
    return RunFacts.from_json(doc)


def step_changes(a: RunFacts, b: RunFacts) -> list[Change]:
    """Across two torch versions, the steps one version's compiles ran and the other's never did (its new passes), one
    change each way: said with the versions, where the upgrade's own differences are, so that a compile-time change
    below is read with them."""
    if not a.compile_steps or not b.compile_steps:
        return []
    changes = []
    for side, kind, mine, other in (("A", "removed", a, b), ("B", "added", b, a)):
        steps = {name: s for name, s in mine.compile_steps.items() if name not in other.compile_steps}
        if not steps:
            continue
        slowest = sorted(steps, key=lambda name: -steps[name])
        named = ", ".join(f"{name} ({format_seconds(steps[name])})" for name in slowest[:3])
        more = f" and {len(steps) - 3} more" if len(steps) > 3 else ""
        changes.append(Change(
            "environment", kind, f"compile steps torch {mine.torch_version} ran and {other.torch_version} did not: "
            f"{named}{more}", None, steps if side == "A" else None, steps if side == "B" else None,
            {"compile_steps": steps, "torch": mine.torch_version}))
    return changes


def say_library_changes(a: RunFacts, b: RunFacts, result: RunDiff) -> None:
    """Across two torch versions, frames, breaks and failures in Python's own library that one run only has are marked,
    and a note says why they may be the version's: torch calls that code from compiled code (2.14's compiled autograd
    calls inspect.getattr_static, and Dynamo compiles it), so the version, not the program, may be what changed them."""
    if not torch_changed(a, b):
        return
    marked: dict[str, Counter[str]] = {"added": Counter(), "removed": Counter()}
    for change in result.changes:
        if change.kind not in marked or change.section not in ("frames", "graph_breaks", "failures"):
            continue
        if change.section == "graph_breaks":
            found = change.b if change.kind == "added" else change.a
            file = found.get("file") if isinstance(found, dict) else None
        else:
            frame = (b if change.kind == "added" else a).frames.get(change.frame or "")
            file = frame.filename if frame is not None else None
        if file and is_python_library_file(file):
            change.title += " (Python's own library)"
            change.detail = {**change.detail, "python_library": True}
            marked[change.kind][change.section] += 1
    words = {"frames": "frame", "graph_breaks": "graph break", "failures": "failure"}
    for kind, side, mine, other in (("added", "B", b, a), ("removed", "A", a, b)):
        if marked[kind]:
            what = ", ".join(count(n, words[section]) for section, n in marked[kind].items())
            result.notes.append(
                f"{what} in Python's own library only in {side}: torch calls such code from compiled code, and torch "
                f"{mine.torch_version} did where {other.torch_version} did not, so the torch version, not the "
                "program, may explain them")
