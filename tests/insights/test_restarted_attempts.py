"""Tables that describe a compilation say it by compilation, as the recompile steps do ("[1/0]"), not by the attempt
that compiled it after Dynamo restarted it ("[1/0_1]"); their links lead to that attempt."""

from __future__ import annotations

import gzip
import html
import json
import re
from pathlib import Path

import pytest

from ..conftest import cuda211, run_cli, shared, torch213

GPT2_TRAIN = "gpu-torch211/gpt2_train/dedicated_log_torch_trace_7r9zxwnl.log"


def test_the_caches_table_names_compilations_linking_the_attempt_that_made_the_lookups(tmp_path, capsys):
    # gpt2_train: [1/0] and [1/1] restarted at a graph break; [1/0_1] and [1/1_1] compiled them and made the cache
    # lookups (each attempt 0 logged none); [3/0] and [3/1] compiled without a restart. The caches table named the attempts, where the recompiles say [1/0], [1/1].
    log = shared(GPT2_TRAIN)
    text = log.read_text(encoding="utf-8")
    looked_up = {(m[1], m[2], m[3]) for m in re.finditer(
        r'"name": "(?:fx_graph|aotautograd)_cache_\w+".*"frame_id": (\d+), "frame_compile_id": (\d+), "attempt": (\d+)', text)}
    assert looked_up == {("1", "0", "1"), ("1", "1", "1"), ("3", "0", "0"), ("3", "1", "0")}  # ([3/*]: no restart)

    assert run_cli(log, "-o", tmp_path / "r", "--no-browser") == 0
    page = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    table = page[page.index('<table class="caches">'):]
    table = table[:table.index("</table>")]
    rows = re.findall(r'<tr><td><a [^>]*href="#([^"]+)"[^>]*>([^<]*)</a></td>', table)
    assert rows == [("[1/0_1]", "[1/0]"), ("[1/1_1]", "[1/1]"), ("[3/0]", "[3/0]"), ("[3/1]", "[3/1]")]
    anchors = set(re.findall(r'\bid="([^"]+)"', page))
    assert all(target in anchors for target, _ in rows)

    capsys.readouterr()
    assert run_cli("summary", log) == 0
    shown = capsys.readouterr().out
    caches = shown[shown.index("Caches ("):]
    assert re.search(r"^\[1/0\] +forward miss", caches, re.M) and "[1/0_1]" not in caches.split("\n\n")[0]


def _cache_rows(page: str) -> list[tuple[str, str]]:
    """The report's caches table: (the attempt each row links, its label)."""
    table = page[page.index('<table class="caches">'):]
    table = html.unescape(table[:table.index("</table>")])
    return re.findall(r'<tr><td><a [^>]*href="#([^"]+)"[^>]*>([^<]*)</a></td>', table)


def _terminal_table(shown: str) -> list[str]:
    """The summary's caches table, its lines (header and rule first)."""
    caches = shown[shown.index("Caches ("):]
    caches = caches[caches.index("compile id   "):]
    return caches[:caches.index("\n\n")].split("\n")[:caches.count("\n") + 1]


def test_a_restarted_attempts_cache_row_is_told_apart_from_the_attempt_that_compiled(tmp_path, capsys):
    # regional_dynamic (tests/data/torch213/README.md): [0/0] missed the AOTAutograd cache, then Dynamo restarted it
    # (TensorifyScalarRestartAnalysis) and [0/0_1] compiled the frame, missing both caches. By compilation alone both
    # rows would read [0/0]; the restarted one says which attempt it was, short enough that the terminal's column
    # holds it on one line at 80 columns ("[0/0]'s first attempt, not kept" wrapped "kept" onto a line of its own,
    # which read like a row). --json gives each row the label the table shows.
    log = torch213("regional_dynamic.log.gz")
    assert run_cli(log, "-o", tmp_path / "r", "--no-browser") == 0
    rows = _cache_rows((tmp_path / "r" / "index.html").read_text(encoding="utf-8"))
    assert rows == [("[0/0]", "[0/0] first try, restarted"), ("[0/0_1]", "[0/0]")]
    capsys.readouterr()
    assert run_cli("summary", log) == 0
    table = _terminal_table(capsys.readouterr().out)
    assert len(table) == 4 and max(map(len, table)) <= 80, table  # (header, rule, one line a row)
    assert re.match(r"^\[0/0\] first try, restarted +- +miss *$", table[2])
    assert re.match(r"^\[0/0\] +miss +miss *$", table[3])
    assert run_cli("summary", "--json", log) == 0
    compiles = json.loads(capsys.readouterr().out)["caches"]["compiles"]
    assert [(c["compile_id"], c["label"]) for c in compiles] == [("[0/0]", "[0/0] first try, restarted"), ("[0/0_1]", "[0/0]")]


