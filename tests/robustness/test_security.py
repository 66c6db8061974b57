"""A report of a hostile log is safe to write and to open.

- nothing is written outside -o, whatever the log names its artifacts, dumps and kernels;
- every file name is safe (no separators, no "..", no device names, bounded length);
- every string from the log is escaped in HTML, no page runs any script but report.js;
- a symbolic link planted in the output directory is never followed; an existing
  directory is only replaced with --overwrite, and never one holding the input.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compilescope.output import OutputDir
from compilescope.errors import CompilescopeError
from compilescope.model.names import MAX_STEM, safe_stem
from compilescope.model.trace import dump_file_name
from compilescope.render.options import safe_link_url

from ..conftest import peer, run_cli, torch213
from .corpus import XSS, hostile_log

DEVICES = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(10)), *(f"LPT{i}" for i in range(10))}
SAFE_NAME = re.compile(r"^[A-Za-z0-9_+\-][A-Za-z0-9._+\-]*$")
_ASSETS = resources.files("compilescope.render.html").joinpath("assets")
REPORT_JS = _ASSETS.joinpath("report.js").read_text("utf-8")


def _scripts(folder) -> set[str]:
    """Every .js the report ships (assets/ and assets/vendor/...)."""
    found = set()
    for p in folder.iterdir():
        if p.is_dir():
            found |= _scripts(p)
        elif p.name.endswith(".js"):
            found.add(p.read_text("utf-8"))
    return found


ASSET_SCRIPTS = _scripts(_ASSETS)


def csp_hash(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode() + "'"


def snapshot(root: Path) -> dict[str, tuple[int, float]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime) for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory):
    """The hostile log, reported into a directory nested deep enough that ../../.. stays in the sandbox."""
    sandbox = tmp_path_factory.mktemp("sandbox")
    log = hostile_log(sandbox)
    out = sandbox / "a" / "b" / "c" / "out"
    before = snapshot(sandbox)
    escapes_before = set(Path("/tmp").glob("compilescope_escape*"))
    assert run_cli(log, "-o", out, "--no-browser") == 0
    return sandbox, log, out, before, escapes_before


def test_nothing_written_outside_the_output_directory(hostile_report):
    sandbox, log, out, before, escapes_before = hostile_report
    after = snapshot(sandbox)
    outside = {p: v for p, v in after.items() if not p.startswith(str(out) + os.sep)}
    assert outside == before, "files outside -o were created or changed"
    assert set(Path("/tmp").glob("compilescope_escape*")) == escapes_before
    for path in out.rglob("*"):
        assert os.path.realpath(path).startswith(os.path.realpath(out) + os.sep)
        assert not path.is_symlink()


def test_every_file_name_is_safe(hostile_report):
    _, _, out, _, _ = hostile_report
    names = [p.relative_to(out) for p in out.rglob("*")]
    assert len(names) > 20
    for rel in names:
        for part in rel.parts:
            assert SAFE_NAME.match(part), part
            assert len(part.encode()) <= 200, part
            assert part.split(".")[0].upper() not in DEVICES, part


class _Page(HTMLParser):
    """Everything on a page that could run script or make a request."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.scripts: list[str] = []
        self.script_types: list[str] = []
        self.handlers: list[tuple[str, str]] = []
        self.urls: list[tuple[str, str]] = []
        self.tags: set[str] = set()
        self.csp: str | None = None
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        for name, value in attrs:
            if name.startswith("on"):
                self.handlers.append((tag, name))
            if name in ("href", "src", "action", "formaction", "srcdoc", "data", "xlink:href"):
                self.urls.append((tag, value or ""))
        if tag == "meta" and dict(attrs).get("http-equiv") == "Content-Security-Policy":
            self.csp = dict(attrs)["content"]
        if tag == "script":
            self._in_script = True
            self.scripts.append("")
            self.script_types.append(dict(attrs).get("type") or "")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data


