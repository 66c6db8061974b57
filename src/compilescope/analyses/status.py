"""The outcome of one compilation, from its metrics."""

from __future__ import annotations

import dataclasses
from typing import Mapping

from ..model.ids import NO_COMPILE_ID, CompileId, compilation_key
from ..model.trace import Compile, Trace
from ..wording import ordinal

OK = "ok"
BREAK = "break"  # compiled in an attempt after a restart ([0/0_1]: its metrics name restart_reasons)
RESTARTED = "restarted"  # an attempt Dynamo restarted ([0/0] before [0/0_1]): nothing compiled in it, no metrics
EMPTY = "empty"  # succeeded with an empty graph
ERROR = "error"
MISSING = "missing"  # no compilation_metrics: still running, crashed, or log cut

STATUSES = (OK, BREAK, RESTARTED, EMPTY, ERROR, MISSING)
CAPTURED_GRAPH = "compiled_autograd_graph"  # the graph compiled autograd captured from a backward
# How a compile ended, in the words of every page, card and diff ("2 compiled, 1 failed"). "compiled", not "Success":
# a program can compile and then crash running what was compiled, as the terminal says it ("[0/0]'s compiled code").
STATUS_LABELS = {
    OK: "compiled",
    BREAK: "compiled after a restart",
    RESTARTED: "restarted",
    EMPTY: "empty graph",
    ERROR: "failed",
    MISSING: "without metrics",
}
# What each means, for a tooltip.
STATUS_HELP = {
    OK: "Dynamo traced the frame and the backend compiled it",
    BREAK: "Dynamo restarted its analysis of the frame (most often at a graph break) and compiled it in this attempt, "
           "[0/0_1] after [0/0]",
    RESTARTED: "Dynamo restarted its analysis of the frame in this attempt (most often at a graph break): nothing was "
               "compiled in it; the next attempt, [0/0_1] after [0/0], compiled the frame",
    EMPTY: "compiled, but the graph has no operations: nothing of it runs compiled",
    ERROR: "the compile failed; torch ran the frame without compiling it, or raised the error",
    MISSING: "torch logged no compilation_metrics for it: the compile was still running, the process died, or the log "
             "was cut",
}
# tlparse's names of the same, on its index's legend: named beside ours for people who know tlparse's. tlparse has no
# name for a restarted attempt: it colours [0/0] as the compile that succeeded with a restart.
TLPARSE_STATUS_LABELS = {
    OK: "Success",
    BREAK: "Success with restart (e.g., graph break)",
    RESTARTED: "Success with restart (e.g., graph break)",
    EMPTY: "Empty graph",
    ERROR: "Error",
    MISSING: "Metrics were missing",
}


def compile_status(entry: Compile) -> str:
    metrics = entry.metrics
    if metrics is None:
        cid = entry.compile_id
        if cid is not None and cid.compiled_autograd_id is not None and cid.frame_id is None:
            # Compiled autograd capturing a backward ([!0/-/-]): no Dynamo compile, so never metrics of its own;
            # it is done when its graph is logged (Dynamo's compile of that graph, [!0/1/0], has its own status).
            return OK if any(a.name == CAPTURED_GRAPH for a in entry.artifacts) else MISSING
        return MISSING
    if metrics.get("fail_type"):
        return ERROR
    if metrics.get("graph_op_count") == 0:
        return EMPTY
    if metrics.get("restart_reasons"):
        return BREAK
    return OK


def compile_statuses(trace: Trace) -> dict[CompileId | None, str]:
    """Status of every compile id.

    An attempt that Dynamo restarted logs no metrics of its own; its outcome is
    "restarted", not "metrics missing" (the next attempt has them, and is the compile).
    """
    # The highest attempt of each compilation: every lower attempt was restarted. One entry per
    # compilation, not per attempt: the attempt number comes from the log and may be huge.
    last_attempt: dict[tuple, int] = {}
    for cid in trace.compiles:
        if cid is not None and isinstance(cid.attempt, int) and cid.attempt:
            key = (cid.compiled_autograd_id, cid.frame_id, cid.frame_compile_id)
            last_attempt[key] = max(last_attempt.get(key, 0), cid.attempt)
    statuses = {}
    for cid, entry in trace.compiles.items():
        status = compile_status(entry)
        if status == MISSING and cid is not None and isinstance(cid.attempt, int) and (
            cid.attempt < last_attempt.get((cid.compiled_autograd_id, cid.frame_id, cid.frame_compile_id), 0)
        ):
            status = RESTARTED
        statuses[cid] = status
    return statuses


