"""This run's lines for what a cache hit hands back from the run that compiled it.

On an FX graph cache hit (or an AOTAutograd cache hit) torch logs the graphs and kernel stack traces it cached: their
`# File:` comments and `File "...", line N` frames name the lines of the run that filled the cache, and a line added
above them since moves them (wrong_results_cache_hit.log: the cached post-grad graph and kernel stacks name 31-35,
Dynamo's graph of the same compile 32-36). Dynamo traces the code anew on every run, so its graph (dynamo_output_graph)
names this run's lines: a cached line is placed on the line of Dynamo's graph with the same file, function and code.
"""

from __future__ import annotations

from dataclasses import field

from ..model.records import dataclass
from ..model.trace import Compile, Trace
from .fx_sites import GRAPH_ARTIFACT, fx_node_sites

# What torch logs on a hit (each artifact's name), and the artifacts of a compile a hit hands back from the cache
CACHE_HITS = frozenset(("fx_graph_cache_hit", "aotautograd_cache_hit"))
CACHED_GRAPHS = ("aot_forward_graph", "aot_backward_graph", "aot_inference_graph", "aot_joint_graph",
                 "inductor_post_grad_graph")


@dataclass
class RunLines:
    """This run's lines of the code a compile's Dynamo graph names, by file, function and code."""

    named: set[tuple[str, int, str]] = field(default_factory=set)  # (path, line, code) as Dynamo's graph names them
    lines: dict[tuple[str, str, str], list[int]] = field(default_factory=dict)  # (path, function, code) -> lines

    def line(self, path: str, line: int, function: str | None, code: str | None) -> int:
        """This run's line of a cached line: itself where Dynamo's graph names it with that code; else the line of
        Dynamo's graph with its code in that function (the nearest, where the code is on several); else itself (a
        line Dynamo's graph does not name: an outer frame, torch's own code)."""
        if not code or (path, line, code) in self.named:
            return line
        found = self.lines.get((path, function or "", code))
        return min(found, key=lambda n: (abs(n - line), n)) if found else line


def run_lines(trace: Trace, entry: Compile) -> RunLines | None:
    """This run's lines for the compile's cached graphs and kernels; None where it hit no cache (what it logged is
    this run's) or logged no Dynamo graph."""
    if not any(a.name in CACHE_HITS for a in entry.artifacts):
        return None
    found = RunLines()
    for artifact in entry.artifacts:
        if artifact.name != GRAPH_ARTIFACT or artifact.payload is None:
            continue
        for site in fx_node_sites(trace.payload_text(artifact.payload)):
            if site.code:
                found.named.add((site.path, site.line, site.code))
                lines = found.lines.setdefault((site.path, site.function, site.code), [])
                if site.line not in lines:
                    lines.append(site.line)
    return found if found.named else None


def moved_lines(trace: Trace, entry: Compile, lines: RunLines | None = None) -> list[tuple[str, int, int]]:
    """(file, the cached graphs' line, this run's) of each line a cache hit's graphs name where this run's code is on
    another line: the cached code was compiled from an older version of the file. Empty where none moved."""
    lines = lines if lines is not None else run_lines(trace, entry)
    if lines is None:
        return []
    moved: dict[tuple[str, int], int] = {}
    for artifact in entry.artifacts:
        if artifact.name not in CACHED_GRAPHS or artifact.payload is None:
            continue
        for site in fx_node_sites(trace.payload_text(artifact.payload)):
            now = lines.line(site.path, site.line, site.function, site.code)
            if now != site.line:
                moved.setdefault((site.path, site.line), now)
    return sorted((path, old, new) for (path, old), new in moved.items())
