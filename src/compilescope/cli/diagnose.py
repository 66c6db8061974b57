"""`compilescope diagnose [--accuracy] [--minify] [-o OUT] [--timeout S] -- python script.py args`

Runs the program with torch.compile's backend forced to "eager", then "aot_eager",
then as written, each traced; says which stage fails first, with its error and user
frame; optionally checks accuracy and minimizes the failing graph with torch's minifier.
Writes OUT/index.html (the Diagnosis page), one report per stage (OUT/<stage>/) and
OUT/diagnosis.json. Exit status: 0 when every stage passes (verdict "ok", or "rounding": Inductor's run printed other
numbers, each within float32 rounding (1e-3 of it, or 1e-3 near 0), and nothing in its graphs explains them; with
--accuracy, torch's accuracy check passed, further moves too, accumulated over steps; AOTAutograd's within rounding),
1 when one fails, when the printed numbers differ otherwise ("differs": Inductor's random numbers or low precision in
its graphs, AOTAutograd beyond rounding, another backend; lines that change between eager's run and its control runs,
made only when the stages differ, are not compared) or a frame hit the recompile limit
(it ran eagerly after that: every stage passes, and not all was compiled), or when torch.export failed (as `check`
fails its log: a strict export's failure, an export issue), which no stage's backend is in.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from .._torch import require_torch
from ..analyses.diagnosis.reproduce import hand_commands, relocated_repro
from ..diagnose import DiagnoseOptions, DiagnoseResult, check_program_env, diagnose
from ..ingest.reader import read_trace
from .. import location
from ..errors import CompilescopeError
from ..location import local_output
from ..render.diagnosis import diagnosis_json, diagnosis_page, print_verdict
from ..render.options import ReportOptions
from ..runner import check_interpreter, program
from ..output import OutputDir, program_file, restored_on_failure
from ..report_writer import write_report
from .browser import open_browser
from .console import default_console
from .run import parse_program_args
from .usage import require_more_than

DEFAULT_ROOT = "compilescope_diagnose"
REPRO_SCRIPTS = ("repro.py", "minifier_launcher.py")  # torch's scripts that name the directory of their saved inputs


def _default_out() -> str:
    return os.path.join(DEFAULT_ROOT, time.strftime("%Y%m%d-%H%M%S"))


class DiagnoseCommand:
    """Find the torch.compile stage that fails (Dynamo, AOTAutograd, the backend) and, with --minify, a minimal repro."""

    name = "diagnose"

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.usage = (
            "compilescope diagnose [options] script.py [args ...]\n"
            "       compilescope diagnose [options] -m module [args ...]\n"
            "       compilescope diagnose [options] -- command [args ...]   (e.g. -- python train.py --lr 3)"
        )
        parser.allow_abbrev = False  # an abbreviation could swallow the program's own flags
        parser.add_argument("--accuracy", action="store_true",
                            help="also compare compiled results with eager (torch's TORCHDYNAMO_REPRO_LEVEL=4 check)")
        parser.add_argument("--minify", action="store_true",
                            help="run torch's minifier on the failing graph (in a temporary directory) and report repro.py")
        parser.add_argument("-o", "--out", metavar="DIR", type=local_output, help=f"output directory (default: ./{DEFAULT_ROOT}/<timestamp>)")
        parser.add_argument("--overwrite", action="store_true", help="replace the output directory if it exists")
        parser.add_argument("--timeout", type=float, metavar="SECONDS", default=900.0,
                            help="stop any one run (a stage, the minifier) after SECONDS (default 900)")
        parser.add_argument("--no-browser", action="store_true", help="do not open the Diagnosis page")
        parser.epilog = (
            "Printed numbers with a unit of time, size, rate or ratio (0.29 s, 1534 MB, 812 tok/s, 1.8 x), pids, clocks "
            "and lines naming a time, speed or memory are not compared: they change from run to run. A percentage is "
            "compared (accuracy 97.3%), except one telling progress or use (a bar's, 45% done, eta 45%, util 87%). "
            "Where the stages printed other numbers, backend=\"eager\" runs once more as a control: the lines that "
            "change between its two runs are not compared either (if the control run fails, printed numbers alone are "
            "not 'differs'); it runs a third time where a changed line is left and the program's file sets no seed "
            "(no call named *seed* given a seed) or some line did change, as a line can print alike twice by chance. "
            "Exit status: 0 when every stage passes (verdict ok), or when the only change is float32 rounding (verdict "
            "rounding: the program prints other numbers with Inductor, each within 1e-3 of the number or 1e-3 near 0, "
            "and nothing in its compiled graphs explains them: no random numbers of its own, no bf16/fp16 fused; with "
            "--accuracy, torch's accuracy check passed, which also makes a number moved further, not to nan/inf, "
            "rounding accumulated over steps; AOTAutograd's change within 1e-3 is rounding too). 1 otherwise: a stage failed, the printed numbers differ "
            "otherwise (differs: Inductor's random numbers or low precision in its graphs, a number moved further or "
            "became nan/inf, AOTAutograd beyond rounding, another backend), torch's accuracy check failed (accuracy), a frame hit the recompile limit (fell_back), nothing was compiled.")

    def parse_args(self, parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
        return parse_program_args(parser, argv, "compilescope diagnose")

    def run(self, args: argparse.Namespace) -> int:
        require_more_than("--timeout", args.timeout, 0)
        if args.out and location.is_url(args.out):
            # Its page gives commands that run the minifier's files from OUT: a URL would be written as a local folder
            # named like it (memory:/x), or name files no command can run.
            raise CompilescopeError(f"-o {args.out}: diagnose writes to a local directory (its commands run the files "
                                    "it writes there); give a local path, and copy it to the URL after")
        prog = program(args.program, args.module, args.is_command)
        if prog.this_python:
            require_torch("compilescope diagnose")
        check_interpreter(prog, args.command_words)
        check_program_env(prog)
        # Fail before the slow runs, not after; --overwrite never removes the program (nor a file it names).
        keep = [program_file(w) for w in args.program if isinstance(w, str) and os.path.exists(w)]
        out_path = args.out or _default_out()
        console = default_console(stderr=True, highlight=False)

        def progress(line: str) -> None:
            console.print(f"compilescope diagnose: {line}", markup=False, soft_wrap=True)

        options = DiagnoseOptions(accuracy=args.accuracy, minify=args.minify, timeout=args.timeout)
        # (A run that fails before writing anything leaves OUT as it found it, not holding only the writing mark.)
        with restored_on_failure(out_path):
            out = OutputDir(out_path, args.overwrite, keep=keep)
            progress(f"diagnosing {prog} (output and reports: {out.path})")
            with tempfile.TemporaryDirectory(prefix="compilescope_diagnose_") as work:
                result = diagnose(prog, work, options, progress)
                self._write(result, out, work)
        index = os.path.join(out.path, "index.html")
        print_verdict(result, console)
        print(f"Wrote the diagnosis to {out.path}; open {index}")
        if not args.no_browser:
            open_browser(index)
        return 0 if result.verdict.passes else 1

    def _write(self, result: DiagnoseResult, out: OutputDir, work: str | None = None) -> None:
        """Every stage's report (OUT/<stage>/), its output, the minifier's files, then the Diagnosis page. work: the
        temporary directory the runs wrote in, removed after this."""
        options = ReportOptions()
        for outcome in result.runs:
            key = outcome.spec.key
            log = result.logs.get(key)
            if log is not None:
                with read_trace(log) as trace:
                    write_report(trace, os.path.join(out.path, key), False, options)
                outcome.report = f"{key}/index.html"
            if key in result.outputs:
                out.write(f"outputs/{key}.txt", _chunks(result.outputs[key]))
        for name in ("minify_program", "minifier"):
            if name in result.outputs:
                out.write(f"outputs/{name}.txt", _chunks(result.outputs[name]))
        minify_dir = None
        if result.minify_files:
            minify_dir = os.path.join(out.path, "minify")
            # torch's scripts load the inputs from the checkpoints of the work directory, removed when diagnose is
            # done: they load the report's copy (or, not kept, random inputs), in the files and on the pages alike,
            # and set no variable to a path in it.
            kept = any(name.startswith("checkpoints/") for name in result.minify_files)
            for name, path in result.minify_files.items():
                if name in REPRO_SCRIPTS:
                    with open(path, encoding="utf-8", errors="replace") as f:
                        out.write(f"minify/{name}", relocated_repro(f.read(), kept, work).encode())
                else:
                    out.write(f"minify/{name}", _chunks(path))
            minify = result.minify
            if minify is not None:
                if minify.repro is not None:
                    minify.repro = relocated_repro(minify.repro, kept, work)
                if minify.launcher is not None:
                    minify.launcher = relocated_repro(minify.launcher, kept, work)
                if "repro.py" in result.minify_files:
                    minify.repro_path = os.path.join(minify_dir, "repro.py")
        commands = hand_commands(result.argv, result.runs, result.verdict, result.minify, minify_dir)
        out.write("index.html", diagnosis_page(result, commands, out.path))
        out.write("diagnosis.json", diagnosis_json(result, commands))


def _chunks(path: str):
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            yield chunk
