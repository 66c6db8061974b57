"""The decompiler: instructions -> statements, with a symbolic stack of atoms (names, temporaries, constants)."""

from __future__ import annotations

import keyword
import math
import sys
from dataclasses import dataclass, field
from typing import Any

CO_VARARGS = 0x04
CO_VARKEYWORDS = 0x08
INDENT = "    "


@dataclass(frozen=True)
class Instr:
    """One instruction, as `dis` describes it (so it can come from a code object or from logged `dis` text)."""

    opname: str
    arg: int | None
    argval: Any
    argrepr: str
    offset: int
    line: int | None = None  # the source line it starts, when known


@dataclass
class Decompiled:
    name: str
    source: str  # Python source, or (ok False) an annotated disassembly, all comments
    ok: bool
    problem: str | None = None  # why it is not decompiled (ok False)


class Unsupported(Exception):
    def __init__(self, instr: Instr | None, reason: str):
        super().__init__(reason)
        self.instr = instr
        self.reason = reason


def _count(ins: Instr) -> int:
    """The instruction's argument as a count (of stack items, arguments, targets): logged text may lack it."""
    if ins.arg is None or ins.arg < 0:
        raise Unsupported(ins, f"{ins.opname} without a count as its argument")
    return ins.arg


class _Null:
    """The NULL that 3.11+ pushes below (3.13: above) a callable."""

    def __repr__(self) -> str:
        return "NULL"


NULL = _Null()


@dataclass(frozen=True)
class _Slice:
    """BUILD_SLICE result: only ever used as a subscript (Dynamo's use), so written `c[a:b]`."""

    parts: tuple[str, ...]

    def subscript(self) -> str:
        return ":".join("" if p == "None" else p for p in self.parts)


def instructions_from_code(code) -> list[Instr]:
    import dis

    out = []
    for ins in dis.get_instructions(code):
        if ins.opname == "CACHE":
            continue
        line = ins.starts_line if isinstance(getattr(ins, "starts_line", None), int) and not isinstance(ins.starts_line, bool) else None
        if sys.version_info >= (3, 13):
            line = ins.line_number if ins.starts_line else None
        argval = ins.argval
        if ins.opname == "KW_NAMES" and not isinstance(argval, tuple):
            argval = code.co_consts[ins.arg]  # 3.11's dis leaves it unresolved
        out.append(Instr(ins.opname, ins.arg, argval, ins.argrepr, ins.offset, line))
    return out


# --- constants -----------------------------------------------------------------------------------