def test_log_strings_are_escaped_on_every_page(hostile_report):
    _, _, out, _, _ = hostile_report
    pages = list(out.rglob("*.html"))
    assert len(pages) > 10
    seen_evil = 0
    for page in pages:
        text = page.read_text()
        parsed = _Page()
        parsed.feed(text)
        assert REPORT_JS in parsed.scripts, page
        for script, kind in zip(parsed.scripts, parsed.script_types):
            if kind == "application/json":  # data island: nothing in it can end the element or open a comment
                assert "<" not in script and ">" not in script, page
                json.loads(script)
            else:  # code: only the report's own scripts, each allowed by its hash (nothing else can run)
                assert kind == "" and script in ASSET_SCRIPTS, f"{page}: a script that is not one of the report's"
                assert csp_hash(script) in parsed.csp, page
        assert parsed.handlers == [], f"{page}: {parsed.handlers}"
        assert not parsed.tags & {"img", "iframe", "object", "embed", "form", "base", "frame"}, page  # (svg: charts)
        for tag, url in parsed.urls:
            scheme = re.match(r"^\s*([a-zA-Z][a-zA-Z0-9+.\-]*):", url)
            assert scheme is None or scheme.group(1).lower() in ("http", "https"), f"{page}: {tag} {url!r}"
        assert "'unsafe-inline'" not in parsed.csp.split("script-src")[1].split(";")[0], page
        for xss in XSS[:4]:
            assert xss not in text, f"{page}: unescaped {xss!r}"
        seen_evil += text.count("window.__pwned")
    assert seen_evil > 50, "the hostile strings should be shown (escaped), not dropped"


def test_hostile_strings_are_shown_where_expected(hostile_report):
    _, _, out, _, _ = hostile_report
    index = (out / "index.html").read_text()
    compile_page = (out / "-_0_0_0" / "index.html").read_text()
    escaped = "&lt;script&gt;window.__pwned = &#34;script&#34;&lt;/script&gt;"
    assert escaped in index  # stack trie (frame names, file names from the str table), problems table
    assert escaped in compile_page
    # javascript: / data: links are shown as text; the http link stays a link.
    assert 'href="https://example.com/?q=&lt;script&gt;"' in compile_page
    assert "javascript:window.__pwned=&#39;link&#39;</span>" in compile_page
    assert 'href="java' not in compile_page and 'href="data:' not in compile_page


def test_json_and_text_outputs_keep_the_log_verbatim(hostile_report):
    """Non-HTML files are not escaped (they are data), and are never written as .html."""
    _, _, out, _, _ = hostile_report
    texts = [p for p in out.rglob("*") if p.suffix in (".txt", ".json", ".jsonl")]
    assert any(XSS[0] in p.read_text() for p in texts)
    for p in out.rglob("*"):
        if p.is_file() and p.suffix not in (".txt", ".json", ".jsonl", ".log"):
            assert p.suffix == ".html"


def test_traversal_names_inside_output_even_without_deep_nesting(tmp_path):
    """-o directly under a directory with other files: ../ names must not touch them."""
    log = hostile_log(tmp_path)
    (tmp_path / "compilescope_escape").write_text("mine")
    before = snapshot(tmp_path)
    assert run_cli(log, "-o", tmp_path / "out", "--no-browser") == 0
    after = snapshot(tmp_path)
    assert {p: v for p, v in after.items() if not p.startswith(str(tmp_path / "out") + os.sep)} == before


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=500) | st.sampled_from(["..", ".", "", "/", "CON", "con.txt", "NUL.tar.gz", "COM1", "../x", "x" * 1000]))
def test_safe_stem_property(name):
    stem = safe_stem(name)
    assert SAFE_NAME.match(stem), stem
    assert ".." not in stem and "/" not in stem and "\\" not in stem
    assert len(stem) <= MAX_STEM
    assert stem.split(".")[0].upper() not in DEVICES
    page = dump_file_name(name)
    assert SAFE_NAME.match(page) and len(page) <= MAX_STEM + 5


def test_dump_file_eval_with_key_number_is_bounded():
    assert dump_file_name("<eval_with_key>.3") == "eval_with_key_3.html"
    assert len(dump_file_name("<eval_with_key>." + "9" * 5000)) <= MAX_STEM + 5


@pytest.mark.parametrize("url, safe", [
    ("https://example.com/x", True),
    ("http://example.com", True),
    ("HTTPS://EXAMPLE.COM", True),
    ("javascript:alert(1)", False),
    ("JavaScript:alert(1)", False),
    (" javascript:alert(1)", False),
    ("java\tscript:alert(1)", False),
    ("java\nscript:alert(1)", False),
    ("\x00javascript:alert(1)", False),
    ("data:text/html,<script>", False),
    ("vbscript:x", False),
    ("file:///etc/passwd", False),
    ("//evil.example/x", False),
    ("../../etc/passwd", False),
    ("", False),
    ("https://example.com/\x00", False),
])
def test_link_urls(url, safe):
    assert (safe_link_url(url) == url) is safe


