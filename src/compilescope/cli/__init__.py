"""Command line: `compilescope PATH [tlparse flags]` and `compilescope COMMAND ...`.

Each command is an object with prepare_parser() and run(); errors become one
line on stderr and an exit code here, in one place.
"""

from __future__ import annotations

import argparse
import os
import sys

from importlib import import_module

from .. import __version__
from ..errors import CompilescopeError

# name -> (module, class). A command's module is imported only when it runs, so
# `compilescope LOG` does not pay for torch-side commands at start-up.
COMMANDS = {
    "report": (".report", "ReportCommand"),
    "run": (".run", "RunCommand"),
    "demo": (".demo", "DemoCommand"),
    "summary": (".summary", "SummaryCommand"),
    "diagnose": (".diagnose", "DiagnoseCommand"),
    "diff": (".diff", "DiffCommand"),
    "check": (".check", "CheckCommand"),
    "serve": (".serve", "ServeCommand"),
}


def load_command(name: str):
    module, cls = COMMANDS[name]
    return getattr(import_module(module, __name__), cls)()


def _parser(command) -> argparse.ArgumentParser:
    prog = "compilescope" if command.name == "report" else f"compilescope {command.name}"
    parser = argparse.ArgumentParser(prog=prog, description=command.__doc__)
    if command.name == "report":
        parser.add_argument("--version", action="version", version=f"compilescope {__version__}")
        others = ", ".join(name for name in COMMANDS if name != "report")
        if others:
            parser.epilog = f"other commands: {others} (compilescope COMMAND --help)"
    command.prepare_parser(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    name = "report"
    if argv and argv[0] in COMMANDS:
        name = argv.pop(0)
    elif "--version" in argv:  # answered before any command module is imported: start-up is most of its cost
        print(f"compilescope {__version__}")
        return 0
    command = load_command(name)
    parser = _parser(command)
    # A command may parse its own argv (run: everything after the program's name is the program's).
    args = command.parse_args(parser, argv) if hasattr(command, "parse_args") else parser.parse_args(argv)
    try:
        _template_cache()
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


def _template_cache() -> None:
    """Compiled templates are kept between runs of the command line (only: the API writes nothing it was not asked to).
    COMPILESCOPE_TEMPLATE_CACHE=0 turns that off."""
    from ..render.html.env import enable_template_cache

    enable_template_cache()

