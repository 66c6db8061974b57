"""`compilescope demo`: reports of bundled example traces, plus an index of them."""

from __future__ import annotations

import argparse
import os
from importlib import resources

from ..analyses import analyze
from ..demo import SCENARIOS, bundled_trace
from ..ingest.reader import read_trace
from ..render.html import render_demo_index
from ..render.options import ReportOptions
from ..render.report import report_files
from .output import OutputDir


class DemoCommand:
    """Write reports of the bundled example traces (graph breaks, recompiles, dynamic shapes, training, a compile error)."""

    name = "demo"

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("-o", "--out", default="compilescope_demo", help="output directory (default: compilescope_demo)")
        parser.add_argument("--overwrite", action="store_true", help="replace the output directory if it exists")
        parser.add_argument("--no-browser", action="store_true", help="do not open the report in a browser")

    def run(self, args: argparse.Namespace) -> int:
        from .report import _open_browser

        output = OutputDir(args.out, args.overwrite)
        examples = []
        for name, description in SCENARIOS:
            with resources.as_file(bundled_trace(name)) as path, read_trace(str(path)) as trace:
                results = analyze(trace)
                for relpath, content in report_files(trace, results, ReportOptions()):
                    output.write(f"{name}/{relpath}", content)
                examples.append({
                    "name": name,
                    "description": description,
                    "compiles": sum(1 for cid in trace.compiles if cid is not None),
                    "failures": len(results.failures),
                })
            print(f"  {name}: {examples[-1]['compiles']} compilations, {examples[-1]['failures']} failures/restarts")
        output.write("index.html", render_demo_index(examples, torch_version="2.13.0"))
        index = os.path.join(output.path, "index.html")
        print(f"Wrote the demo reports to {output.path}; open {index}")
        if not args.no_browser:
            _open_browser(index)
        return 0
