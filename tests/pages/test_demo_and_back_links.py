"""The demo's bundled traces are recordings of its own programs, each alone in its process; every report keeps
raw.log and links back to the page that lists it (the demo index, a batch's index)."""

import gzip
import re
from importlib import resources
from pathlib import Path

import pytest

from compilescope.demo import SCENARIOS, bundled_trace
from compilescope.ingest.reader import read_trace

from ..browser import browser_page
from ..conftest import run_cli, torch213

PROGRAMS = Path(str(resources.files("compilescope.demo").joinpath("programs")))


def _stacks(log: Path):
    with read_trace(str(log)) as trace:
        return [c.stack for c in trace.compiles.values() if c.stack], trace


def assert_recorded_from_its_program(name: str, log: Path) -> None:
    """Every stack starts at the program's own <module> (no compilescope frame before it, no other program's
    frames) and quotes the program's current source at each of its lines."""
    source = (PROGRAMS / f"{name}.py").read_text().splitlines()
    stacks, _ = _stacks(log)
    assert stacks, name
    for stack in stacks:
        assert stack[0].name == "<module>" and stack[0].filename.endswith(f"/demo/programs/{name}.py"), (name, stack[0])
        for frame in stack:
            if "/demo/programs/" in frame.filename:
                assert frame.filename.endswith(f"/demo/programs/{name}.py"), (name, frame)  # no other program's
                if frame.loc:
                    assert source[frame.line - 1].strip() == frame.loc.strip(), (name, frame)
            else:
                assert "/compilescope/" not in frame.filename, (name, frame)  # torch's frames only


def test_bundled_traces_are_recordings_of_the_demo_programs(tmp_path):
    for name, _ in SCENARIOS:
        with resources.as_file(bundled_trace(name)) as path:
            assert_recorded_from_its_program(name, Path(path))
    # The training program compiles with Inductor: generated code, provenance and cache lookups show.
    with resources.as_file(bundled_trace("training")) as path:
        text = gzip.open(path, "rt").read()
    assert '"inductor_output_code"' in text and "inductor_provenance_tracking_node_mappings" in text
    assert "fx_graph_cache_miss" in text and "aotautograd_cache_miss" in text


def test_demo_reports_keep_raw_log_and_link_back(tmp_path):
    out = tmp_path / "demo"
    assert run_cli("demo", "--bundled", "-o", out, "--no-browser") == 0
    for name, _ in SCENARIOS:
        with resources.as_file(bundled_trace(name)) as path:
            # A bundled trace is gzip: its copy stays compressed, byte for byte.
            assert (out / name / "raw.log.gz").read_bytes() == Path(path).read_bytes(), name
        for page in (out / name / "index.html", out / name / "failures_and_restarts.html",
                     next((out / name).glob("-_0_0_0/index.html"))):
            up = re.search(r'<a href="([^"]+)" id="up-link">', page.read_text())
            assert up, page
            assert (page.parent / up.group(1)).resolve() == (out / "index.html").resolve(), page
    assert "provenance" in {p.name for p in (out / "training").iterdir()}


@pytest.mark.browser
def test_back_links_in_the_browser(tmp_path):
    demo = tmp_path / "demo"
    assert run_cli("demo", "--bundled", "-o", demo, "--no-browser") == 0
    batch = tmp_path / "batch"
    assert run_cli(torch213("graph_breaks.log"), torch213("recompiles.log"), "-o", batch, "--no-browser") == 0
    with browser_page() as page:
        page.goto((demo / "graph_breaks" / "-_1_0_0" / "index.html").as_uri())
        page.click("#up-link")
        page.wait_for_load_state()
        assert page.url == (demo / "index.html").as_uri()
        assert "compilescope demo" in page.inner_text("h1")
        page.goto((batch / "recompiles" / "index.html").as_uri())
        page.click("#up-link")
        page.wait_for_load_state()
        assert page.url == (batch / "index.html").as_uri()
        assert page.console_errors == []


def test_a_single_report_has_no_back_link(tmp_path):
    out = tmp_path / "one"
    assert run_cli(torch213("graph_breaks.log"), "-o", out, "--no-browser") == 0
    assert 'id="up-link"' not in (out / "index.html").read_text()


def test_rank_reports_link_back_to_the_landing_page(tmp_path):
    from ..conftest import peer

    out = tmp_path / "ranks"
    assert run_cli(peer("multi_rank_logs"), "-o", out, "--no-browser") == 0
    ranks = sorted(out.glob("rank_*/index.html"))
    assert len(ranks) == 4
    for page in ranks:
        up = re.search(r'<a href="([^"]+)" id="up-link">&larr; all ranks</a>', page.read_text())
        assert up and (page.parent / up.group(1)).resolve() == (out / "index.html").resolve(), page
