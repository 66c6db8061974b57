"""recompiles(trace): the analysis itself. For each frame compiled more than once, its compiles (the last attempt of
each), explained by frames.py (one RecompileStep per recompile with the guards that failed, placed and explained by
the package's other modules, and the frame's advice); then the log's backward graphs and the functions compiled afresh
after a reset."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ...model.trace import Compile, Trace
from . import FrameRecompiles, Recompiles
from .backward_and_resets import backward_graphs, compiled_afresh, renumbered_after_reset, renumbered_other_process

if TYPE_CHECKING:
    from ..installed_guards import GuardTrees
    from ..stack_values import StackValues

_LIMIT = r"(?i)recompile.?limit|cache_size_limit|cache size limit"


def _frames(trace: Trace) -> dict[tuple, list[Compile]]:
    """Compilations of each frame, the last attempt of each, in compile order."""
    latest: dict[tuple, Compile] = {}
    for cid, entry in trace.compiles.items():
        if cid is None or cid.frame_id is None or cid.frame_compile_id is None:
            continue
        key = (cid.compiled_autograd_id, cid.frame_id, cid.frame_compile_id)
        if key not in latest or (cid.attempt or 0) >= (latest[key].compile_id.attempt or 0):
            latest[key] = entry
    frames: dict[tuple, list[Compile]] = {}
    for key in sorted(latest, key=lambda k: (-1 if k[0] is None else k[0], k[1], k[2])):
        frames.setdefault(key[:2], []).append(latest[key])
    return frames


def recompiles(trace: Trace, stack_values: StackValues | None = None, guard_trees: GuardTrees | None = None) -> Recompiles:
    """stack_values: the log's, where the caller names sources for other analyses too (read here otherwise).
    guard_trees: the log's guard trees, where the caller reads them too (the source pages: parsed here otherwise)."""
    frames = _frames(trace)
    recompiled: list[tuple[int, list[Compile], Compile | None]] = []
    for (_, frame_id), entries in frames.items():
        limit_entry = next((e for e in entries if re.search(_LIMIT, str((e.metrics or {}).get("fail_reason") or ""))), None)
        if limit_entry is not None or any((e.compile_id.frame_compile_id or 0) > 0 for e in entries):
            recompiled.append((frame_id, entries, limit_entry))
    found: list[FrameRecompiles] = []
    if recompiled:
        # (here: explaining a recompile imports frames.py and five more modules, which a log that recompiled
        # nothing, most logs, does not pay for at start-up)
        from .frames import explain_frames

        found = explain_frames(trace, frames, recompiled, stack_values, guard_trees)
    found.sort(key=lambda f: (not f.hit_limit, -f.recompiles))
    return Recompiles(found, backward_graphs(trace), compiled_afresh(trace), renumbered_after_reset(trace),
                      renumbered_other_process(trace))
