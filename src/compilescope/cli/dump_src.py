"""`compilescope dump-src LOG DIR`: depyf's layout of .py files (graphs, kernels, transformed code) from a log."""

from __future__ import annotations

import argparse
import sys

from ..analyses.analyze import analyze
from ..analyses.transformed import compile_dumps
from ..analyses.unread import unread
from ..ingest.discover import discover
from ..ingest.reader import read_trace
from ..location import local_output
from ..render.dump_src import dump_src_files
from ..render.notices import unread_line
from ..output import DUMP_SRC_MARK, DUMP_SRC_MARK_TEXT, OutputDir, report_destination, shown_output


class DumpSrcCommand:
    """Write, per compiled function, its captured graph, AOT graphs, kernels and transformed code as .py files
    (depyf's `prepare_debug` layout), and torch.export's ExportedPrograms. A compile's files take torch's name of
    its graph where the log has its transformed code (`__compiled_fn_6 Captured Graph 0.py`, the name that code
    calls), else its compile id's: `__compiled_fn_1_0` for [1/0], `__compiled_fn_1_0_1` for [1/0_1],
    `__compiled_fn_ca0_3_0` for compiled autograd's [!0/3/0]. Each file's first line says its compile id."""

    name = "dump-src"

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("path", help="a TORCH_TRACE log file, a .gz log, or a directory of logs")
        parser.add_argument("out", type=local_output, help="the directory to write (like depyf's dump_src_dir)")
        parser.add_argument("--overwrite", action="store_true", help="replace the directory if it exists")
        parser.add_argument("--latest", action="store_true", help="with a directory: read its newest log")

    def run(self, args: argparse.Namespace) -> int:
        found = discover(args.path, latest=args.latest)
        if found.note:
            print(f"compilescope: {found.note}", file=sys.stderr)
        with read_trace(found.chosen) as trace, report_destination(args.out, args.overwrite, [trace.source]) as local_out:
            # depyf's layout has no index.html: the mark written last says the directory is this command's, for
            # --overwrite to replace (it refused its own output, as a folder of the user's).
            output = OutputDir(local_out, args.overwrite, keep=[trace.source], last=DUMP_SRC_MARK)
            n = 0
            for relpath, text in dump_src_files(trace, compile_dumps(trace, analyze(trace).transformed)):
                output.write(relpath, text)
                n += 1
            output.write(DUMP_SRC_MARK, DUMP_SRC_MARK_TEXT)
            # (a cut log's files are what was read: the graphs and code past the cut are missing, as report says)
            unread_warning = unread_line(unread(trace.stats), found.chosen, "dump")
        print(f"Wrote {n} files to {shown_output(args.out, output.path)[0]}")
        if unread_warning:
            print(unread_warning, file=sys.stderr)
        return 0
