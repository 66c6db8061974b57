"""Claims of README.md that a first-time user checks by running the command: each one here runs it."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from compilescope.cli import main

from .conftest import run_cli, shared

README = Path(__file__).resolve().parent.parent / "README.md"


def _help(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--help"])
    assert exit_.value.code == 0
    return capsys.readouterr().out


def _readme_flag_table() -> list[str]:
    """The first cell of each row of the README's table of report flags ("-o, --out DIR", ...)."""
    text = README.read_text()
    table = text[text.index("| flag | meaning |"):]
    table = table[: table.index("\n\n")]
    return [m.group(1) for m in re.finditer(r"^\| `([^`]+)` \|", table, re.M)]


def test_the_flag_table_is_the_report_commands_options(capsys):
    # "every report flag below works": the table names each option `compilescope --help` lists, as it spells it,
    # and nothing it does not (-h and -V aside).
    listed = {name for cell in _readme_flag_table() for name in re.findall(r"(?<![\w-])--?[\w-]+", cell)}
    options = set(re.findall(r"^  (-\w|--[\w-]+)(?:[ ,]|$)", _help(capsys), re.M))
    options |= set(re.findall(r"^  -\w(?: \S+)?, (--[\w-]+)", _help(capsys), re.M))
    assert options - {"-h", "--help", "-V", "--version"} == listed


def test_the_flag_tables_value_names_are_the_helps(capsys):
    # `--custom-header-html HTML` in the table; --help said CUSTOM_HEADER_HTML (argparse's default metavar).
    out = _help(capsys)
    for cell in _readme_flag_table():
        if cell.startswith("--") and " " in cell:
            option, value = cell.split(" ", 1)
            value = value.split("\\")[0]  # (`local\|dask`: a | escaped in the table; --help says {local,dask})
            assert f"{option} {value}" in out or f"{option} {{" in out, cell


def test_what_to_do_command_under_a_profiled_report_says_what_the_report_found(tmp_path, capsys):
    # "ends as a report of its log does (its first three findings, the `compilescope summary` command that says what
    # to do about them ...)". With --profile the report has one finding more than the log alone (the profile's
    # "34 ms of GPU time" of the real H100 run): the command printed must give it too, so it takes the profile.
    directory = shared("gpu-torch211/profile_compiled")
    log, profile = next(directory.glob("*.log")), directory / "profile_compiled.json"
    assert run_cli(log, "--profile", profile, "-o", tmp_path / "out", "--no-browser") == 0
    printed = capsys.readouterr().out.splitlines()
    [hint] = [line for line in printed if "what to do about each: " in line]
    more = re.search(r"… (\d+) more;", hint)
    shown = len(printed[1:printed.index(hint)])  # the lines between "Fix first:" and the hint
    words = shlex.split(hint.split("what to do about each: ", 1)[1])
    assert words[:2] == ["compilescope", "summary"]
    assert main([*words[1:], "--json"]) == 0
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert len(findings) == shown + (int(more.group(1)) if more else 0)
    assert any(f["title"].startswith("profile profile_compiled.json:") for f in findings)
