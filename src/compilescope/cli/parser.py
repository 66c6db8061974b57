"""The argument parser of a command (here, not in cli/__init__: `compilescope --version` never imports argparse)."""

from __future__ import annotations

import argparse


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser that remembers its options and which of them take a value (`run` and `diagnose` need to
    know where their options end and the program's own words begin), through add_argument's public result."""

    def __init__(self, *args, **kwargs) -> None:
        self.options: set[str] = set()  # (before argparse's __init__, which adds -h/--help through add_argument)
        self.value_options: set[str] = set()
        super().__init__(*args, **kwargs)

    def add_argument(self, *args, **kwargs) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.options.update(action.option_strings)
        if action.nargs != 0:
            self.value_options.update(s for s in action.option_strings)
        return action


def command_parser(command, version: str, epilog: str) -> CommandParser:
    prog = "compilescope" if command.name == "report" else f"compilescope {command.name}"
    parser = CommandParser(prog=prog, description=command.__doc__)
    if command.name == "report":
        parser.usage = "compilescope [options] PATH [PATH ...]\n       compilescope COMMAND [options] ..."
        parser.add_argument("-V", "--version", action="version", version=f"compilescope {version}")
        parser.formatter_class = argparse.RawDescriptionHelpFormatter  # the epilog is a table: keep its lines
        parser.epilog = epilog
    command.prepare_parser(parser)
    return parser
