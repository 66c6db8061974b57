"""Command line: `compilescope PATH [tlparse flags]` and `compilescope COMMAND ...`.

Each command is an object with prepare_parser() and run(); errors become one
line on stderr and an exit code here, in one place.
"""

from __future__ import annotations

import gc
import os
import sys
from importlib import import_module

from .. import __version__
from ..collector import freeze_for_process, something_frozen
from ..errors import CompilescopeError

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing and re before `--version` answers)
if TYPE_CHECKING:
    from .parser import CommandParser

# name -> (module, class). A command's module is imported only when it runs, so
# `compilescope LOG` does not pay for torch-side commands at start-up.
COMMANDS = {
    "report": (".report", "ReportCommand"),
    "run": (".run", "RunCommand"),
    "demo": (".demo", "DemoCommand"),
    "summary": (".summary", "SummaryCommand"),
    "diagnose": (".diagnose", "DiagnoseCommand"),
    "dump-src": (".dump_src", "DumpSrcCommand"),
    "diff": (".diff", "DiffCommand"),
    "check": (".check", "CheckCommand"),
    "serve": (".serve", "ServeCommand"),
}
# One line each for `compilescope --help` (here, so that --help imports no command module).
COMMAND_LINES = {  # each fits 80 columns
    "run": "run a program with TORCH_TRACE set, then report it (needs torch)",
    "summary": "what to fix first in a log, in the terminal (--json for scripts)",
    "diagnose": "find the torch.compile stage that fails, and a minimal repro",
    "demo": "write the demo report of small torch.compile programs",
    "dump-src": "write a log's graphs, kernels and transformed code as .py files",
    "diff": "what changed between two runs (logs or directories)",
    "check": "a CI gate: exit 1 when a log breaks a rule (--junit FILE)",
    "serve": "a local hub of runs: reports and diffs in the browser",
    "report": "the report (the default command); report --load FILE redraws a --save",
}


def _commands_epilog() -> str:
    width = max(map(len, COMMAND_LINES))
    lines = [f"  {name:<{width}}  {line}" for name, line in COMMAND_LINES.items()]
    return "\n".join(["commands (compilescope COMMAND --help for each):", *lines])


def load_command(name: str):
    module, cls = COMMANDS[name]
    return getattr(import_module(module, __name__), cls)()


def load_command_quickly(name: str):
    """load_command, the first time in a process without the garbage collector: importing a command makes many
    objects and no garbage, yet sets off dozens of collections, each walking every object made so far (about 10%
    of a small report). What the imports made is then frozen: later collections (a large log makes many) never
    walk it again. Once per process: main() may run many times in one (the tests), each run's garbage collected."""
    if something_frozen() or not gc.isenabled():
        return load_command(name)
    gc.disable()
    try:
        return load_command(name)
    finally:
        freeze_for_process()
        gc.enable()


def _parser(command) -> CommandParser:
    from .parser import command_parser

    return command_parser(command, __version__, _commands_epilog())


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    name = "report"
    if argv and argv[0] in COMMANDS:
        name = argv.pop(0)
    elif "--version" in argv or "-V" in argv:  # -V: tlparse's short form  # answered before anything else is imported (argparse, the terminal guard, a command):
        print(f"compilescope {__version__}")  # start-up is all of its cost (and our own text needs no guard)
        return 0
    elif meant := mistyped_command(argv):
        print(f"compilescope: error: {argv[0]}: no such file or directory; did you mean `compilescope {meant}`?",
              file=sys.stderr)
        return 2
    from .terminal_guard import guard_terminal

    guard_terminal()
    kept_templates = _kept_record_templates()
    command = load_command_quickly(name)
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
    finally:
        if kept_templates:  # (after the run: a log may need more modules, and their records)
            from .compiled_cache import keep_record_templates

            keep_record_templates(kept_templates)


def mistyped_command(argv: list[str]) -> str | None:
    """The command `compilescope sumary LOG` meant: a first word that is no path but close to a command's name.
    Only a word could be one (no dot, no slash): a missing diff.log is a log's name, not `diff` mistyped."""
    word = argv[0] if argv else ""
    if word.startswith("-") or not word.replace("-", "").replace("_", "").isalnum() or os.path.exists(word):
        return None
    import difflib  # here: only for a first word that is not a path

    close = difflib.get_close_matches(word, COMMANDS, n=1)
    return close[0] if close else None


def _kept_record_templates() -> str | None:
    """Read the records' compiled __init__ templates kept by earlier runs (before the command's records are made),
    and say where to keep them; None when caching is off. Like compiled Jinja templates: the CLI's choice only."""
    from ..cache_dir import cache_base
    from ..model.records import read_kept_templates

    base = cache_base()
    if base is None:
        return None
    try:
        os.makedirs(base, exist_ok=True)
    except OSError:
        return None
    path = os.path.join(base, f"records-{sys.implementation.cache_tag}.bin")
    read_kept_templates(path)
    return path


def _template_cache() -> None:
    """Compiled templates are kept between runs of the command line (only: the API writes nothing it was not asked to).
    COMPILESCOPE_TEMPLATE_CACHE=0 turns that off. A command that writes no HTML (summary, check) imports no Jinja: the
    HTML renderer turns the cache on when it is imported, unless the command imported it already."""
    from .. import cache_dir

    def enable() -> None:
        from .template_cache import enable_template_cache  # (imports the HTML environment: only once it is wanted)

        enable_template_cache()

    cache_dir.template_cache_hook = enable
    if __name__.rpartition(".")[0] + ".render.html.env" in sys.modules:
        enable()

