"""Findings of compiled results that differ from eager's: np.random drawn from torch's generator, Inductor's random
numbers, bf16/fp16 ops fused in float32, custom ops that write into an argument they do not declare mutated."""

from __future__ import annotations

import os

from ...wording import first_listed
from ..numerics import RANDOM_ADVICE, Numerics
from ..numpy_graphs import NumpyInGraphs
from ..op_mutations import UndeclaredMutation
from . import INFO, WARNING, Finding


def numpy_random_findings(numpy: NumpyInGraphs) -> list[Finding]:
    """np.random in a graph: the compiled code draws other numbers than NumPy would, and nothing in the log says so."""
    lines = numpy.random_lines
    if not lines:
        return []
    where = ", ".join(line.location.short for line in lines)
    compiles = list(dict.fromkeys(cid for line in lines for cid in line.compile_ids))
    return [Finding(WARNING, "numpy", f"np.random drawn from torch's generator at {where}",
                    f"{', '.join(compiles)}: np.random.seed does not set these numbers; "
                    "torch._dynamo.config.use_numpy_random_stream = True keeps NumPy's (the call breaks the graph)")]


def _lines(lines: list) -> str:
    """"prog.py:31, 32, 35": the lines of one file after its name once."""
    by_file: dict[str, list[str]] = {}
    for line in lines:
        by_file.setdefault(os.path.basename(line.location.filename), []).append(str(line.location.line))
    return "; ".join(f"{name}:{', '.join(numbers)}" for name, numbers in by_file.items())


def numerics_findings(num: Numerics) -> list[Finding]:
    """Compiled results that cannot match eager's: Inductor's random numbers, low precision fused in float32."""
    out = []
    if num.random:
        compiles = list(dict.fromkeys(cid for line in num.random for cid in line.compile_ids))
        code = "; ".join(f"{line.location.short}: {line.location.code}" for line in num.random if line.location.code)
        out.append(Finding(WARNING, "numerics", f"random numbers drawn by Inductor, not eager, at {_lines(num.random)}",
                           f"{', '.join(compiles)}{f' ({code})' if code else ''}: {RANDOM_ADVICE}"))
    if num.precision:
        compiles = list(dict.fromkeys(cid for line in num.precision for cid in line.compile_ids))
        dtypes = "/".join(dict.fromkeys(line.dtype or "" for line in num.precision))
        out.append(Finding(INFO, "numerics", f"{dtypes} ops fused in float32 at {_lines(num.precision)}",
                           f"{', '.join(compiles)}: {num.precision_note}"))
    return out


def op_mutation_finding(op: UndeclaredMutation) -> Finding:
    """A custom op that writes into an argument it declares only read: where it writes, where compiled code calls it
    (a call left out lost its write for sure), what to declare. A triton_op whose write AOTAutograd found itself
    (OpMutations.functionalized) computed eager's results: advice only, told with the user's kernels."""
    writes = "; ".join(f"{w.short}: {w.code}" if w.code else w.short for w in op.writes)
    by_compile: dict[str, list[str]] = {}
    for call in op.calls:
        by_compile.setdefault(call.compile_id, []).append(
            f"{call.location.short}{f' ({call.location.code})' if call.location.code else ''}")
    # (a log's calls are as many as it holds: the first LISTED named at each level, the rest counted)
    called = first_listed([f"{cid} at {first_listed(places)}" for cid, places in by_compile.items()], "; ")
    return Finding(INFO if op.cloned else WARNING, "user_kernels" if op.cloned else "numerics", op.title,
                   f"{writes}; called in {called}: {op.why}. {'Advice' if op.cloned else 'Fix'}"
                   f"{'' if op.stale else f' ({op.defined_at.short})'}: {op.advice}")