# -- the output directory -------------------------------------------------------------------------


def test_symlinks_planted_in_existing_output_are_not_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "x.txt").write_text("precious")
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(victim, out / "-_0_0_0")
    os.symlink(victim / "x.txt", out / "index.html")
    assert run_cli(torch213("graph_breaks.log"), "-o", out, "--no-browser") == 2  # not empty: refused
    assert run_cli(torch213("graph_breaks.log"), "-o", out, "--no-browser", "--overwrite") == 0
    assert sorted(p.name for p in victim.iterdir()) == ["x.txt"]
    assert (victim / "x.txt").read_text() == "precious"
    assert not (out / "index.html").is_symlink() and not (out / "-_0_0_0").is_symlink()


def test_symlink_appearing_during_the_write_is_refused(tmp_path):
    """Planted after the directory was prepared (a race): the write fails with one line, nothing followed."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "x.txt").write_text("precious")
    output = OutputDir(str(tmp_path / "out"), overwrite=False)
    os.symlink(victim / "x.txt", tmp_path / "out" / "index.html")
    os.symlink(victim, tmp_path / "out" / "sub")
    with pytest.raises(CompilescopeError, match="cannot write"):
        output.write("index.html", "<p>report</p>")
    with pytest.raises(CompilescopeError, match="symbolic link"):
        output.write("sub/page.html", "<p>report</p>")
    assert (victim / "x.txt").read_text() == "precious"
    assert [p.name for p in victim.iterdir()] == ["x.txt"]


def test_writes_write_everything(tmp_path):
    from compilescope import output as output_module

    output = OutputDir(str(tmp_path / "out"), overwrite=False)
    big = [b"x" * (1 << 20)] * ((output_module.BIG_PAGE >> 20) + 2)
    for i in range(200):
        output.write(f"p/{i}.html", f"<p>{i}</p>")
    output.write("big.txt", iter(big))
    output.write("chunks.txt", (b"%d," % i for i in range(1000)))
    page = "é" * (output_module.BIG_PAGE + 5)  # encoded a piece at a time: the same bytes as one encode
    output.write("big.html", page)
    assert output.files == 203
    assert all((tmp_path / "out" / "p" / f"{i}.html").read_text() == f"<p>{i}</p>" for i in range(200))
    assert (tmp_path / "out" / "big.txt").stat().st_size == sum(map(len, big))
    assert (tmp_path / "out" / "chunks.txt").read_bytes() == b"".join(b"%d," % i for i in range(1000))
    assert (tmp_path / "out" / "big.html").read_bytes() == page.encode()
    # (the mark of an output not finished yet, output.WRITING_MARK, is no file of the report's)
    assert output.bytes == sum(p.stat().st_size for p in (tmp_path / "out").rglob("*")
                               if p.is_file() and p.name != output_module.WRITING_MARK)


@pytest.mark.parametrize("relpath", ["../x", "/tmp/x", "a/../../x", "a//b", "./x", "a\\..\\..\\x", "x\0y", ""])
def test_output_refuses_paths_that_leave_it(tmp_path, relpath):
    output = OutputDir(str(tmp_path / "out"), overwrite=False)
    with pytest.raises(CompilescopeError):
        output.write(relpath, "x")
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_output_that_is_a_file_or_under_a_file(tmp_path, capsys):
    (tmp_path / "afile").write_text("keep")
    log = torch213("graph_breaks.log")
    assert run_cli(log, "-o", tmp_path / "afile", "--no-browser", "--overwrite") == 2
    assert run_cli(log, "-o", tmp_path / "afile" / "out", "--no-browser") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"compilescope: error: {tmp_path / 'afile'} exists and is not a directory",
                   f"compilescope: error: cannot create output directory {tmp_path / 'afile' / 'out'}: Not a directory"]
    assert (tmp_path / "afile").read_text() == "keep"


def test_output_that_is_a_symlink_is_refused_but_a_symlinked_parent_is_the_users_choice(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "link")
    log = torch213("graph_breaks.log")
    assert run_cli(log, "-o", tmp_path / "link", "--no-browser", "--overwrite") == 2
    assert list(real.iterdir()) == []
    # A path the user typed through a symlinked directory (like /tmp on macOS) is followed as typed.
    assert run_cli(log, "-o", tmp_path / "link" / "out", "--no-browser") == 0
    assert (real / "out" / "index.html").is_file()


def test_existing_directory_needs_overwrite_and_never_loses_the_input(tmp_path, monkeypatch, capsys):
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "dedicated_log_torch_trace_x.log"
    log.write_bytes(torch213("graph_breaks.log").read_bytes())
    assert run_cli(logs, "-o", logs, "--no-browser") == 2
    assert run_cli(logs, "-o", logs, "--no-browser", "--overwrite") == 2
    assert run_cli(log, "-o", tmp_path, "--no-browser", "--overwrite") == 2
    monkeypatch.chdir(logs)
    assert run_cli(torch213("graph_breaks.log"), "-o", tmp_path, "--no-browser", "--overwrite") == 2
    err = capsys.readouterr().err
    assert "contains the log being read" in err and "contains the current directory" in err
    assert log.is_file()


def test_custom_header_is_trusted_on_the_index_only(tmp_path):
    """--custom-header-html is the user's own HTML (it may carry script); log pages stay locked down."""
    out = tmp_path / "out"
    assert run_cli(torch213("graph_breaks.log"), "-o", out, "--no-browser",
                   "--custom-header-html", "<script>var team = 1;</script><b>Team</b>") == 0
    index = _Page()
    index.feed((out / "index.html").read_text())
    assert "var team = 1;" in index.scripts and "'unsafe-inline'" in index.csp
    compile_page = _Page()
    compile_page.feed((out / "-_0_0_0" / "index.html").read_text())
    assert "'unsafe-inline'" not in compile_page.csp.split("script-src")[1].split(";")[0]


