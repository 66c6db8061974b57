"""A guard line's site (the user line that made the guard) read without GUARD_LINE's lazy groups: the same guard,
code, path, line, function, hint and note as GUARD_LINE finds, on every line of real guard trees; counted, not timed."""

from __future__ import annotations

import pytest

from compilescope.analyses import installed_guards
from compilescope.analyses.installed_guards import GUARD_LINE, GUARDS_ARTIFACT, GuardTrees, _guard_line
from compilescope.ingest.reader import read_trace

from ..conftest import cuda211, torch213

LOGS = [torch213("hf_llama.log.gz"), torch213("serve_varying.log.gz"), torch213("module_mode_loops.log.gz"),
        cuda211("hf_gpt2_generate.log.gz"), cuda211("compiled_optimizer.log.gz")]

# Lines GUARD_LINE's backtracking decides: a `# ` in the guard or the code, whitespace runs, no user line past the
# code, a second `+- `, a hint holding parentheses, torch's note, a newline (`.` stops there).
EDGES = [
    "| +- LAMBDA_GUARD: x >= 2  # (_prims_common/__init__.py:317 in is_contiguous)",
    "+- EQUALS_MATCH: L['a'] == '# x'  # y = 1  # comment  # m.py:3 in f",
    "+- ID_MATCH: a  #  # b # c.py:1 in g (HINT: type (int))",
    "+- TYPE_MATCH: \t# x\t\t# p.py:9 in h (user code shown is first use of this value)",
    "+- X: # a # b.py:2 in k",
    "+- +- LENGTH_CHECK: len(L['x']) == 2  # n = len(x)  # f.py:7 in run  ",
    "+- bad: x  # y  # f.py:1 in g",
    "+- A:  # # f.py:1 in g",
    "+- A: b\n  # c  # f.py:1 in g",
    "+- B: L['x'].size()[0] == 1)\u00a0# y = x  # a.py:3 in f",  # (any whitespace before a `# `, as `\\s`)
    "+- C: x\u2003# y\x85# a.py:4 in f",
    # (a line ending in `)` after whitespace; a `(` never closed before a later site; a `)` before the end)
    "+- D: x  # y  # f.py:1 in g (HINT: a)\x85 \t", "+- D: x  # y  # f.py:1 in g (x  # f.py:2 in h",
    "+- D: x  # y  # f.py:1 in g (HINT: a) b", "+- D: x  # y  # f.py:1 in g x)",
]


def _said(line: str):
    m = GUARD_LINE.search(line)
    return None if m is None else (m["guard"], m["code"], m["file"], m["line"], m["func"], m["hint"], m["note"])


def _read(line: str):
    found = _guard_line(line)
    if found is None:
        return None
    guard, code, m = found
    return guard, code, m["file"], m["line"], m["func"], m["hint"], m["note"]


def _tree_lines(log) -> set[str]:
    with read_trace(str(log)) as trace:
        return {line for entry in trace.compiles.values() for a in entry.artifacts
                if a.name == GUARDS_ARTIFACT and a.payload is not None
                for line in trace.payload_text(a.payload).splitlines()}


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_a_guard_lines_site_is_what_guard_line_finds(log):
    lines = _tree_lines(log)
    sites = [line for line in lines if _said(line) is not None]
    assert len(sites) >= 100  # (trees whose guards name their lines)
    assert [_read(line) for line in lines] == [_said(line) for line in lines]


def test_edge_lines_read_as_guard_line_reads_them():
    assert [_read(line) for line in EDGES] == [_said(line) for line in EDGES]
    assert sum(_said(line) is not None for line in EDGES) >= 5


def _hf_llama_sites() -> list:
    """The site of every line of hf_llama's guard trees that names one."""
    with read_trace(str(torch213("hf_llama.log.gz"))) as trace:
        trees = GuardTrees(trace)
        return [line.site for entry in trace.compiles.values() for a in entry.artifacts
                if a.name == GUARDS_ARTIFACT and a.payload is not None
                for line in trees.of(a.payload).lines if line.site is not None]


def test_the_guard_trees_are_read_without_guard_lines_lazy_groups(monkeypatch):
    """GUARD_LINE tried the rest of its pattern at each character of a guard line: most of reading a tree."""
    asked = []
    GUARD_LINE.search("")  # (compiled: its search is the pattern's own, replaced below)
    search = GUARD_LINE.search
    monkeypatch.setattr(GUARD_LINE, "search", lambda *args: asked.append(args) or search(*args))
    sites = _hf_llama_sites()
    assert len(sites) >= 100 and not asked
    assert installed_guards.guard_site_of(EDGES[1]) is not None and len(asked) == 0


def test_a_sites_tail_is_matched_once(monkeypatch):
    """The tail (`# path:N in fn (HINT: ...)`) was searched for to filter the lines, then matched again at the same
    `# ` for its groups: the search's match is the site's on every line of these trees."""
    asked: list[tuple] = []
    for tail in (installed_guards._SITE_TAIL, installed_guards._UNCLOSED_SITE_TAIL):
        tail.match("")  # (compiled: its match is the pattern's own, replaced below)
        monkeypatch.setattr(tail, "match", lambda *args, match=tail.match: asked.append(args) or match(*args))
    sites = _hf_llama_sites()
    assert len(sites) >= 100 and not asked


# A line of an untrusted log repeating a site's tail with its `(` never closed: _SITE_TAIL's two `.*` each ran to the
# line's end and back from every `# ` of it (a 200 KB line in a guard tree made a report 10-16x slower).
HOSTILE = "+- A: x  # c" + "  # f.py:1 in g (" * (200_000 // 17)


@pytest.mark.parametrize("end, site", [("", None), ("  # f.py:2 in h", ("f.py", 2, "h")),
                                       ("  # f.py:2 in h (HINT: x", None), ("  # f.py:2 in h x) y", None)])
def test_a_line_not_ending_in_a_parenthesis_is_not_searched_with_the_parenthesised_tail(monkeypatch, end, site):
    """A line whose end (past whitespace) is no `)` cannot match the tail's `(HINT: ...)` or `(note)`: it is read
    with the tail without them, which has no `.*` to run to the line's end from each `# `. Counted: the tail with
    them is never asked, and the site read is the one GUARD_LINE finds."""
    asked = []
    installed_guards._SITE_TAIL.search("")  # (compiled: its methods are the pattern's own, replaced below)
    for method in ("search", "match"):
        monkeypatch.setattr(installed_guards._SITE_TAIL, method,
                            lambda *args, method=method: asked.append(method) or pytest.fail("asked"))
    line = HOSTILE + end
    found = installed_guards.guard_site_of(line)
    assert (found and (found.path, found.line, found.function, found.hint, found.first_use)) == \
        (site and (*site, None, False))
    assert not asked
    if site is not None:  # (the guard and the code as GUARD_LINE reads them, on a line it reads without backtracking)
        assert (found.guard, found.code) == ("A: x", line[len("+- A: x  # "):line.rindex("  # f.py:2")])
