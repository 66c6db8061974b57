"""Python source from the bytecode Dynamo emits: the code torch.compile runs instead of your function.

Dynamo's transformed code is a small, regular subset of CPython bytecode (calls, attribute and item
access, building lists and tuples, stack shuffles, forward branches, return). This decompiler handles
that subset for CPython 3.10-3.13 and nothing else: an instruction or shape it does not know stops it,
and the result is then an annotated disassembly (every line a comment), never plausible but wrong code.

Correctness before beauty: every value is computed once, in order, into a temporary, so stack shuffles
(COPY/SWAP) and in-place mutation of shared lists keep their meaning. See docs/transformed-code.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .core import Decompiled, Instr, decompile, decompile_instructions, instructions_from_code

__all__ = ["Decompiled", "Instr", "decompile", "decompile_instructions", "instructions_from_code"]


def __getattr__(name: str):
    # .core is imported on first use: a report imports decompile.recorded (names only) on every log,
    # and most logs have nothing to decompile (start-up time).
    if name in __all__:
        from . import core

        return getattr(core, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
