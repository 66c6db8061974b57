"""What `--help` says, and the rule that everything after the program's name is the program's."""

from __future__ import annotations

import pytest

from compilescope.cli import COMMANDS, main


def _help(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--help"])
    assert exit_.value.code == 0
    return capsys.readouterr().out


def test_top_level_help_describes_every_command_in_one_line(capsys):
    out = _help(capsys)
    lines = out.splitlines()
    for name in COMMANDS:
        if name == "report":
            continue
        [line] = [li for li in lines if li.startswith(f"  {name} ")]
        assert len(line.split(maxsplit=1)[1]) > 20 and len(line) <= 80, line
    assert "compilescope COMMAND" in out


def test_run_help_offers_no_flag_that_means_nothing_for_run(capsys):
    out = _help(capsys, "run")
    assert "--latest" not in out
    assert "--out" in out and "--trace-dir" in out
    with pytest.raises(SystemExit):
        main(["run", "--latest", "x.py"])
    assert "unrecognized arguments: --latest" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["run", "diagnose"])
def test_our_flag_after_the_script_goes_to_the_script_with_a_warning(command, capsys, monkeypatch):
    from compilescope.cli import load_command, _parser

    cmd = load_command(command)
    args = cmd.parse_args(_parser(cmd), ["--timeout", "5", "train.py", "--lr", "3", "--no-browser"])
    assert args.program == ["train.py", "--lr", "3", "--no-browser"] and not args.no_browser
    err = capsys.readouterr().err
    assert err == (f"compilescope: warning: --no-browser after train.py goes to the program, not to compilescope; "
                   f"put compilescope's options first: compilescope {command} --timeout 5 --no-browser train.py --lr 3\n")


def test_the_command_line_the_warning_suggests_parses_as_it_says(capsys):
    """Each of our options is moved with its value, quoted as a shell takes it; the program keeps its own words."""
    import shlex

    from compilescope.cli import load_command, _parser

    cmd = load_command("run")
    cmd.parse_args(_parser(cmd), ["-o", "my out", "my train.py", "--lr", "3", "--trace-dir", "t d", "--timeout=5", "-v"])
    suggested = capsys.readouterr().err.split("put compilescope's options first: ")[1].strip()
    assert suggested == "compilescope run -o 'my out' --trace-dir 't d' --timeout=5 'my train.py' --lr 3 -v"
    words = shlex.split(suggested)
    args = cmd.parse_args(_parser(cmd), words[2:])
    assert capsys.readouterr().err == ""  # nothing left after the program that is ours
    assert (args.out, args.trace_dir, args.timeout, args.program) == ("my out", "t d", 5, ["my train.py", "--lr", "3", "-v"])
    cmd.parse_args(_parser(cmd), ["-m", "pkg.train", "--epochs", "2", "--overwrite"])
    assert capsys.readouterr().err.endswith("first: compilescope run --overwrite -m pkg.train --epochs 2\n")


def test_no_warning_after_double_dash_or_for_the_programs_own_flags(capsys):
    from compilescope.cli import load_command, _parser

    cmd = load_command("run")
    cmd.parse_args(_parser(cmd), ["--", "python", "train.py", "--no-browser"])
    cmd.parse_args(_parser(cmd), ["train.py", "--lr", "3", "-o", "model.pt"])
    cmd.parse_args(_parser(cmd), ["-m", "pkg.train", "--epochs", "2"])
    assert capsys.readouterr().err == ""
    cmd.parse_args(_parser(cmd), ["-m", "pkg.train", "--overwrite"])
    assert "--overwrite after -m pkg.train goes to the program" in capsys.readouterr().err


@pytest.mark.parametrize("command, example", [("run", "--nproc-per-node"), ("diagnose", "--lr")])
def test_an_option_our_help_only_quotes_from_an_example_is_the_programs(command, example, capsys):
    # The usage lines quote a program's options (`-- torchrun --nproc-per-node 2 train.py`, `-- python train.py
    # --lr 3`): they are not ours, so a script given them gets no warning (every --word of the help was taken as ours).
    from compilescope.cli import load_command, _parser

    cmd = load_command(command)
    assert example in _parser(cmd).format_help()
    args = cmd.parse_args(_parser(cmd), ["train.py", example, "2"])
    assert args.program == ["train.py", example, "2"]
    assert capsys.readouterr().err == ""
