"""Compile decompiled source back into a code object that can stand in for the one it came from.

Used by the round-trip check (tests, and `capture(check_decompiler=True)`): Dynamo runs whatever code
object a bytecode hook returns, so the decompiled function can replace Dynamo's own.
"""

from __future__ import annotations

import types

from .core import CO_VARARGS, CO_VARKEYWORDS


class RecompileError(Exception):
    pass


def _find(code: types.CodeType, name: str) -> types.CodeType | None:
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            if const.co_name == name:
                return const
            found = _find(const, name)
            if found is not None:
                return found
    return None


def _nargs(code: types.CodeType) -> int:
    return (code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & CO_VARARGS)
            + bool(code.co_flags & CO_VARKEYWORDS))


def recompile_like(source: str, like: types.CodeType) -> types.CodeType:
    """The code object of the function `source` defines, with `like`'s name, file, arguments and free variables."""
    name = like.co_name
    if like.co_freevars:
        # Free variables need an enclosing function that owns them as cells.
        cells = "".join(f"    {n} = None\n" for n in like.co_freevars)
        body = "".join(f"    {line}\n" if line else "\n" for line in source.splitlines())
        source = f"def _cs_outer():\n{cells}{body}    return {name}\n"
    module = compile(source, like.co_filename, "exec")
    code = _find(module, name)
    if code is None:
        raise RecompileError(f"the source defines no function {name}")
    n = _nargs(like)
    if code.co_varnames[:n] != like.co_varnames[:n] or _nargs(code) != n:
        raise RecompileError("the recompiled arguments differ")
    if code.co_freevars != like.co_freevars:
        raise RecompileError(f"free variables differ: {code.co_freevars} vs {like.co_freevars}")
    return code.replace(co_firstlineno=like.co_firstlineno)