def _allows_inline_script(page_file) -> bool:
    page = _Page()
    page.feed(page_file.read_text())
    return "'unsafe-inline'" in page.csp.split("script-src")[1].split(";")[0]


HEADER = ["--custom-header-html", "<script>var team = 1;</script><b>Team</b>"]


def test_custom_header_script_runs_on_every_landing_page(tmp_path):
    """One rule for every page family that shows the header: index, export index, batch and multi-rank pages."""
    assert run_cli(torch213("export_draft.log"), "-o", tmp_path / "export", "--no-browser", *HEADER) == 0
    assert _allows_inline_script(tmp_path / "export" / "index.html")  # the Draft Export Report
    assert run_cli(torch213("graph_breaks.log"), torch213("recompiles.log"), "-o", tmp_path / "batch", "--no-browser",
                   "-j", "1", *HEADER) == 0
    assert _allows_inline_script(tmp_path / "batch" / "index.html")
    assert run_cli(peer("multi_rank_logs"), "-o", tmp_path / "ranks", "--no-browser", "-j", "1", *HEADER) == 0
    assert _allows_inline_script(tmp_path / "ranks" / "index.html")
    assert "var team = 1;" in (tmp_path / "ranks" / "index.html").read_text()
    # and the pages of the logs' content stay locked down
    assert not _allows_inline_script(tmp_path / "batch" / "graph_breaks" / "-_0_0_0" / "index.html")


def test_without_a_header_no_page_allows_inline_script(tmp_path):
    assert run_cli(torch213("export_draft.log"), "-o", tmp_path / "export", "--no-browser") == 0
    assert not any(_allows_inline_script(p) for p in (tmp_path / "export").rglob("*.html"))


def test_a_line_number_far_past_any_file_is_bounded(tmp_path):
    # A log is untrusted: one naming line 10**9 of a user file (here graph_breaks.log with its line 23 renumbered)
    # made the rebuilt source a list of 10**9 lines, gigabytes, before a page was written.
    text = torch213("graph_breaks.log").read_text()
    assert '"line": 23,' in text
    hostile = tmp_path / "far.log"
    hostile.write_text(text.replace('"line": 23,', '"line": 999999999,').replace("graph_breaks.py:23", "graph_breaks.py:999999999"))
    assert run_cli(hostile, "-o", tmp_path / "out", "--no-browser") == 0
    (page,) = (tmp_path / "out" / "sources").glob("graph_breaks.py_*.html")
    assert page.stat().st_size < 8 * 2**20
    shown = page.read_text()
    assert 'id="L18"' in shown  # the lines the log quotes are still there
    assert 'id="L999999999"' in shown  # and the far line too, after one gap: a file rebuilt from the log is sparse