def const_source(value: Any) -> str:
    """Source text that evaluates to value, for literal types only."""
    if value is None or value is Ellipsis or isinstance(value, (bool, int, str, bytes)):
        return "..." if value is Ellipsis else repr(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise Unsupported(None, f"float constant {value!r} has no literal")
        return repr(value)
    if isinstance(value, complex):
        if any(math.isnan(v) or math.isinf(v) for v in (value.real, value.imag)):
            raise Unsupported(None, f"complex constant {value!r} has no literal")
        return f"complex({value.real!r}, {value.imag!r})" if value.real else repr(value)
    if isinstance(value, tuple):
        items = [const_source(v) for v in value]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(value, frozenset) and value:
        return "frozenset({" + ", ".join(sorted(const_source(v) for v in value)) + "})"
    raise Unsupported(None, f"constant of type {type(value).__name__} has no literal")


# --- operators -----------------------------------------------------------------------------------

_BINARY_310 = {
    "BINARY_POWER": "**", "BINARY_MULTIPLY": "*", "BINARY_MATRIX_MULTIPLY": "@", "BINARY_FLOOR_DIVIDE": "//",
    "BINARY_TRUE_DIVIDE": "/", "BINARY_MODULO": "%", "BINARY_ADD": "+", "BINARY_SUBTRACT": "-",
    "BINARY_LSHIFT": "<<", "BINARY_RSHIFT": ">>", "BINARY_AND": "&", "BINARY_XOR": "^", "BINARY_OR": "|",
}
_INPLACE_310 = {k.replace("BINARY_", "INPLACE_"): v + "=" for k, v in _BINARY_310.items()}
_BINARY_OPS = {"+", "-", "*", "/", "//", "%", "**", "@", "<<", ">>", "&", "^", "|"}
_COMPARE = {"<", "<=", "==", "!=", ">", ">="}
_UNARY = {"UNARY_NEGATIVE": "-", "UNARY_POSITIVE": "+", "UNARY_INVERT": "~", "UNARY_NOT": "not "}
_SKIP = {"RESUME", "NOP", "CACHE", "EXTENDED_ARG", "PRECALL", "COPY_FREE_VARS", "MAKE_CELL", "NOT_TAKEN"}
_COND_JUMPS = {
    "POP_JUMP_IF_FALSE": "false", "POP_JUMP_FORWARD_IF_FALSE": "false",
    "POP_JUMP_IF_TRUE": "true", "POP_JUMP_FORWARD_IF_TRUE": "true",
    "POP_JUMP_IF_NONE": "none", "POP_JUMP_FORWARD_IF_NONE": "none",
    "POP_JUMP_IF_NOT_NONE": "not_none", "POP_JUMP_FORWARD_IF_NOT_NONE": "not_none",
}
_UNCONDITIONAL_FORWARD = {"JUMP_FORWARD", "JUMP_ABSOLUTE", "JUMP"}


# --- the decompiler ------------------------------------------------------------------------------


@dataclass
class _Block:
    lines: list[str] = field(default_factory=list)
    terminal: bool = False  # ends in return / raise


class _Decompiler:
    def __init__(self, instrs: list[Instr], *, name: str, argnames: list[str], flags: int, argcount: int,
                 posonly: int, kwonly: int, varnames: list[str], names: list[str], freevars: list[str],
                 cellvars: list[str], version: tuple[int, int], has_exception_table: bool):
        self.instrs = instrs
        self.name = name
        self.version = version
        self.index = {ins.offset: i for i, ins in enumerate(instrs)}
        self.locals = set(varnames) | set(freevars) | set(cellvars)
        self.freevars = freevars
        self.taken = self.locals | set(names)
        self.temps = 0
        self.kw_names: tuple[str, ...] | None = None
        self.nonlocals: set[str] = set()
        self.last_line: int | None = None
        self.signature = self._signature(argnames, flags, argcount, posonly, kwonly)
        if has_exception_table:
            raise Unsupported(None, "the code has an exception table (try/with): not in the decompiled subset")
        self.targets = {ins.argval for ins in instrs if ins.opname in _COND_JUMPS or ins.opname in _UNCONDITIONAL_FORWARD
                        or "JUMP" in ins.opname}

    @staticmethod
    def _signature(argnames, flags, argcount, posonly, kwonly) -> str:
        parts = []
        names = list(argnames)
        pos = names[:argcount]
        for i, n in enumerate(pos):
            parts.append(n)
            if posonly and i == posonly - 1:
                parts.append("/")
        rest = names[argcount:]
        kw = rest[:kwonly]
        rest = rest[kwonly:]
        if flags & CO_VARARGS:
            parts.append("*" + rest.pop(0))
        elif kw:
            parts.append("*")
        parts.extend(kw)
        if flags & CO_VARKEYWORDS:
            parts.append("**" + rest.pop(0))
        return ", ".join(parts)

    # -- names ---------------------------------------------------------------------------------

    def fresh(self, prefix: str = "_cs_t") -> str:
        while True:
            name = f"{prefix}{self.temps}"
            self.temps += 1
            if name not in self.taken:
                return name

    def ident(self, name: Any, ins: Instr) -> str:
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            raise Unsupported(ins, f"{name!r} is not a Python identifier")
        return name

    # -- emission helpers ------------------------------------------------------------------------

    def temp(self, out: _Block, expr: str) -> str:
        name = self.fresh()
        out.lines.append(f"{name} = {expr}")
        return name

    def protect(self, out: _Block, stack: list, name: str) -> None:
        """Before `name` is rebound or deleted, values on the stack that read it keep the old value."""
        if any(v == name for v in stack):
            saved = self.temp(out, name)
            stack[:] = [saved if v == name else v for v in stack]

    def atom(self, value: Any, ins: Instr) -> str:
        if value is NULL:
            raise Unsupported(ins, "NULL used as a value")
        if isinstance(value, _Slice):
            raise Unsupported(ins, "a slice used other than as a subscript")
        return value

    @staticmethod
    def pop(stack: list, ins: Instr) -> Any:
        if not stack:
            raise Unsupported(ins, "stack underflow (bytecode not understood)")
        return stack.pop()

    def popn(self, stack: list, n: int, ins: Instr) -> list:
        if n > len(stack):
            raise Unsupported(ins, "stack underflow (bytecode not understood)")
        if n == 0:
            return []
        items = stack[-n:]
        del stack[-n:]
        return items

    def normalize(self, out: _Block, stack: list, ins: Instr | None) -> list:
        """Stack slots into fixed names, so both arms of a branch leave the same stack."""
        slots, targets, values = [], [], []
        for i, v in enumerate(stack):
            if v is NULL:
                slots.append(NULL)
                continue
            if isinstance(v, _Slice):
                raise Unsupported(ins, "a slice across a branch")
            name = f"_cs_s{i}"
            if name in self.taken - {name}:
                raise Unsupported(ins, f"{name} is taken")
            slots.append(name)
            if v != name:
                targets.append(name)
                values.append(v)
        if targets:
            out.lines.append(f"{', '.join(targets)}{',' if len(targets) == 1 else ''} = "
                             f"{', '.join(values)}{',' if len(values) == 1 else ''}")
        return slots

    def _normalize_into(self, block: _Block, stack: list, ins: Instr, indent: int) -> list:
        moves = _Block()
        slots = self.normalize(moves, stack, ins)
        block.lines.extend(INDENT * indent + line for line in moves.lines)
        return slots

    # -- calls -----------------------------------------------------------------------------------

    def call(self, out: _Block, stack: list, ins: Instr, argc: int, kwnames: tuple[str, ...], nulls: bool) -> None:
        args = [self.atom(a, ins) for a in self.popn(stack, argc, ins)]
        if nulls:  # 3.11+: two slots below the arguments: (NULL, callable), (callable, NULL) or (callable, self)
            below, top = self.popn(stack, 2, ins)
            if below is NULL:
                fn = self.atom(top, ins)
            elif top is NULL:
                fn = self.atom(below, ins)
            else:
                fn, args = self.atom(below, ins), [self.atom(top, ins), *args]
        else:
            fn = self.atom(self.pop(stack, ins), ins)
        positional = args[: len(args) - len(kwnames)] if kwnames else args
        keywords = [f"{self.ident(k, ins)}={v}" for k, v in zip(kwnames, args[len(args) - len(kwnames):])] if kwnames else []
        stack.append(self.temp(out, f"{fn}({', '.join(positional + keywords)})"))

    def call_ex(self, out: _Block, stack: list, ins: Instr) -> None:
        kwargs = self.atom(self.pop(stack, ins), ins) if (ins.arg or 0) & 1 else None
        args = self.atom(self.pop(stack, ins), ins)
        if self.version >= (3, 11):
            below, top = self.popn(stack, 2, ins)
            if below is NULL and top is not NULL:
                fn = self.atom(top, ins)
            elif top is NULL and below is not NULL:
                fn = self.atom(below, ins)
            else:
                raise Unsupported(ins, "CALL_FUNCTION_EX without its NULL")
        else:
            fn = self.atom(self.pop(stack, ins), ins)
        parts = [f"*{args}"] + ([f"**{kwargs}"] if kwargs else [])
        stack.append(self.temp(out, f"{fn}({', '.join(parts)})"))

    # -- regions ---------------------------------------------------------------------------------

    def region(self, start: int, end: int, stack: list, out: _Block, indent: int) -> list | None:
        """Decompile instrs[start:end] into out; returns the stack at the end (None when every path returned)."""
        i = start
        pad = INDENT * indent
        while i < end:
            ins = self.instrs[i]
            op = ins.opname
            if ins.line is not None and ins.line != self.last_line:
                self.last_line = ins.line
                if out.lines and out.lines[-1].startswith(f"{pad}# line "):
                    out.lines.pop()  # a line that produced no statement of its own
                out.lines.append(f"{pad}# line {ins.line}")
            if op in _COND_JUMPS:
                after = self.branch(i, end, stack, out, indent)
                if after is None:
                    return None
                i = after
                continue
            if op in _UNCONDITIONAL_FORWARD or op.startswith("JUMP"):
                raise Unsupported(ins, "a jump outside the if/else shapes Dynamo emits")
            block = _Block()
            self.step(ins, stack, block)
            out.lines.extend(pad + line for line in block.lines)
            i += 1
            if block.terminal:
                # What follows is only reachable through a jump into it; the caller handles those.
                rest = [j for j in range(i, end) if self.instrs[j].offset in self.targets]
                if rest:
                    raise Unsupported(self.instrs[rest[0]], "a jump into code after a return")
                return None
        return stack

    def branch(self, i: int, end: int, stack: list, out: _Block, indent: int) -> int | None:
        ins = self.instrs[i]
        pad = INDENT * indent
        kind = _COND_JUMPS[ins.opname]
        target = self.index.get(ins.argval)
        if target is None or target <= i or target > end:
            raise Unsupported(ins, "a conditional jump backwards or out of its block")
        pre = _Block()
        cond = self.atom(self.pop(stack, ins), ins)
        slots = self.normalize(pre, stack, ins)
        out.lines.extend(pad + line for line in pre.lines)
        # The fall-through arm runs when the jump is not taken.
        test = {"false": cond, "true": f"not {cond}", "none": f"{cond} is not None",
                "not_none": f"{cond} is None"}[kind]
        body_end, else_end = target, None
        last = self.instrs[target - 1]
        if last.opname in _UNCONDITIONAL_FORWARD and target - 1 > i:
            j = self.index.get(last.argval)
            if j is None or j < target or j > end:
                raise Unsupported(last, "a jump out of its block")
            body_end, else_end = target - 1, j
        out.lines.append(f"{pad}if {test}:")
        body = _Block()
        after_body = self.region(i + 1, body_end, list(slots), body, indent + 1)
        if after_body is not None:
            after_body = self._normalize_into(body, after_body, ins, indent + 1)
        out.lines.extend(body.lines or [f"{pad}{INDENT}pass"])
        if else_end is None:
            if after_body is not None and len(after_body) != len(slots):
                raise Unsupported(ins, "the two arms leave different stacks")
            stack[:] = slots
            return target
        out.lines.append(f"{pad}else:")
        other = _Block()
        after_else = self.region(target, else_end, list(slots), other, indent + 1)
        if after_else is not None:
            after_else = self._normalize_into(other, after_else, ins, indent + 1)
        out.lines.extend(other.lines or [f"{pad}{INDENT}pass"])
        if after_body is None and after_else is None:
            # Both arms returned: anything up to `end` is reachable only by other jumps.
            rest = [k for k in range(else_end, end) if self.instrs[k].offset in self.targets]
            if rest:
                raise Unsupported(self.instrs[rest[0]], "a jump into code after a return")
            return None
        arms = [a for a in (after_body, after_else) if a is not None]
        if len({len(a) for a in arms}) != 1 or any([x is NULL for x in a] != [x is NULL for x in arms[0]] for a in arms):
            raise Unsupported(ins, "the two arms leave different stacks")
        stack[:] = arms[0]
        return else_end

    # -- one instruction -------------------------------------------------------------------------

    def step(self, ins: Instr, stack: list, out: _Block) -> None:  # noqa: C901 (one case per opcode)
        op, v = ins.opname, self.version
        if op in _SKIP:
            return
        if op in ("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_DEREF", "LOAD_FAST_BORROW"):
            stack.append(self.ident(ins.argval, ins))
        elif op in ("LOAD_FAST_LOAD_FAST", "LOAD_FAST_BORROW_LOAD_FAST_BORROW"):
            a, b = ins.argval
            stack.extend([self.ident(a, ins), self.ident(b, ins)])
        elif op in ("STORE_FAST", "STORE_DEREF"):
            self.store(ins, ins.argval, self.pop(stack, ins), stack, out, deref=op == "STORE_DEREF")
        elif op == "STORE_FAST_STORE_FAST":
            a, b = ins.argval
            self.store(ins, a, self.pop(stack, ins), stack, out)
            self.store(ins, b, self.pop(stack, ins), stack, out)
        elif op == "STORE_FAST_LOAD_FAST":
            a, b = ins.argval
            self.store(ins, a, self.pop(stack, ins), stack, out)
            stack.append(self.ident(b, ins))
        elif op in ("DELETE_FAST", "DELETE_DEREF"):
            name = self.ident(ins.argval, ins)
            self.protect(out, stack, name)
            if op == "DELETE_DEREF" and name in self.freevars:
                self.nonlocals.add(name)
            out.lines.append(f"del {name}")
        elif op == "LOAD_GLOBAL":
            name = self.ident(ins.argval, ins)
            if name in self.locals:
                raise Unsupported(ins, f"global {name} is shadowed by a local of the same name")
            with_null = v >= (3, 11) and (ins.arg or 0) & 1
            if with_null and v < (3, 13):
                stack.append(NULL)
            stack.append(name)
            if with_null and v >= (3, 13):
                stack.append(NULL)
        elif op == "LOAD_CONST":
            try:
                stack.append(const_source(ins.argval))
            except Unsupported as e:
                raise Unsupported(ins, e.reason) from None
        elif op == "RETURN_CONST":
            try:
                out.lines.append(f"return {const_source(ins.argval)}")
            except Unsupported as e:
                raise Unsupported(ins, e.reason) from None
            out.terminal = True
        elif op == "RETURN_VALUE":
            out.lines.append(f"return {self.atom(self.pop(stack, ins), ins)}")
            out.terminal = True
        elif op in ("LOAD_ATTR", "LOAD_METHOD"):
            obj = self.atom(self.pop(stack, ins), ins)
            name = self.ident(ins.argval, ins)
            value = self.temp(out, f"{obj}.{name}")
            pushes_method = op == "LOAD_METHOD" or (v >= (3, 12) and (ins.arg or 0) & 1)
            if pushes_method and v >= (3, 13):
                stack.extend([value, NULL])
            elif pushes_method:
                stack.extend([NULL, value])
            else:
                stack.append(value)
        elif op == "STORE_ATTR":
            obj = self.atom(self.pop(stack, ins), ins)
            value = self.atom(self.pop(stack, ins), ins)
            out.lines.append(f"{obj}.{self.ident(ins.argval, ins)} = {value}")
        elif op == "DELETE_ATTR":
            out.lines.append(f"del {self.atom(self.pop(stack, ins), ins)}.{self.ident(ins.argval, ins)}")
        elif op == "BINARY_SUBSCR":
            key = self.pop(stack, ins)
            container = self.atom(self.pop(stack, ins), ins)
            stack.append(self.temp(out, f"{container}[{self.subscript(key, ins)}]"))
        elif op == "STORE_SUBSCR":
            key = self.pop(stack, ins)
            container = self.atom(self.pop(stack, ins), ins)
            value = self.atom(self.pop(stack, ins), ins)
            out.lines.append(f"{container}[{self.subscript(key, ins)}] = {value}")
        elif op == "DELETE_SUBSCR":
            key = self.pop(stack, ins)
            container = self.atom(self.pop(stack, ins), ins)
            out.lines.append(f"del {container}[{self.subscript(key, ins)}]")
        elif op == "BINARY_SLICE":
            stop, start = self.atom(self.pop(stack, ins), ins), self.atom(self.pop(stack, ins), ins)
            container = self.atom(self.pop(stack, ins), ins)
            stack.append(self.temp(out, f"{container}[{_Slice((start, stop)).subscript()}]"))
        elif op == "STORE_SLICE":
            stop, start = self.atom(self.pop(stack, ins), ins), self.atom(self.pop(stack, ins), ins)
            container = self.atom(self.pop(stack, ins), ins)
            value = self.atom(self.pop(stack, ins), ins)
            out.lines.append(f"{container}[{_Slice((start, stop)).subscript()}] = {value}")
        elif op == "BUILD_SLICE":
            parts = tuple(self.atom(p, ins) for p in self.popn(stack, _count(ins), ins))
            stack.append(_Slice(parts))
        elif op in ("BUILD_TUPLE", "BUILD_LIST", "BUILD_SET"):
            items = [self.atom(x, ins) for x in self.popn(stack, _count(ins), ins)]
            if op == "BUILD_TUPLE":
                expr = "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
            elif op == "BUILD_LIST":
                expr = "[" + ", ".join(items) + "]"
            else:
                expr = "{" + ", ".join(items) + "}" if items else "{*()}"
            stack.append(self.temp(out, expr))
        elif op == "BUILD_MAP":
            items = [self.atom(x, ins) for x in self.popn(stack, 2 * _count(ins), ins)]
            pairs = [f"{items[k]}: {items[k + 1]}" for k in range(0, len(items), 2)]
            stack.append(self.temp(out, "{" + ", ".join(pairs) + "}"))
        elif op == "BUILD_CONST_KEY_MAP":
            keys = self.atom(self.pop(stack, ins), ins)
            values = [self.atom(x, ins) for x in self.popn(stack, _count(ins), ins)]
            stack.append(self._const_key_map(out, keys, values))
        elif op in ("LIST_EXTEND", "LIST_APPEND", "SET_UPDATE", "SET_ADD", "DICT_UPDATE", "DICT_MERGE"):
            item = self.atom(self.pop(stack, ins), ins)
            if ins.arg is None or ins.arg < 1 or ins.arg > len(stack):
                raise Unsupported(ins, "stack underflow (bytecode not understood)")
            target = self.atom(stack[-ins.arg], ins)
            method = {"LIST_EXTEND": "extend", "LIST_APPEND": "append", "SET_UPDATE": "update", "SET_ADD": "add",
                      "DICT_UPDATE": "update", "DICT_MERGE": "update"}[op]
            out.lines.append(f"{target}.{method}({item})")
        elif op == "LIST_TO_TUPLE" or (op == "CALL_INTRINSIC_1" and ins.argrepr == "INTRINSIC_LIST_TO_TUPLE"):
            stack.append(self.temp(out, f"(*{self.atom(self.pop(stack, ins), ins)},)"))
        elif op == "CALL_INTRINSIC_1" and ins.argrepr == "INTRINSIC_UNARY_POSITIVE":
            stack.append(self.temp(out, f"+{self.atom(self.pop(stack, ins), ins)}"))
        elif op == "BINARY_OP" or op in _BINARY_310 or op in _INPLACE_310:
            sym = ins.argrepr if op == "BINARY_OP" else (_BINARY_310.get(op) or _INPLACE_310[op])
            right = self.atom(self.pop(stack, ins), ins)
            left = self.atom(self.pop(stack, ins), ins)
            if sym in _BINARY_OPS:
                stack.append(self.temp(out, f"{left} {sym} {right}"))
            elif sym.endswith("=") and sym[:-1] in _BINARY_OPS:
                name = self.temp(out, left)
                out.lines.append(f"{name} {sym} {right}")
                stack.append(name)
            elif sym == "[]" and v >= (3, 14):
                stack.append(self.temp(out, f"{left}[{right}]"))
            else:
                raise Unsupported(ins, f"binary operator {sym!r}")
        elif op == "COMPARE_OP":
            sym = str(ins.argval)
            if sym.startswith("bool(") and sym.endswith(")"):
                sym = sym[5:-1]  # 3.13: the comparison then converts to bool; `if` does that anyway
            if sym not in _COMPARE:
                raise Unsupported(ins, f"comparison {sym!r}")
            right = self.atom(self.pop(stack, ins), ins)
            left = self.atom(self.pop(stack, ins), ins)
            result = f"{left} {sym} {right}"
            stack.append(self.temp(out, f"not not ({result})" if str(ins.argval).startswith("bool(") else result))
        elif op in ("IS_OP", "CONTAINS_OP"):
            right = self.atom(self.pop(stack, ins), ins)
            left = self.atom(self.pop(stack, ins), ins)
            sym = ("is not" if ins.arg else "is") if op == "IS_OP" else ("not in" if ins.arg else "in")
            stack.append(self.temp(out, f"{left} {sym} {right}"))
        elif op in _UNARY:
            stack.append(self.temp(out, f"{_UNARY[op]}{self.atom(self.pop(stack, ins), ins)}"))
        elif op == "TO_BOOL":
            stack.append(self.temp(out, f"not not {self.atom(self.pop(stack, ins), ins)}"))
        elif op == "KW_NAMES":
            self.kw_names = tuple(ins.argval)
        elif op == "CALL":
            kwnames, self.kw_names = self.kw_names or (), None
            self.call(out, stack, ins, _count(ins), kwnames, nulls=True)
        elif op == "CALL_KW":
            names = self.pop(stack, ins)
            kwnames = self._const_names(names, ins)
            self.call(out, stack, ins, _count(ins), kwnames, nulls=True)
        elif op == "CALL_FUNCTION":
            self.call(out, stack, ins, _count(ins), (), nulls=False)
        elif op == "CALL_FUNCTION_KW":
            kwnames = self._const_names(self.pop(stack, ins), ins)
            self.call(out, stack, ins, _count(ins), kwnames, nulls=False)
        elif op == "CALL_METHOD":
            self.call(out, stack, ins, _count(ins), (), nulls=True)
        elif op == "CALL_FUNCTION_EX":
            self.call_ex(out, stack, ins)
        elif op == "PUSH_NULL":
            stack.append(NULL)
        elif op == "POP_TOP":
            self.pop(stack, ins)  # its value was computed (and any effect done) when it was pushed
        elif op == "COPY":
            if not ins.arg or ins.arg > len(stack):
                raise Unsupported(ins, "stack underflow (bytecode not understood)")
            stack.append(stack[-ins.arg])
        elif op == "SWAP":
            if not ins.arg or ins.arg > len(stack):
                raise Unsupported(ins, "stack underflow (bytecode not understood)")
            stack[-1], stack[-ins.arg] = stack[-ins.arg], stack[-1]
        elif op == "DUP_TOP":
            stack.append(stack[-1] if stack else self.pop(stack, ins))
        elif op == "DUP_TOP_TWO":
            if len(stack) < 2:
                raise Unsupported(ins, "stack underflow (bytecode not understood)")
            stack.extend(stack[-2:])
        elif op in ("ROT_TWO", "ROT_THREE", "ROT_FOUR", "ROT_N"):
            n = {"ROT_TWO": 2, "ROT_THREE": 3, "ROT_FOUR": 4}.get(op, ins.arg or 0)
            if n < 1 or n > len(stack):
                raise Unsupported(ins, "stack underflow (bytecode not understood)")
            stack[-n:] = [stack[-1], *stack[-n:-1]]
        elif op == "UNPACK_SEQUENCE":
            value = self.atom(self.pop(stack, ins), ins)
            count = _count(ins)
            # Each target is stored or popped by a later instruction (a superinstruction stores two): a bigger
            # count is a broken or hostile log, and would cost memory without bound.
            if count > 2 * len(self.instrs):
                raise Unsupported(ins, f"unpacking into {count} targets, more than the code could store")
            names = [self.fresh() for _ in range(count)]
            out.lines.append(f"{', '.join(names)}{',' if len(names) == 1 else ''} = {value}")
            stack.extend(reversed(names))
        elif op == "RAISE_VARARGS" and ins.arg in (1, 2):
            cause = self.atom(self.pop(stack, ins), ins) if ins.arg == 2 else None
            exc = self.atom(self.pop(stack, ins), ins)
            out.lines.append(f"raise {exc}" + (f" from {cause}" if cause else ""))
            out.terminal = True
        else:
            raise Unsupported(ins, f"{op} is not in the decompiled subset")

    def _const_key_map(self, out: _Block, keys: str, values: list[str]) -> str:
        name = self.temp(out, "{}")
        for k, (value) in enumerate(values):
            out.lines.append(f"{name}[{keys}[{k}]] = {value}")
        return name

    def _const_names(self, value: Any, ins: Instr) -> tuple[str, ...]:
        import ast

        try:
            names = ast.literal_eval(value) if isinstance(value, str) else None
        except (ValueError, SyntaxError):
            names = None
        if not isinstance(names, tuple) or not all(isinstance(n, str) for n in names):
            raise Unsupported(ins, "keyword names are not a constant tuple")
        return names

    def subscript(self, key: Any, ins: Instr) -> str:
        return key.subscript() if isinstance(key, _Slice) else self.atom(key, ins)

    def store(self, ins: Instr, name: Any, value: Any, stack: list, out: _Block, deref: bool = False) -> None:
        name = self.ident(name, ins)
        value = self.atom(value, ins)
        self.protect(out, stack, name)
        if deref and name in self.freevars:
            self.nonlocals.add(name)
        out.lines.append(f"{name} = {value}")

    def run(self) -> str:
        body = _Block()
        end_stack = self.region(0, len(self.instrs), [], body, 1)
        if end_stack is not None:
            raise Unsupported(self.instrs[-1] if self.instrs else None, "the code falls off its end")
        head = [f"def {self.name}({self.signature}):"]
        if self.nonlocals:
            head.append(f"{INDENT}nonlocal {', '.join(sorted(self.nonlocals))}")
        return "\n".join(head + body.lines) + "\n"


def _annotated_disassembly(name: str, instrs: list[Instr], problem: Unsupported) -> str:
    bad = problem.instr.offset if problem.instr is not None else None
    lines = [f"# compilescope could not decompile {name}: {problem.reason}",
             "# The disassembly below is the code itself; >> marks where decompiling stopped.", "#"]
    for ins in instrs:
        mark = ">>" if ins.offset == bad else "  "
        arg = "" if ins.arg is None else str(ins.arg)
        lines.append(f"# {mark} {ins.offset:>5} {ins.opname:<28} {arg:>4} {ins.argrepr}".rstrip())
    return "\n".join(lines) + "\n"


def _simplify():
    try:
        from .simplify import simplify
    except ImportError:  # this file was loaded by path (a child interpreter without compilescope): its sibling too
        import importlib.util
        import os

        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "simplify.py")
        spec = importlib.util.spec_from_file_location("_compilescope_decompile_simplify", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        simplify = module.simplify
    return simplify


def decompile_instructions(instrs: list[Instr], *, name: str, argnames: list[str], flags: int = 0,
                           argcount: int | None = None, posonly: int = 0, kwonly: int = 0,
                           varnames: list[str] | None = None, names: list[str] | None = None,
                           freevars: list[str] | None = None, cellvars: list[str] | None = None,
                           version: tuple[int, int] | None = None, has_exception_table: bool = False,
                           simplified: bool = True) -> Decompiled:
    try:
        fn_name = name if name.isidentifier() and not keyword.iskeyword(name) else "_cs_function"
        d = _Decompiler(instrs, name=fn_name, argnames=argnames, flags=flags,
                        argcount=len(argnames) if argcount is None else argcount, posonly=posonly, kwonly=kwonly,
                        varnames=varnames or argnames, names=names or [], freevars=freevars or [],
                        cellvars=cellvars or [], version=version or sys.version_info[:2],
                        has_exception_table=has_exception_table)
        source = d.run()
        compile(source, f"<decompiled {name}>", "exec")  # what it writes always parses
        if simplified:
            source = _simplify()(source)
        return Decompiled(name, source, True)
    except Unsupported as e:
        return Decompiled(name, _annotated_disassembly(name, instrs, e), False, e.reason)
    except SyntaxError as e:
        problem = Unsupported(None, f"the decompiled text does not parse ({e.msg})")
        return Decompiled(name, _annotated_disassembly(name, instrs, problem), False, problem.reason)


def decompile(code, simplified: bool = True) -> Decompiled:
    """Decompile a code object of the running interpreter's version (simplified: temporaries used once inlined)."""
    nargs = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & CO_VARARGS) + bool(code.co_flags & CO_VARKEYWORDS)
    return decompile_instructions(
        instructions_from_code(code), name=code.co_name, argnames=list(code.co_varnames[:nargs]), flags=code.co_flags,
        argcount=code.co_argcount, posonly=code.co_posonlyargcount, kwonly=code.co_kwonlyargcount,
        varnames=list(code.co_varnames), names=list(code.co_names), freevars=list(code.co_freevars),
        cellvars=list(code.co_cellvars), version=sys.version_info[:2],
        has_exception_table=bool(getattr(code, "co_exceptiontable", b"")), simplified=simplified,
    )
