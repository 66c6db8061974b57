"""Multi-rank fixtures: the peer directories, and reports of them written once per session."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from compilescope.analyses.divergence import MultiRankResults, analyze_ranks
from compilescope.analyses.rank_summary import RankSummary

from ..conftest import PEER, PEER_INPUTS, run_cli, skip_or_fail

DIRS = {
    "multi_rank_logs": PEER_INPUTS / "multi_rank_logs",
    "multi_rank_messy_input": PEER_INPUTS / "multi_rank_messy_input",
    "multi_rank_schedule": PEER_INPUTS / "multi_rank_schedule",
    "multi_rank_runtime": PEER_INPUTS / "multi_rank_runtime",
    "collectives_parity": PEER_INPUTS / "collectives_parity",
    "graph_exec_order_tests": PEER / "graph_exec_order_tests",
}


def peer_dir(name: str) -> Path:
    path = DIRS[name]
    if not path.is_dir():
        skip_or_fail(f"peer directory {name} not available (../shared missing)")
    return path


class Landing:
    """A multi-rank report written by the CLI: its landing page, summary JSON and files."""

    def __init__(self, out: Path):
        self.out = out
        self.html = (out / "index.html").read_text()
        self.summary = json.loads((out / "multi_rank_summary.json").read_text())
        self.analysis = self.summary["analysis"]
        self.ranks = {r["rank"]: r for r in self.summary["ranks"]}

    def divergence(self, kind: str) -> dict | None:
        return next((d for d in self.analysis["divergences"] if d["kind"] == kind), None)

    def groups(self, kind: str) -> list[list[int]]:
        d = self.divergence(kind)
        return [g["ranks"] for g in d["groups"]] if d else []

    def results(self, source: Path) -> MultiRankResults:
        """The results this report was written of, read back from its summary JSON (source: the directory of rank
        logs, which the JSON does not hold); the analysis, made again of the ranks' summaries, is the one written."""
        summaries = [RankSummary.from_json(rank) for rank in self.summary["ranks"]]
        results = MultiRankResults(str(source), summaries, analyze_ranks(summaries), self.summary["notes"])
        assert results.to_json() == self.summary
        return results

    def rank_table_text(self, source: Path) -> str:
        """The terminal's rank table (and its notes) of these results, as plain text 100 columns wide."""
        import io

        from rich.console import Console

        from compilescope.render.terminal import rank_summaries_renderable

        console = Console(width=100, color_system=None, record=True, file=io.StringIO())
        console.print(rank_summaries_renderable(self.results(source)))
        return console.export_text()

    def json(self, relpath: str):
        return json.loads((self.out / relpath).read_text())


def write_landing(src: Path, out: Path, *flags: str) -> Landing:
    rc = run_cli(src, "--all-ranks-html", "-o", out, "--no-browser", "--overwrite", "-j", "1", *flags)
    assert rc == 0, f"compilescope --all-ranks-html failed on {src}"
    return Landing(out)


@pytest.fixture(scope="session")
def landing(tmp_path_factory):
    """landing(name): the report of a peer directory (written once per session)."""
    cache: dict[str, Landing] = {}

    def get(name: str) -> Landing:
        if name not in cache:
            cache[name] = write_landing(peer_dir(name), tmp_path_factory.mktemp(name) / "out")
        return cache[name]

    return get


def copy_ranks(src: Path, dest: Path, names: dict[str, str]) -> Path:
    """dest/ with src's files copied under new names ({new name: source name}); "" makes an empty file."""
    dest.mkdir(parents=True, exist_ok=True)
    for new, old in names.items():
        if old:
            shutil.copyfile(src / old, dest / new)
        else:
            (dest / new).touch()
    return dest