def test_a_restarted_attempt_whose_lookups_hit_is_told_apart_too(tmp_path, capsys):
    # regional_dynamic with [0/0]'s (attempt 0's) AOTAutograd lookup made a hit, and an FX graph cache hit beside it
    # (the same payload): the attempt Dynamo restarted missed nothing and logged an FX graph lookup, and its row read
    # "[0/0]" as the attempt that compiled the frame does: the label was chosen by what its lookups did, not by the
    # attempt's status.
    lines = gzip.decompress(torch213("regional_dynamic.log.gz").read_bytes()).decode("utf-8").split("\n")
    [at] = [i for i, line in enumerate(lines) if '"name": "aotautograd_cache_miss"' in line and '"attempt": 0,' in line]
    assert lines[at + 1].startswith("\t") and not lines[at + 2].startswith("\t")  # (its payload: one line)
    hit = lines[at].replace("aotautograd_cache_miss", "aotautograd_cache_hit")
    lines[at:at + 2] = [hit, lines[at + 1], hit.replace("aotautograd_cache_hit", "fx_graph_cache_hit"), lines[at + 1]]
    log = tmp_path / "restarted_hit.log"
    log.write_text("\n".join(lines), encoding="utf-8")
    assert run_cli(log, "-o", tmp_path / "r", "--no-browser") == 0
    rows = _cache_rows((tmp_path / "r" / "index.html").read_text(encoding="utf-8"))
    assert rows == [("[0/0]", "[0/0] first try, restarted"), ("[0/0_1]", "[0/0]")]


_COMPILE_ID = re.compile(r"\[!?[\d-]+/[\d-]+(?:_\d+)?\]")


@pytest.mark.parametrize("log", [
    # [0/0_1] and [0/1_1] bypassed the AOTAutograd cache: the reason's footnote named them, the rows [0/0], [0/1]
    torch213("stance_deploy_warm.log.gz"),
    # the prose named [0/0], "an attempt Dynamo restarted (it compiled the frame again as [0/0_1])"
    torch213("regional_dynamic.log.gz"),
    # likewise [2/1] and [2/1_1] (CUDA)
    cuda211("compiled_optimizer.log.gz"),
], ids=lambda log: Path(log).name.split(".")[0])
def test_the_caches_prose_and_footnotes_name_only_what_the_rows_show(log, tmp_path, capsys):
    assert run_cli(log, "-o", tmp_path / "r", "--no-browser") == 0
    page = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    shown = {cid for _, label in _cache_rows(page) for cid in _COMPILE_ID.findall(label)}
    section = page[page.index('id="caches-overall"'):]
    section = html.unescape(re.sub(r"<[^>]+>", "", section[:section.index("</ol>") if "</ol>" in section[:section.index(
        "Dynamic shapes")] else section.index("</table>")]))
    named = set(_COMPILE_ID.findall(section))
    assert named and named <= shown, (named - shown, shown)
    capsys.readouterr()
    assert run_cli("summary", log) == 0
    out = capsys.readouterr().out
    caches = out[out.index("Caches ("):]
    lines = caches[:caches.index("\n\n")].split("\n")
    header = next(i for i, line in enumerate(lines) if line.startswith("compile id   "))
    rows = lines[header + 2:header + 2 + len(_cache_rows(page))]  # (the footnotes follow the table's rows)
    assert [re.split(r"\s{2,}", row)[0] for row in rows] == [label for _, label in _cache_rows(page)]
    said = "\n".join(lines[:header] + lines[header + 2 + len(rows):])  # (the prose, the footnotes and notes)
    assert set(_COMPILE_ID.findall(said)) <= shown