def compiled_attempts(trace: Trace) -> dict[str, str]:
    """The attempt that compiled each compilation Dynamo restarted, by its id without the attempt: "[1/1]" ->
    "[1/1_1]". Chromium events name a compilation without its attempt; a row made from them (its compile time, its
    autotuning) describes the attempt that compiled (every lower attempt was restarted: nothing compiled in it)."""
    last: dict[str, CompileId] = {}
    for cid in trace.compiles:
        if cid is not None and isinstance(cid.attempt, int) and cid.attempt:
            key = str(dataclasses.replace(cid, attempt=0))
            if key not in last or cid.attempt > (last[key].attempt or 0):
                last[key] = cid
    return {key: str(cid) for key, cid in last.items()}


def attempt_words(compile_id: str) -> str:
    """Which attempt of its compilation a compile id as reports name it is: "[0/1]'s first attempt" for [0/1],
    "[0/1]'s second attempt" for [0/1_1]."""
    parsed = CompileId.parse(compile_id)
    attempt = (parsed.attempt or 0) if parsed is not None else 0
    return f"{compilation_key(compile_id)}'s {ordinal(attempt + 1)} attempt"


def restarted_attempt_words(compile_id: str) -> str:
    """An attempt Dynamo restarted, in prose: "[0/1]'s first attempt, which Dynamo restarted" (attempt_words), told
    apart from the attempt that compiled [0/1], "[0/1]'s second attempt"."""
    return f"{attempt_words(compile_id)}, which Dynamo restarted"


def restarted_attempt_label(compile_id: str) -> str:
    """An attempt Dynamo restarted (RESTARTED) where a table names its rows by compilation: "[0/1] first try,
    restarted", apart from the attempt that compiled [0/1] ([0/1_1]), which the table names "[0/1]". Short: a
    terminal's compile id column holds it on one line at 80 columns."""
    parsed = CompileId.parse(compile_id)
    attempt = (parsed.attempt or 0) if parsed is not None else 0
    return f"{compilation_key(compile_id)} {ordinal(attempt + 1)} try, restarted"


def status_counts(statuses: dict[CompileId | None, str]) -> dict[str, int]:
    """Compile ids per status, every status present (the NO_COMPILE_ID group is not a compile id)."""
    counts = {s: 0 for s in STATUSES}
    for cid, status in statuses.items():
        if cid is not None:
            counts[status] += 1
    return counts


def count_words(counts: Mapping[str, int], no_graph: int = 0) -> list[tuple[str, int, str]]:
    """(status, count, words) for each status counted, in the order of STATUSES, as every page, card and diff line
    says them: "4 compiled (2 after a restart)", "2 restarted attempts". A compile after a restart ([0/0_1]) is one that
    compiled, counted with them; the attempt restarted before it ([0/0]) is not. A status this does not know is named
    as it is.

    no_graph: of those "ok", the compiles that made no graph at all (empty_graphs.made_no_graph). Their status is
    tlparse's, but they are no compiled code: counted apart, "1 compiled, with no graph", styled as empty."""
    after_restart = counts.get(BREAK, 0)
    no_graph = min(no_graph, counts.get(OK, 0))
    compiled = counts.get(OK, 0) + after_restart - no_graph
    found = []
    if after_restart and after_restart == compiled:  # every one after a restart: "2 compiled after a restart"
        found.append((BREAK, compiled, STATUS_LABELS[BREAK]))
    elif compiled:
        found.append((OK, compiled, STATUS_LABELS[OK] + (f" ({after_restart} after a restart)" if after_restart else "")))
    if no_graph:
        found.append((EMPTY, no_graph, "compiled, with no graph"))
    if counts.get(RESTARTED):
        found.append((RESTARTED, counts[RESTARTED], "restarted attempt" + ("" if counts[RESTARTED] == 1 else "s")))
    others = [s for s in STATUSES if s not in (OK, BREAK, RESTARTED)] + [s for s in counts if s not in STATUSES]
    found.extend((s, counts[s], STATUS_LABELS.get(s, s)) for s in others if counts.get(s))
    return found


def counts_text(counts: Mapping[str, int], no_graph: int = 0) -> str:
    """count_words as one line: "4 compiled (2 after a restart), 2 restarted attempts"; no_graph as count_words's (the
    report's cards set those compiles apart: a line that counts them as compiled would say otherwise)."""
    return ", ".join(f"{n} {words}" for _, n, words in count_words(counts, no_graph))


def failed_compiles(statuses: dict) -> int:
    """"failures" wherever a summary counts them (a log's digest, a rank's summary): compile ids whose
    compilation failed (status error). A restart (graph break) is not a failure; it is counted as a restart."""
    return sum(1 for cid, status in statuses.items() if cid is not None and cid != NO_COMPILE_ID and status == ERROR)

