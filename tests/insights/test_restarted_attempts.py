"""Tables that describe a compilation say it by compilation, as the recompile steps do ("[1/0]"), not by the attempt
that compiled it after Dynamo restarted it ("[1/0_1]"); their links lead to that attempt."""

from __future__ import annotations

import html
import re

from ..conftest import run_cli, shared

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


def test_a_restarted_attempts_cache_row_is_told_apart_from_the_attempt_that_compiled(tmp_path, capsys):
    # regional_dynamic (tests/data/torch213/README.md): [0/0] missed the AOTAutograd cache, then Dynamo restarted it
    # (TensorifyScalarRestartAnalysis) and [0/0_1] compiled the frame, missing both caches. By compilation alone both
    # rows would read [0/0]; the restarted one says which attempt it was.
    from ..conftest import torch213

    log = torch213("regional_dynamic.log.gz")
    assert run_cli(log, "-o", tmp_path / "r", "--no-browser") == 0
    page = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    table = page[page.index('<table class="caches">'):]
    table = html.unescape(table[:table.index("</table>")])
    rows = re.findall(r'<tr><td><a [^>]*href="#([^"]+)"[^>]*>([^<]*)</a></td>', table)
    assert rows == [("[0/0]", "[0/0] first try, restarted"), ("[0/0_1]", "[0/0]")]
    capsys.readouterr()
    assert run_cli("summary", log) == 0
    shown = capsys.readouterr().out
    caches = shown[shown.index("compile id   "):shown.index("Dynamic shapes (")]  # (the table)
    assert re.search(r"^\[0/0\] first try, restarted +- +miss", caches, re.M)
    assert re.search(r"^\[0/0\] +miss +miss", caches, re.M) and "[0/0_1]" not in caches
