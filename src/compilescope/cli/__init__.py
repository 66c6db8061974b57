"""Command line: `compilescope PATH [tlparse flags]` and `compilescope COMMAND ...`.

Each command is an object with prepare_parser() and run(); errors become one
line on stderr and an exit code here, in one place.
"""

from __future__ import annotations

import argparse
import os
import sys

from .. import __version__
from ..errors import CompilescopeError
from .demo import DemoCommand
from .diagnose import DiagnoseCommand
from .report import ReportCommand
from .run import RunCommand
from .summary import SummaryCommand

COMMANDS = [ReportCommand(), RunCommand(), DemoCommand(), SummaryCommand(), DiagnoseCommand()]


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
    parser = _parser(command)
    # A command may parse its own argv (run: everything after the program's name is the program's).
    args = command.parse_args(parser, argv) if hasattr(command, "parse_args") else parser.parse_args(argv)
    try:
        return command.run(args)
    except CompilescopeError as exc:
        print(f"compilescope: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("compilescope: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - a bug: one line, never a traceback (unless asked for)
        if os.environ.get("COMPILESCOPE_DEBUG"):
            raise
        detail = " ".join(str(exc).split())[:300]
        print(f"compilescope: internal error: {type(exc).__name__}: {detail!r} "
              "(this is a bug; COMPILESCOPE_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 3
