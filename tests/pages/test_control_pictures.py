"""A log's C0 control characters (NUL, ESC, BEL...) and DEL reach a page as the Unicode Control Pictures (U+2400..,
U+2421): markupsafe escapes only &<>'", so a NUL went into the HTML as itself, which a browser shows as U+FFFD or
not at all. The files that copy the log (raw.log, payloads, .json) keep the bytes as they are."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st
from markupsafe import Markup

from compilescope.invisible import INVISIBLE_CLASS, LONG_TEXT, shown_in_html
from compilescope.render.html.env import ENV

from ..conftest import report, torch213, torch213_moved
from ..robustness.corpus import envelope_indices, fix_md5, lines_of

# What no page may hold: C0 controls but TAB, LF and CR, and DEL (as bytes of the UTF-8 file)
RAW_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def test_control_characters_of_a_log_are_shown_as_control_pictures(tmp_path):
    lines = lines_of(torch213("provenance.log").read_bytes())
    # The forward's output code (a text payload): its first line, "# AOT ID: ['0_forward']", with the raw bytes
    # appended. It is shown on the output code's page and in the provenance page's code panel.
    code = lines.index(b"\t# AOT ID: ['0_forward']\n")
    assert b'"inductor_output_code"' in lines[code - 1] and b"ctb54yohdujjubfbr6x4sypz56fqikgaojhwc5q5i7qc6tpkzacy" \
        in lines[code - 1]
    lines[code] = b"\t# AOT ID: ['0_forward'] NUL\x00 ESC\x1b[31m BEL\x07 DEL\x7f\n"
    fix_md5(lines, code - 1)
    # The forward's kernel stack traces (a JSON payload): the user line it quotes, with the controls as JSON escapes.
    # It is shown on the kernels' readable page.
    stacks = next(i for i in envelope_indices(lines) if b"inductor_provenance_tracking_kernel_stack_traces" in lines[i])
    quoted = b"return torch.relu(self.lin(x))\\n           ^"
    assert quoted in lines[stacks + 1]
    lines[stacks + 1] = lines[stacks + 1].replace(
        quoted, b"return torch.relu(self.lin(x))  # NUL\\u0000 ESC\\u001b[31m BEL\\u0007\\n           ^", 1)
    fix_md5(lines, stacks)
    log = tmp_path / "controls.log"
    log.write_bytes(b"".join(lines))

    out = tmp_path / "out"
    report(log, out)
    pages = {p: p.read_bytes() for p in out.rglob("*.html")}
    for page, data in pages.items():
        assert RAW_CONTROL.search(data) is None, (page, RAW_CONTROL.findall(data))
    texts = {p: data.decode("utf-8") for p, data in pages.items()}

    shown_code = "# AOT ID: [&#39;0_forward&#39;] NUL\u2400 ESC\u241b[31m BEL\u2407 DEL\u2421"
    (code_page,) = [t for p, t in texts.items() if p.name.startswith("inductor_output_code_ctb54yohdujjubfbr6x4sy")]
    assert shown_code in code_page
    (panels,) = [t for p, t in texts.items() if p.parent.name == "provenance"]
    assert shown_code in panels
    (readable,) = [t for p, t in texts.items() if p.name.startswith("inductor_provenance_tracking_kernel_stack_traces")
                   and p.name.endswith("_readable.html") and "NUL" in t]
    assert "return torch.relu(self.lin(x))  # NUL\u2400 ESC\u241b[31m BEL\u2407" in readable

    # Only what is shown changes: the log's copy keeps its bytes
    assert b"NUL\x00 ESC\x1b[31m BEL\x07 DEL\x7f" in (out / "raw.log").read_bytes()


_SHOWN_AS_ESCAPES = re.compile(f"[\\x80-\\x9f{INVISIBLE_CLASS}]")


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(alphabet=st.sampled_from("ab<&\t\n\r\x00\x01\x07\x0b\x0c\x1b\x1f\x7f\x85\u202e\u200b\u2400é"),
                         max_size=200),
                 st.text(alphabet=st.characters(max_codepoint=0x7f), max_size=200), st.text(max_size=200)))
def test_a_page_shows_each_control_character_as_its_picture(text):
    for sample in (text, text + " " * LONG_TEXT):  # (a long text is searched otherwise)
        shown = shown_in_html(sample)
        assert RAW_CONTROL.search(shown.encode("utf-8")) is None and _SHOWN_AS_ESCAPES.search(shown) is None
        if RAW_CONTROL.search(sample.encode("utf-8")) is None and _SHOWN_AS_ESCAPES.search(sample) is None:
            assert shown is sample  # nothing to show otherwise: the same str, not a copy
        # each control character as its picture, in its place; every other character as it was (or as \\uXXXX)
        pictured = "".join(chr(0x2421) if c == "\x7f" else chr(0x2400 + ord(c)) if c < " " and c not in "\t\n\r"
                           else c for c in sample)
        assert shown == _SHOWN_AS_ESCAPES.sub(lambda m: f"\\u{ord(m.group()):04x}", pictured)


def test_every_template_value_is_shown_so_markup_included():
    # finalize, the one place every value a template writes goes through: an escaped str and a renderer's Markup alike
    template = ENV.from_string("{{ text }}|{{ html }}")
    assert template.render(text="a\x00<b>", html=Markup("<i>\x1b[31m</i>")) == "a\u2400&lt;b&gt;|<i>\u241b[31m</i>"


def test_a_form_feed_in_source_and_code_is_whitespace_not_a_picture(tmp_path):
    """A form feed is whitespace in Python source (a page break, `^L`, on a line of its own as Emacs writes it): the
    source page shows that line as a blank, and a code page and the provenance page's code panel its text with a
    space, not ␌; the log's other values still show it as its picture (test above)."""
    program = torch213("module_state.log.gz").parents[1] / "programs" / "module_state.py"
    lines = program.read_text().splitlines()
    blank = lines.index("activations = []  # one entry per call: a list that grows while the compiled code runs") - 1
    assert lines[blank] == ""  # (a blank line between the model and the globals: the log quotes no blank line)
    lines[blank] = "\x0c"
    programs = tmp_path / "programs"
    programs.mkdir()
    (programs / program.name).write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    report(torch213_moved("module_state.log.gz", tmp_path, programs), out)
    (page,) = [p for p in (out / "sources").iterdir() if "module_state" in p.name]
    html = page.read_text()
    assert "\x0c" not in html and "\u240c" not in html
    assert f'<a class="ln" href="#L{blank + 1}">{blank + 1}</a><a class="lt" href="#L{blank + 1}" tabindex="-1"> </a>' \
        in html

    code_lines = lines_of(torch213("provenance.log").read_bytes())
    code = code_lines.index(b"\t# AOT ID: ['0_forward']\n")
    code_lines[code] = b"\t# AOT ID: ['0_forward']\x0cpage\n"
    fix_md5(code_lines, code - 1)
    log = tmp_path / "feed.log"
    log.write_bytes(b"".join(code_lines))
    report(log, tmp_path / "code")
    (code_page,) = [p for p in (tmp_path / "code").rglob("inductor_output_code_ctb54yohdujjubfbr6x4sy*.html")]
    assert "# AOT ID: [&#39;0_forward&#39;] page" in code_page.read_text()
    # The provenance page's code panel shows the same output code as its page does (no real log's output code holds
    # a form feed: this is provenance.log's forward with one inserted, as above)
    (panels,) = (tmp_path / "code" / "provenance").glob("*.html")
    shown = panels.read_text()
    assert "# AOT ID: [&#39;0_forward&#39;] page" in shown and "\u240c" not in shown

    # A kernel's user line, quoted from the kernel stack traces artifact, is code too (its line 24 with a form feed
    # for the space after `return`, written in the JSON as \f)
    traces = code_lines.index(next(line for line in code_lines if line.startswith(b'\t{"extern_kernels.addmm:1": ')))
    assert code_lines[traces].count(b"return torch.relu(self.lin(x))") == 2
    code_lines[traces] = code_lines[traces].replace(b"return torch.relu(self.lin(x))", b"return\\ftorch.relu(self.lin(x))")
    fix_md5(code_lines, traces - 1)
    log.write_bytes(b"".join(code_lines))
    report(log, tmp_path / "kernels")
    # The artifact's page of kernels shows each kernel's user line and the stack trace quoting it, both code
    pages = [p.read_text() for p in (tmp_path / "kernels").rglob("inductor_provenance_tracking_kernel_stack_traces_*.html")]
    assert len(pages) == 2 and all("<pre>    return torch.relu(self.lin(x))</pre>" in page for page in pages)
    assert not any("\u240c" in page or "\x0c" in page for page in pages)
