"""The progress bar: drawn on a terminal for a big log, never in a pipe."""

import io

from compilescope.cli.progress import SHOW_ABOVE_BYTES, read_progress
from compilescope.ingest.reader import ReadOptions, read_trace

from .conftest import peer


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_no_bar_in_a_pipe_or_for_a_small_log(tmp_path, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with read_progress(str(peer("simple.log")), FakeTerminal()) as progress:
        assert progress is None  # small
    big = tmp_path / "big.log"
    big.write_bytes(peer("cache_hit_miss.log").read_bytes() * (SHOW_ABOVE_BYTES // 700_000 + 1))
    with read_progress(str(big), io.StringIO()) as progress:
        assert progress is None  # not a terminal


def test_bar_on_a_terminal_for_a_big_log(tmp_path, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    big = tmp_path / "big.log"
    big.write_bytes(peer("cache_hit_miss.log").read_bytes() * (SHOW_ABOVE_BYTES // 700_000 + 1))
    terminal = FakeTerminal()
    seen = []
    with read_progress(str(big), terminal) as progress:
        assert progress is not None
        with read_trace(str(big), ReadOptions(progress=lambda done: (seen.append(done), progress(done)))) as trace:
            copies = SHOW_ABOVE_BYTES // 700_000 + 1
            assert trace.stats.total == trace.stats.outcomes["ok"] == 380 * copies  # every record of every copy
    assert seen and seen[-1] > SHOW_ABOVE_BYTES // 2
    assert "reading big.log" in terminal.getvalue()


def test_a_files_name_is_shown_as_text_on_one_line(tmp_path, monkeypatch):
    """The bar writes past the terminal guard (it moves the cursor): a name's escapes, line end and brackets are
    shown, not written as codes, a second line or rich markup."""
    monkeypatch.delenv("CI", raising=False)
    big = tmp_path / "b\x1b]0;t\x07\n[bold]x.log"
    with open(big, "wb") as f:
        f.truncate(SHOW_ABOVE_BYTES)  # (sparse: only its size is read)
    terminal = FakeTerminal()
    with read_progress(str(big), terminal) as progress:
        assert progress is not None
        progress(1)
    assert "reading b\\u001b]0;t\\u0007\\u000a[bold]x.log" in terminal.getvalue()
