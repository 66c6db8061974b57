"""draft_export's own trace handler replaces the process's and never gives it back (torch 2.13
torch/export/_draft_export.py, CaptureStructuredTrace: __enter__ removes the LazyTraceHandler, __exit__ removes only
itself): whatever the program did after a draft_export is in no log. A log that draft_export's handler wrote is
told by its kinds alone (that handler keeps eight); the report warns that the trace likely stops there."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from compilescope.analyses.analyze import analyze
from compilescope.analyses.export import DRAFT_EXPORT_KINDS
from compilescope.ingest.reader import read_trace

from ..conftest import REPO, torch213

TITLE = "the trace likely stops at this draft_export: nothing the program did after it was logged"


def raw_kinds(log: Path) -> set[str]:
    """The event kind of each record (the envelope's first key), read from the raw log."""
    opener = gzip.open if log.suffix == ".gz" else open
    with opener(log, "rt") as f:
        return {next(iter(json.loads(line[line.index("] ") + 2:]))) for line in f if not line.startswith("\t")}


def titles(log: Path) -> list[str]:
    with read_trace(str(log)) as trace:
        return [f.title for f in analyze(trace).insights.findings]


def test_a_log_draft_export_wrote_says_nothing_after_it_was_logged():
    # export_draft.log and export_mismatched_fake (TORCH_DTRACE): draft_export's own logs, no torch_version and no
    # chromium_event: str, exported_program and what its handler keeps.
    for name in ("export_draft.log", "export_mismatched_fake.log.gz"):
        kinds = raw_kinds(torch213(name))
        assert "exported_program" in kinds and kinds <= DRAFT_EXPORT_KINDS, kinds
        assert TITLE in titles(torch213(name))


def test_the_main_log_of_a_draft_export_run_is_not_taken_for_draft_exports():
    # export_constraints_dtrace: the same run's main log (export "start!" events, chromium events): its draft_export
    # wrote a log of its own. export.log: torch.export without draft_export. torch.compile logs: no export at all.
    for name in ("export_constraints_dtrace.log.gz", "export.log", "graph_breaks.log"):
        assert not raw_kinds(torch213(name)) <= DRAFT_EXPORT_KINDS
        assert TITLE not in titles(torch213(name))


def test_a_log_with_no_torch_version_is_not_said_to_be_torch_213s():
    # torch 2.14's export_draft log (tests/data/torch214): draft_export's own log as 2.13's, no torch_version in it.
    # What 2.13's CaptureStructuredTrace does is said as 2.13's; which torch wrote the log, the report does not claim.
    log = REPO / "tests" / "data" / "torch214" / "logs" / "export_draft.log.gz"
    kinds = raw_kinds(log)
    assert kinds <= DRAFT_EXPORT_KINDS and "torch_version" not in gzip.open(log, "rt").read()
    with read_trace(str(log)) as trace:
        (stops,) = [f for f in analyze(trace).insights.findings if f.title == TITLE]
    assert "torch 2.13 does not put it back" not in stops.detail
    assert "torch 2.13's does not put it back" in stops.detail and "which torch wrote this log, the log does not say" \
        in stops.detail
