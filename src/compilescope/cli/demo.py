"""`compilescope demo`: run the example programs, each traced in its own process, and report each, plus an index.

Without torch (or with --bundled) it renders the bundled traces of the same programs instead
(recorded by scripts/make_demo_traces.py with the same runner).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from importlib import resources

from .._torch import INSTALL_HINT, TORCH_VERSION, torch_available
from ..analyses.analyze import analyze
from ..demo import SCENARIOS, bundled_trace
from ..ingest.reader import read_trace
from ..location import local_output
from ..render.html import render_demo_index
from ..render.options import ReportOptions
from ..wording import count
from ..report_writer import report_outputs
from ..output import OutputDir, report_destination, shown_output


class DemoCommand:
    """Run small example programs (graph breaks, recompiles, dynamic shapes, training, a compile error) and report each."""

    name = "demo"

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("-o", "--out", default="compilescope_demo", type=local_output, help="output directory (default: compilescope_demo)")
        parser.add_argument("--overwrite", action="store_true", help="replace the output directory if it exists")
        parser.add_argument("--no-browser", action="store_true", help="do not open the report in a browser")
        parser.add_argument(
            "--bundled", action="store_true",
            help=f"render the bundled traces (recorded with torch {TORCH_VERSION}) instead of running the programs; needs no torch",
        )

    def run(self, args: argparse.Namespace) -> int:
        from .browser import open_browser

        live = not args.bundled
        if live and not torch_available():
            print(f"compilescope: torch is not installed, so the demo shows bundled traces; to run the examples live: {INSTALL_HINT}", file=sys.stderr)
            live = False
        with report_destination(args.out, args.overwrite) as local_out:  # (a URL: uploaded at the end)
            output = OutputDir(local_out, args.overwrite)
            if live:
                from importlib.metadata import version as installed_version  # the programs import torch, not this process

                examples = self._live(output)
                version = installed_version("torch")
            else:
                examples = self._bundled(output)
                version = TORCH_VERSION
            output.write("index.html", render_demo_index(examples, torch_version=version, live=live))
        where, index = shown_output(args.out, output.path)
        print(f"Wrote the demo reports to {where}" + (f"; open {index}" if index else ""))
        if not args.no_browser and index is not None:
            open_browser(index)
        return 0

    def _bundled(self, output: OutputDir) -> list[dict]:
        examples = []
        for name, description in SCENARIOS:
            with resources.as_file(bundled_trace(name)) as path:
                examples.append(_write_example(output, name, description, str(path)))
        return examples

    def _live(self, output: OutputDir) -> list[dict]:
        from ..demo.live import run_example

        examples = []
        print(f"Running {len(SCENARIOS)} example programs, each traced in its own process (about a minute)", flush=True)
        with tempfile.TemporaryDirectory(prefix="compilescope_demo_") as tmp:
            for name, description in SCENARIOS:
                print(f"  {name}: ", end="", flush=True)
                ran = run_example(name, os.path.join(tmp, name))
                if ran.log is None:
                    print(f"traced nothing ({ran.error or 'no compilation'})")
                    continue
                example = _write_example(output, name, description, ran.log, quiet=True)
                example["error"] = ran.error
                examples.append(example)
                raised = f", raised {ran.error}" if ran.error else ""
                print(f"{count(example['compiles'], 'compile id')}, {count(example['failures'], 'failure or restart', 'failures and restarts')}"
                      f"{raised} ({ran.seconds:.0f} s)")
        return examples


# Each program's report links back to the demo's index.
EXAMPLE_OPTIONS = ReportOptions(up_url="../index.html", up_label="demo")


def _write_example(output: OutputDir, name: str, description: str, log: str, quiet: bool = False) -> dict:
    with read_trace(log) as trace:
        results = analyze(trace)
        for relpath, content in report_outputs(trace, results, EXAMPLE_OPTIONS):
            output.write(f"{name}/{relpath}", content)
        example = {
            "name": name,
            "description": description,
            "compiles": trace.n_compile_ids,
            "failures": len(results.failures),
        }
    if not quiet:
        print(f"  {name}: {count(example['compiles'], 'compile id')}, "
              f"{count(example['failures'], 'failure or restart', 'failures and restarts')}")
    return example
