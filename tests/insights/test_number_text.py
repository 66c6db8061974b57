"""Numbers as a user writes them (dynamic_shapes.number_text, numbers_text), never so rounded that two values read as
one: on a real torch 2.13 log of PyTorch's compiled-optimizer recipe with a long cosine schedule
(tests/data/torch213/README.md, `cosine_lr.log.gz`), whose second learning rate, 0.0009999999753259891, recompiled the
step compiled for 0.001; and on a log whose value is text float() refuses (log input is untrusted).
"""

from __future__ import annotations

import gzip
import json
import re

from compilescope.analyses.diff.analysis import _values_text
from compilescope.analyses.dynamic_shapes import number_text, numbers_text

from ..conftest import run_cli, torch213

COSINE = torch213("cosine_lr.log.gz")


def _guard_and_symbol_values() -> tuple[str, str]:
    """The failed guard's learning rate and the value the recompile made a symbol of, read from the raw log."""
    text = gzip.open(COSINE, "rt").read()
    [guarded] = re.findall(r"\t2/0: self\.param_groups\[0\]\['lr'\] == ([\d.e-]+) ", text)
    [made] = re.findall(r'"create_symbol": \{"symbol": "zf\d+", "val": "([\d.e-]+)"', text)
    return guarded, made


def test_the_recompile_shows_the_learning_rate_that_changed(tmp_path, capsys):
    guarded, made = _guard_and_symbol_values()
    assert float(guarded) != float(made) and f"{float(guarded):.6g}" == f"{float(made):.6g}"  # (six digits: one)
    assert run_cli("summary", COSINE) == 0
    out = capsys.readouterr().out
    assert f"failed guard of [2/0]: self.param_groups[0]['lr'] == {guarded}" in out
    [shown] = re.findall(r"zf\d+ = (\S+) in \[2/1\]", out)
    assert shown == "0.00099999998"  # (the fewest digits that keep it apart from 0.001: 8)

    assert run_cli("summary", COSINE, "--json") == 0
    [size] = json.loads(capsys.readouterr().out)["dynamic_shapes"]["sizes"]
    assert size["text"].startswith(f"zf8 = {shown} in [2/1]") and size["symbols"][0]["value"] == made

    assert run_cli(COSINE, "-o", tmp_path / "report", "--no-browser") == 0
    page = (tmp_path / "report" / "index.html").read_text()
    assert f"<code>zf8</code> = {shown} " in page and "<code>zf8</code> = 0.001 " not in page


def test_a_value_float_cannot_read_is_shown_as_written(tmp_path, capsys):
    """A crafted log: "²" is a digit to str.isdigit() and no digit to float() (which crashed summary and the report)."""
    log = tmp_path / "crafted.log.gz"
    text = gzip.open(torch213("compiled_optimizer.log.gz"), "rt").read()
    assert text.count('"val": "0.004666666666666667"') == 1
    log.write_bytes(gzip.compress(text.replace('"val": "0.004666666666666667"', '"val": "0.0046666²"').encode()))
    assert run_cli("summary", log) == 0
    assert "zf8 = 0.0046666² in [2/1]" in capsys.readouterr().out
    assert run_cli(log, "-o", tmp_path / "report", "--no-browser") == 0
    assert "<code>zf8</code> = 0.0046666² " in (tmp_path / "report" / "index.html").read_text()
    assert number_text("0.0046666²", exact=True) == number_text("0.0046666²") == "0.0046666²"


def test_values_shown_together_are_counted_and_kept_apart_by_value():
    # Three learning rates of a cosine schedule, apart past the 8th digit, and one value written two ways
    assert _values_text(["0.001", "0.0009999999753259891", "0.0009999999013039"]) == \
        "3 values: 0.001, 0.00099999998, 0.0009999999"
    assert _values_text(["0.250000000000000", "0.25", "0.25"]) == "0.25 (×3)"
    assert numbers_text(["0.00466666666666667", "0.006"]) == {"0.00466666666666667": "0.00466667", "0.006": "0.006"}
    # No fraction dropped (another integer), no large number in exponent form, a small one short and readable
    assert [number_text(v) for v in ("123456.7", "2.0000004", "1234567.00000000", "1.6666666666666667e-05", "8")] == \
        ["123456.7", "2.0000004", "1234567", "1.66667e-05", "8"]


def test_minus_zero_and_zero_keep_their_signs():
    # -0.0 == 0.0: one key for both showed "0.0" as "-0", a value the log never held
    assert numbers_text(["-0.0", "0.0"]) == {"-0.0": "-0", "0.0": "0"}
    assert numbers_text(["0.0", "-0.0", "0.5"]) == {"0.0": "0", "-0.0": "-0", "0.5": "0.5"}
    # (from 1e16 up a float holds no fraction and 16 digits need an exponent: Python's repr, as the docstring says)
    assert numbers_text(["1e39"]) == {"1e39": "1e+39"}
