"""Instructions from `dis` text as torch logs it (`*_MODIFIED_BYTECODE` artifacts): foreign logs have no code objects.

The text of CPython 3.10-3.12 (`[line] [>>] offset OPNAME [arg] [(argrepr)]`) is read; the Python version is
told by the opcodes. The argument list of the function is not in the text: the decompiled function takes the
names it reads before writing as keyword-only arguments, which is honest about not knowing their order.
"""

from __future__ import annotations

import ast
import re

from .core import Decompiled, Instr, decompile_instructions

# Numbers have at most 9 digits (int() of a forged 5,000-digit one raises), and no two runs of spaces
# may match the same spaces (a long line of them would take quadratic time): the text is untrusted.
_LINE = re.compile(r"^\s*(?:(?P<line>\d{1,9})\s+)?(?:>>\s*)?(?P<offset>\d{1,9})\s+(?P<op>[A-Z][A-Z_0-9]*)"
                   r"(?:\s+(?P<arg>-?\d{1,9}))?(?:\s+\((?P<repr>.*)\))?\s*$")
_TO = re.compile(r"^to (\d+)$")
_NAME_OPS = {"LOAD_FAST", "STORE_FAST", "DELETE_FAST", "LOAD_DEREF", "STORE_DEREF", "DELETE_DEREF", "LOAD_ATTR",
             "STORE_ATTR", "DELETE_ATTR", "LOAD_METHOD", "LOAD_CLOSURE", "LOAD_FAST_CHECK", "LOAD_NAME",
             "STORE_NAME", "STORE_GLOBAL", "LOAD_GLOBAL"}


class _Raw:
    """A constant whose repr is not a literal: the decompiler refuses it."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def parse_dis(text: str) -> list[Instr] | None:
    out: list[Instr] = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        m = _LINE.match(raw)
        if m is None:
            if raw.lstrip().startswith(("Disassembly of", "ExceptionTable", "L")):
                return None  # nested code, exception tables, 3.13 labels: not this format
            continue
        op, argrepr = m["op"], m["repr"] or ""
        arg = int(m["arg"]) if m["arg"] is not None else None
        argval: object = arg
        to = _TO.match(argrepr)
        if to:
            argval = int(to.group(1))
        elif op == "LOAD_GLOBAL":
            argval = argrepr.removeprefix("NULL + ").removesuffix(" + NULL")
        elif op in _NAME_OPS:
            argval = argrepr
        elif op in ("LOAD_CONST", "RETURN_CONST", "KW_NAMES"):
            try:
                argval = ast.literal_eval(argrepr)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                argval = _Raw(argrepr)
        elif op == "COMPARE_OP":
            argval = argrepr
        out.append(Instr(op, arg, argval, argrepr, int(m["offset"]), int(m["line"]) if m["line"] else None))
    return out or None


def python_version(instrs: list[Instr]) -> tuple[int, int] | None:
    ops = {i.opname for i in instrs}
    if "PRECALL" in ops or any(o.startswith(("POP_JUMP_FORWARD", "POP_JUMP_BACKWARD")) for o in ops):
        return (3, 11)
    if ops & {"CALL_FUNCTION", "CALL_METHOD", "CALL_FUNCTION_KW", "ROT_TWO", "DUP_TOP", "BINARY_ADD"}:
        return (3, 10)
    if "CALL" in ops or "RETURN_CONST" in ops or "BINARY_OP" in ops:
        return (3, 12)
    return None


def decompile_dis(text: str, name: str) -> Decompiled | None:
    """Decompile logged `dis` text; None when the text is not a disassembly this reads."""
    instrs = parse_dis(text)
    if instrs is None:
        return None
    version = python_version(instrs)
    if version is None:
        return None
    stored: set[str] = set()
    args: list[str] = []
    for ins in instrs:
        if ins.opname in ("STORE_FAST", "DELETE_FAST") and isinstance(ins.argval, str):
            stored.add(ins.argval)
        elif ins.opname in ("LOAD_FAST", "LOAD_FAST_CHECK") and ins.argval not in stored and ins.argval not in args:
            args.append(ins.argval)
    return decompile_instructions(instrs, name=name, argnames=args, argcount=0, kwonly=len(args),
                                  varnames=[*args, *sorted(stored)], names=[], version=version)
