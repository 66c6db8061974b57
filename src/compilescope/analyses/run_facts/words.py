"""A run's facts in one line, as `diff` and `check` both say them: a native crash (crash_line, crash_called_from),
failed compiles (failed_compiles), and where a graph break or a symbol is (break_at, place_text)."""

from __future__ import annotations

from typing import Any

from . import RunFacts, short_path


def crash_line(crash: dict[str, Any]) -> str:
    """`Segmentation fault in static_triton_launcher.py:291 (run) while running [0/1]'s compiled code`, as the
    report's finding names it."""
    return crash["headline"] + (f" {crash['during']}" if crash["during"] else "")


def crash_called_from(crash: dict[str, Any] | None) -> str | None:
    """`called from hf_gpt2_static_cache.py:22 in main`: the user's line on the crashed stack."""
    return crash["called_from"] if crash is not None else None


def failed_compiles(facts: RunFacts, failure: dict[str, Any], compile_ids: list[str] | None = None) -> str:
    """Failed compiles as diff and check name them: "[0/2] train_step (train_step_pitfalls.py:31): Unsupported: Dynamo
    recompile limit exceeded", with " at file.py:35" where torch logged where it failed in the frame; compile_ids
    (the compiles that failed so, "[0/0], [0/1]") in place of the failure's own."""
    frame = facts.frames.get(failure["frame"]) if failure.get("frame") else None
    ids = ", ".join(compile_ids) if compile_ids else failure.get("compile_id")
    who = " ".join(part for part in (ids, frame.label if frame else None) if part)
    at = f" at {short_path(failure['source'])}" if failure.get("source") else ""
    if failure.get("ran_eagerly"):  # no exception: the errors finding's words ("[0/0]: Dynamo skipped forward ...")
        # (they name a frame not the user's, Python's library's, with the user's line that called it: run_facts)
        return f"{ids or 'a compile'}: {failure['ran_eagerly']}{at}: {failure['reason']}"
    return f"{who or 'a compile'}{at}: {failure['type']}: {failure['reason']}"


def place_text(file: str | None, line: int | None, torch_line: str | None = None) -> str:
    """'at prog.py:12', or what the log lacks (a symbol torch logged with no user frame); "in torch's adam.py:229,
    called at prog.py:24" where the user's line is the call into torch's (dynamic_shapes._location)."""
    if file and torch_line:
        return f"in torch's {torch_line}, called at {short_path(file)}:{line}"
    return f"at {short_path(file)}:{line}" if file else "location not in the log"


def break_at(x: dict) -> str:
    """Where a graph break is, for people: "at prog.py:12"; one in FSDP2's hooks "in FSDP2's hooks (torch's
    _fsdp_common.py:30), called at prog.py:46", the user's call of the sharded module."""
    if x.get("torch_line") and x.get("file"):
        return f"in FSDP2's hooks (torch's {x['torch_line']}), called at {short_path(x['file'])}:{x['line']}"
    return place_text(x["file"], x["line"])
