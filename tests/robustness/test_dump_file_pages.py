"""Dumped source files whose names have the same safe file name each get their own page.

Page names go through safe_stem (model/names.py), so "a/b.py" and "a_b.py" (or "x y.py" and
"x?y.py") map to the same file. Each name must still keep its page, and every link to it
(compile page, index list, stack frames, compile_directory.json) go to the right one.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import subprocess

from compilescope.model.dump_pages import dump_page_names

from ..conftest import report, tlparse_binary
from ..tracelog import cid, envelope

# name -> the page it must get: tlparse's name unless another name has it too; then the name that is
# already its own safe name keeps it and the others get the first 8 hex digits of their name's SHA-1.
NAMES = ["a/b.py", "a_b.py", "x y.py", "x?y.py", "solo.py"]


def sha8(name: str) -> str:
    return hashlib.sha1(name.encode()).hexdigest()[:8]


EXPECTED = {
    "a/b.py": f"a_b.py_{sha8('a/b.py')}.html",
    "a_b.py": "a_b.py.html",
    "x y.py": f"x_y.py_{sha8('x y.py')}.html",
    "x?y.py": f"x_y.py_{sha8('x?y.py')}.html",
    "solo.py": "solo.py.html",
}


def colliding_log(path):
    text = "".join(envelope({"str": [name, i]}) for i, name in enumerate(NAMES))
    # Stack frames in a/b.py (line 2) and a_b.py (line 3): they link into the dumped sources.
    text += envelope({"dynamo_start": {"stack": [{"filename": 0, "line": 2, "name": "f"},
                                                 {"filename": 1, "line": 3, "name": "g"}]}, **cid(0)})
    for i, name in enumerate(NAMES):
        text += envelope({"dump_file": {"name": name}, **cid(0)}, f"# dumped {name}\ndef source_{i}():\n    return {i}")
    text += envelope({"compilation_metrics": {"graph_op_count": 1, "restart_reasons": []}, **cid(0)})
    path.write_text(text)
    return path


def links(page: str) -> list[tuple[str, str]]:
    """(href, text) of every link to a dumped source on a page; a stack frame's is its file's name and line, its title
    the logged path and where the link goes: (href, "path:line") for those."""
    found = []
    for href, title, text in re.findall(r'<a href="([^"]*dump_file/[^"]*)"(?: title="([^"]*)")?>([^<]*)</a>', page):
        text = html.unescape(text)
        if title and ":" in text:  # `b.py:2` titled `a/b.py: this line of ...`: the frame as logged
            path, where = html.unescape(title).split(": ", 1)
            assert where == "this line of its source as torch dumped it into the log"
            text = f"{path}:{text.rsplit(':', 1)[1]}"
        found.append((href, text))
    return found


def test_every_name_has_its_own_page_with_its_own_source(tmp_path):
    directory = report(colliding_log(tmp_path / "t.log"), tmp_path / "out")
    pages = tmp_path / "out" / "dump_file"
    assert sorted(p.name for p in pages.iterdir()) == sorted(EXPECTED.values())
    for i, name in enumerate(NAMES):
        text = (pages / EXPECTED[name]).read_text()
        assert f"source_{i}" in text and html.escape(f"dumped {name}") in text
        assert all(f"source_{j}" not in text for j in range(len(NAMES)) if j != i)
    # compile_directory.json: the dumped files in log order, each with its own page.
    artifacts = [a for a in directory["[0/0]"]["artifacts"] if a["url"].startswith("dump_file/")]
    assert [a["url"] for a in artifacts] == [f"dump_file/{EXPECTED[n]}" for n in NAMES]
    assert [a["name"] for a in artifacts] == [EXPECTED[n] for n in NAMES]


def test_links_on_the_index_and_the_compile_page_go_to_the_right_page(tmp_path):
    report(colliding_log(tmp_path / "t.log"), tmp_path / "out")
    index = (tmp_path / "out" / "index.html").read_text()
    compile_page = (tmp_path / "out" / "-_0_0_0" / "index.html").read_text()
    # The index lists every dumped source by its name.
    listed = {text: href for href, text in links(index) if text in NAMES}
    assert listed == {name: f"dump_file/{page}" for name, page in EXPECTED.items()}
    # The compile page links each dumped-source artifact (shown by its page's file name).
    assert [href for href, text in links(compile_page) if not text.endswith((":2", ":3"))] == [
        f"../dump_file/{EXPECTED[n]}" for n in NAMES]
    # The stack frame in a/b.py links to the line in its own dumped file, on both pages. The one in a_b.py is the
    # frame Dynamo compiled, so the report has a source page for a_b.py (what torch.compile did to each line): a frame
    # links there, at its line, where a page does (render/options.py: line_link), and to a dumped file only where none
    # does.
    for page, root, written in ((index, "", tmp_path / "out"), (compile_page, "../", tmp_path / "out" / "-_0_0_0")):
        frames = {text: href for href, text in links(page) if text.endswith((":2", ":3"))}
        assert frames == {"a/b.py:2": f"{root}dump_file/{EXPECTED['a/b.py']}#L2"}
        source = re.findall(r'<a href="([^"]*sources/[^"]*)" title="a_b\.py: what torch\.compile did to this line">'
                            r'a_b\.py:3</a>', page)
        assert source and {href.split("#")[1] for href in source} == {"L3"}
        assert all('id="L3"' in (written / href.split("#")[0]).read_text() for href in source)


def test_safe_names_keep_tlparses_page(tmp_path):
    # tlparse writes the raw name (dump_file/a/b.py.html, dump_file/x?y.py.html), which we never do
    # (model/names.py safe_stem). A name that is already safe gets tlparse's page, with the same source.
    log = colliding_log(tmp_path / "t.log")
    report(log, tmp_path / "out")
    subprocess.run([tlparse_binary(), str(log), "-o", str(tmp_path / "tl"), "--no-browser"], check=True,
                   capture_output=True)
    tl_urls = [a["url"] for a in json.loads((tmp_path / "tl" / "compile_directory.json").read_text())["[0/0]"]["artifacts"]]
    for i, name in ((1, "a_b.py"), (4, "solo.py")):
        assert f"dump_file/{EXPECTED[name]}" in tl_urls
        for out in ("tl", "out"):
            assert f"source_{i}" in (tmp_path / out / "dump_file" / EXPECTED[name]).read_text()


def test_pages_depend_only_on_the_set_of_names():
    assert dump_page_names(NAMES) == EXPECTED
    assert dump_page_names(reversed(NAMES)) == EXPECTED
    assert dump_page_names(NAMES + NAMES) == EXPECTED
    # Alone, a name keeps tlparse's page, whatever it is.
    assert dump_page_names(["a/b.py"]) == {"a/b.py": "a_b.py.html"}
    assert dump_page_names(["<eval_with_key>.3"]) == {"<eval_with_key>.3": "eval_with_key_3.html"}


def test_a_hashed_page_never_lands_on_another_names_page():
    # A third name is literally the hashed page "a/b.py" would get: "a/b.py" takes a longer hash.
    squatter = f"a_b.py_{sha8('a/b.py')}"
    pages = dump_page_names(["a/b.py", "a_b.py", squatter])
    assert pages[squatter] == f"{squatter}.html" and pages["a_b.py"] == "a_b.py.html"
    assert pages["a/b.py"] == f"a_b.py_{hashlib.sha1(b'a/b.py').hexdigest()[:12]}.html"
    assert len(set(pages.values())) == 3


def test_eval_with_key_names_that_collide_are_both_hashed():
    # Neither is its own safe name, so neither keeps eval_with_key_3.html (no name is favoured).
    names = ["<eval_with_key>.3", "other <eval_with_key>.3"]
    pages = dump_page_names(names)
    assert pages == {n: f"eval_with_key_3_{sha8(n)}.html" for n in names}
