"""Command line: `compilescope PATH [tlparse flags]` and `compilescope COMMAND ...`.

Each command is an object with prepare_parser() and run(); errors become one
line on stderr and an exit code here, in one place.
"""

from __future__ import annotations

import argparse
import sys

from .. import __version__
from ..errors import CompilescopeError
from .demo import DemoCommand
from .report import ReportCommand

COMMANDS = [ReportCommand(), DemoCommand()]


def _parser(command) -> argparse.ArgumentParser:
    prog = "compilescope" if command.name == "report" else f"compilescope {command.name}"
    parser = argparse.ArgumentParser(prog=prog, description=command.__doc__)
    if command.name == "report":
        parser.add_argument("--version", action="version", version=f"compilescope {__version__}")
        others = ", ".join(c.name for c in COMMANDS if c.name != "report")
        if others:
            parser.epilog = f"other commands: {others} (compilescope COMMAND --help)"
    command.prepare_parser(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    by_name = {c.name: c for c in COMMANDS}
    command = by_name["report"]
    if argv and argv[0] in by_name and argv[0] != "report":
        command = by_name[argv.pop(0)]
    elif argv and argv[0] == "report":
        argv.pop(0)
    args = _parser(command).parse_args(argv)
    try:
        return command.run(args)
    except CompilescopeError as exc:
        print(f"compilescope: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("compilescope: interrupted", file=sys.stderr)
        return 130
