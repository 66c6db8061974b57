"""Custom ops whose body writes into an argument their schema does not declare mutated: compiled results can differ
from eager's, and torch says nothing.

`torch.library.custom_op("mylib::scale", mutates_args=())` promises torch that the op only reads its inputs.
torch.compile believes it: AOTAutograd drops a call whose result is unused (dead code), and Inductor may move a read
of the argument (a pointwise op fused into a later kernel) after the call. A body that writes into the argument
(`x.mul_(2)`, `x[0] = 1`, `np.clip(a, lo, hi, out=a)` on `a = x.numpy()`) then gives other results compiled than
eager, silently.

What the log shows: the op's calls in Dynamo's graph (`torch.ops.mylib.scale.default(l_x_, 2.0)`, under the caller's
`# File:` line); whether AOTAutograd took it for a mutating op (its graphs wrap it in `auto_functionalized`) or a
functional one (a plain call), or dropped the call (no call left, its result unused in Dynamo's graph). The log does
not hold the op's schema nor its body: those are read from the user's source, where the file is on this machine and
agrees with the lines the log quotes from it (the call site), as the source pages read it.

A heuristic on Python's ast, bounded (the file is untrusted: at most MAX_SOURCE_BYTES, only where it mentions
custom_op, a bounded walk of each op's body). It finds `custom_op("ns::name", ...)` as a decorator or called on a
function of the same file, and in that function's body, for each argument annotated as a Tensor, in source order:
its aliases (`a = x.numpy()`, `x.view(...)`, `x.detach()`, `x[...]`, `np.asarray(x)`, `a, b = x.unbind(0)`, `for t in
xs`; any other binding of a name ends its alias: `x = x.clone()`, `x, y = x.clone(), y.clone()`, `for x in ...`,
`with ... as x`, `(x := ...)`), and writes through them: a method call ending in `_` on an alias (`mul_`, `copy_`,
`zero_`), or on a module's path given the alias first (`torch.relu_(x)`, `torch.ops.aten.add_.Tensor(x, 1)`), `out=`,
`inplace=True`, `np.copyto`, assignment to a subscript (`x[...] = v`), augmented assignment (`x += v`), a NumPy array's
in-place methods (`fill`, `sort`). It cannot see: writes in functions the body calls, through aliases kept in
containers or attributes or bound in a comprehension, `x.__setitem__(...)`, nor which branch of an `if` ran. An op
defined in another file than the one that calls it (the log names only the calling file: its stack frames and `# File:`
lines stop at the call) is looked for in the modules the calling file imports, where they lie beside it (the calling file's folder, where
`python prog.py` finds them; the log does not say how the program was run); one found nowhere is listed as
not checked, never passed over. An argument the decorator's literal mutates_args names is not
reported (`"unknown"`: every argument); a non-literal mutates_args is taken as the log shows torch took it.

Ops defined the older way, with a schema string (`lib = Library("mylib", "DEF")`, `lib.define("scale(Tensor x, Tensor
buf) -> Tensor")`, or `torch.library.define("mylib::scale", ...)`), and a function registered as their implementation
(`@torch.library.impl(lib, "scale", ...)`, `@torch.library.impl("mylib::scale", ...)`, `lib.impl("scale", fn, ...)`;
not a Meta kernel) are read the same way: the schema is the declaration (an argument without `!` in its alias
annotation, `Tensor(a!) buf`, is declared read only), and its Tensor arguments are the ones the body is searched for
writes into. A user calls such an op as `torch.ops.mylib.scale(x, buf)`: Dynamo's graph names the packet
(`mylib.scale`), AOTAutograd's the overload (`mylib.scale.default`). Where a definition declares no write but the log
shows AOTAutograd wrapping the op (each branch of an `if` defining it), that definition is not the one that ran.

Ops defined with `torch.library.triton_op` declare mutates_args as custom_op does, but their body only launches Triton
kernels: a write is a `wrap_triton(kernel)[grid](..., x, ...)` launch that passes an argument where the kernel, a
`@triton.jit` function of the same file, stores (`tl.store(x_ptr + offs, ...)`, `tl.atomic_*`), directly or through a
local pointer. AOTAutograd decomposes a triton_op into its kernels' launches and finds their stores itself, so its
calls are neither dropped nor read moved by what mutates_args says. Where the log shows it did (under the call's `#
File:` line, AOTAutograd's `triton_kernel_wrapper_functional` lists the written argument's pointer in
`tensors_to_clone`: recorded on an H200, such a run computed eager's results), the op is told apart
(OpMutations.functionalized: advice for torch.export and the op kept whole, which go by mutates_args); elsewhere
TRITON_WHY says what the source alone shows. A kernel's launch under a call's line also tells a call decomposed from
one dropped, the op's source read or not. Not seen: a kernel of another module, a pointer passed on to a `@triton.jit`
helper, a launch through anything else.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Iterable, Sequence
from dataclasses import field
from operator import itemgetter
from typing import Any, NamedTuple

from ...lazy_regex import lazy_compile
from ...model.ids import compilation_key
from ...model.records import dataclass
from ...model.source_files import NO_FILES, SourceFiles
from ...model.trace import Compile, Trace
from ..cached_lines import CACHE_HITS
from ..fx_sites import GRAPH_ARTIFACT, NODE_MAPPINGS, graph_nodes, op_call_sites
from ..userloc import UserLocation

MAX_SOURCE_BYTES = 4 << 20  # as the source pages: a bigger file is not read
MAX_BODY_NODES = 20_000  # ast nodes walked per op body
# The graphs AOTAutograd logs: where a mutating op is wrapped in auto_functionalized, a functional one called plainly
AOT_GRAPHS = ("aot_inference_graph", "aot_forward_graph", "aot_joint_graph")
# torch's own op namespaces: not the user's custom ops
TORCH_NAMESPACES = frozenset(("aten", "prims", "prim", "higher_order", "inductor", "quantized", "_quantized",
                              "quantized_decomposed", "_c10d_functional", "c10d_functional", "c10d", "_dtensor",
                              "mkldnn", "mkl", "onednn", "profiler", "_inductor_test", "streams", "fsdp", "symm_mem",
                              "_c10d_functional_autograd", "debugprims", "rngprims", "cuda", "triton", "_higher_order"))
# Methods ending in `_` that write no data
_NOT_WRITES = frozenset(("requires_grad_", "share_memory_", "retain_grad_", "record_stream_", "resize_as_"))
# Methods and functions through which a name still refers to the argument's memory
_VIEWS = frozenset(("numpy", "detach", "view", "view_as", "reshape", "flatten", "squeeze", "unsqueeze", "transpose",
                    "permute", "expand", "narrow", "select", "as_strided", "contiguous", "t", "unflatten", "ravel",
                    "asarray", "from_numpy", "swapaxes", "movedim", "unfold", "diagonal", "split", "chunk"))
_VIEW_ATTRIBUTES = frozenset(("data", "T", "mT", "H", "mH", "real", "imag", "flat"))
_NUMPY_IN_PLACE = frozenset(("fill", "sort", "put", "partition", "itemset", "resize"))
# The modules whose in-place functions take the tensor written first (`torch.relu_(x)`, `F.relu_(x)`,
# `torch.Tensor.add_(x, 1)`, `torch.ops.aten.add_.Tensor(x, 1)`): a receiver that is any other name is the thing
# written (`out.copy_(x)`, `stats.update_(x)` write into out and stats, not into x)
_MODULES = frozenset(("torch", "F", "nn", "np", "numpy", "Tensor"))
# Methods whose results are views of their receiver, several at once (`a, b = x.unbind(0)`)
_SPLITS = frozenset(("unbind", "split", "chunk", "tensor_split", "hsplit", "vsplit", "dsplit"))
# What mutates_args says where torch cannot tell: every Tensor argument may be written
UNKNOWN = "unknown"
# How an op is defined (OpSource.form, UndeclaredMutation.form)
CUSTOM_OP = "custom_op"  # torch.library.custom_op(name, mutates_args=...)
TRITON_OP = "triton_op"  # torch.library.triton_op(name, mutates_args=...): its writes are its Triton kernels' stores
DEFINE = "define"  # a schema string: Library(ns, "DEF").define(schema), torch.library.define(name, schema)

# What a finding and a source page say (the names: `"x"`, `"x", "out"`)
WHY = ("torch.compile takes the op for functional: it may move a read of {names} past the call, or drop a call whose "
       "result is unused, so compiled results can differ from eager's")
MOVED = ("the compiled code computes {reads} in {kernels} after the call, so it reads {names} as {op} left it: "
         "compiled results differ from eager's")
DROPPED = ("its result is unused, so the compiled code leaves the call out, and the write with it: compiled results "
           "differ from eager's")
# (Checked on torch 2.13: the fixed program, compiled with the cache of the run before the fix, was served its graphs
# from the cache and still gave the wrong numbers; with an empty cache, eager's.)
ADVICE = ("declare mutates_args={{{names}}}, or write into a new tensor and return it; then compile with an empty cache "
          "(compilescope run --fresh-cache): torch's compile cache ignores mutates_args and serves the graphs compiled "
          "before the fix")


# A schema string's op: the fix is the schema's alias annotation (`{marks}`: "`Tensor(a!) buf`")
DEFINE_ADVICE = "mark the argument written in the schema: {marks}; or write into a new tensor and return it"
# A triton_op: what the log shows and what it does not (torch 2.13's torch/_library/triton.py: AOTAutograd decomposes
# a triton_op into its kernels' launches, and functionalizes each by the stores it finds in the kernel; torch.export
# keeps the op whole; the CUDA log user_triton_kernel_triton_op shows `tensors_to_clone = ['out_ptr']`)
TRITON_WHY = ("the write is a tl.store of the Triton kernel the op launches, as your source reads; the log does not "
              "show it. torch.compile decomposes a triton_op in AOTAutograd and finds its kernels' stores itself, so "
              "the compiled code may keep this write; where the op is kept whole (torch.export, or functorch's "
              "decompose_custom_triton_ops off) torch goes by mutates_args and takes it for functional")
TRITON_ADVICE = "declare mutates_args={{{names}}}, or have the kernel store into a new tensor the op returns"
# A triton_op whose calls' graphs show AOTAutograd found the store (UndeclaredMutation.cloned): recorded on an H200
# (cuda_torch211 triton_op_mutation), the program printed compiled results equal to eager's, declared or not
FOUND = ("AOTAutograd's graphs of {compiles} launch the kernel as triton_kernel_wrapper_functional with {pointers} in "
         "tensors_to_clone: torch.compile found the kernel's store into {names} itself and keeps it, so this write "
         "does not make compiled results differ from eager's. mutates_args still says what torch goes by where the op "
         "is kept whole (torch.export, or functorch's decompose_custom_triton_ops off), which takes it for "
         "functional; the torch.library docs ask mutates_args to name each argument the op writes")

STALE = ("its mutates_args names {names}, yet AOTAutograd's graph of {compiles} takes it for a functional op (no "
         "auto_functionalized{dropped}): that compiled code was served from the compile cache, compiled before the op "
         "declared its write, and torch's cache ignores mutates_args, so the fix is not in the code that ran")
STALE_ADVICE = "compile with an empty cache (compilescope run --fresh-cache, or TORCHINDUCTOR_CACHE_DIR=$(mktemp -d))"
# Where some of the calls were served from the cache, and the source does not say what mutates_args holds (a name)
CACHED = ("; {compiles} came from the compile cache: if mutates_args names {names} now, that code was compiled before "
          "it did")


@dataclass
class MovedRead:
    """A line that reads the written argument before the op's call, whose compiled kernel runs after the call: it
    reads what the op wrote, where eager read the argument as it was."""

    location: UserLocation  # the reading line (the `# File:` comment over its node in Dynamo's graph)
    kernel: str  # the output code's kernel that computes it, called after the op

    def to_json(self) -> dict[str, Any]:
        return {"location": self.location.to_json(), "kernel": self.kernel}


@dataclass
class OpCall:
    """A call of the op in a compiled graph."""

    compile_id: str
    location: UserLocation  # the caller's line (the `# File:` comment over the node)
    dropped: bool = False  # not in AOTAutograd's graphs: its result unused, the call (and its write) left out
    cached: bool = False  # the compile's graphs were served from the compile cache (FX graph or AOTAutograd)
    # Reads of the written argument before the call in Dynamo's graph that the output code runs after it
    moved_reads: list[MovedRead] = field(default_factory=list)
    more_moved_reads: int = 0  # such reads not listed: an op lists MAX_MOVED_READS over its calls

    def to_json(self) -> dict[str, Any]:
        return {"compile_id": self.compile_id, "location": self.location.to_json(), "dropped": self.dropped,
                "cached": self.cached, "moved_reads": [m.to_json() for m in self.moved_reads],
                "more_moved_reads": self.more_moved_reads}


@dataclass
class UndeclaredMutation:
    """A custom op whose body writes into arguments its mutates_args does not name, and its calls in compiled code."""

    op: str  # "mylib::scale"
    function: str  # the Python function that implements it: "scale"
    arguments: list[str]  # the arguments written: ["x"]
    declared: str  # mutates_args as written: "()", "MUTATES"
    defined_at: UserLocation  # the custom_op(...) call (the decorator's line)
    writes: list[UserLocation] = field(default_factory=list)  # each write, its line's code
    calls: list[OpCall] = field(default_factory=list)
    # The source's literal mutates_args names the arguments, yet the log's (cached) graphs call the op as functional:
    # code compiled before the fix, served from the cache
    stale: bool = False
    # What a name given as mutates_args holds, from its module-level assignment (named_value); "" where not known
    declared_value: str = ""
    form: str = CUSTOM_OP  # how the op is defined: CUSTOM_OP, TRITON_OP, DEFINE (declared is then the schema)
    # A triton_op's: the kernel pointers its written arguments are passed as that AOTAutograd's graphs of its calls
    # list in tensors_to_clone ("x_ptr"): torch.compile found the write itself (OpMutations.functionalized)
    cloned: list[str] = field(default_factory=list)

    @property
    def declaration(self) -> str:
        """What declares the op's writes, as the source writes it: `mutates_args=()`, `schema "f(Tensor x) -> Tensor"`."""
        return f"schema {self.declared}" if self.form == DEFINE else f"mutates_args={self.declared}"

    @property
    def compile_ids(self) -> list[str]:
        return list(dict.fromkeys(c.compile_id for c in self.calls))

    @property
    def title(self) -> str:
        args = " and ".join(self.arguments)
        if self.stale:
            return f"{self.op} ran as a functional op from the compile cache, though its mutates_args names {args}"
        if self.form == DEFINE:
            return f"{self.op} writes into {args}, which its schema {self.declared} does not mark written"
        if self.form == TRITON_OP and self.cloned:
            return (f"{self.op}'s Triton kernel writes into {args}, which its mutates_args={self.declared} does not "
                    "declare; torch.compile found the write itself")
        if self.form == TRITON_OP:
            return (f"{self.op} writes into {args} from its Triton kernel, which its mutates_args={self.declared} does "
                    "not declare")
        if self.declared_literal:
            return f"{self.op} writes into {args}, which its mutates_args={self.declared} does not declare"
        # (a name: what it holds, where the source says; the log says torch's compile took it as naming none of args)
        value = f" ({self.declared_value})" if self.declared_value else ""
        if self.all_cached:
            # Every call's code came from the cache, compiled by an earlier run: what the name held then, not what the
            # file (or this run's environment) makes it now
            return (f"{self.op} writes into {args}; the code of {self.cached_ids}, served from the compile cache, calls "
                    f"it as a functional op: its mutates_args={self.declared}{value} did not name {args} when that code "
                    "was compiled; it may now")
        return f"{self.op} writes into {args}, which its mutates_args={self.declared} does not name{value}"

    @property
    def all_cached(self) -> bool:
        """Every compile that calls the op was served from the compile cache: none of this run's compiles read its
        mutates_args (torch's cache keys ignore it)."""
        return bool(self.calls) and all(c.cached for c in self.calls)

    @property
    def declared_literal(self) -> bool:
        """mutates_args written as a literal (`()`, `{"x"}`), not a name or an expression."""
        if len(self.declared) > MAX_VALUE_CHARS:
            return False
        try:
            return _literal_names(ast.parse(self.declared, mode="eval").body) is not None
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False

    @property
    def cached_ids(self) -> str:
        return ", ".join(dict.fromkeys(c.compile_id for c in self.calls if c.cached))

    @property
    def dropped(self) -> bool:
        return any(c.dropped for c in self.calls)

    @property
    def why(self) -> str:
        """Why compiled results differ: a call left out lost its write for sure, a read run after the call read what
        it wrote; otherwise what torch may do."""
        if self.stale:
            return self.assumed
        if self.cloned:
            return FOUND.format(compiles=", ".join(self.compile_ids), pointers=" and ".join(self.cloned),
                                names=" and ".join(self.arguments))
        if self.dropped:
            return DROPPED + self._cached
        moved = [m for c in self.calls for m in c.moved_reads]
        if moved:
            reads = " and ".join(dict.fromkeys(
                f"{m.location.short}{f' ({m.location.code})' if m.location.code else ''}" for m in moved))
            return MOVED.format(reads=reads, kernels=", ".join(dict.fromkeys(m.kernel for m in moved)),
                                names=" and ".join(self.arguments), op=self.op) + self._cached
        return self.assumed

    @property
    def assumed(self) -> str:
        """What torch took the op for, without what a call shows."""
        names = " and ".join(self.arguments)
        if self.stale:
            return STALE.format(names=names, compiles=self.cached_ids,
                                dropped="; the unused call left out" if self.dropped else "")
        if self.form == TRITON_OP:
            return TRITON_WHY
        return WHY.format(names=names) + self._cached

    @property
    def _cached(self) -> str:
        cached = self.cached_ids
        return CACHED.format(compiles=cached, names=" and ".join(self.arguments)) if cached else ""

    @property
    def write_note(self) -> str:
        """What a source page says on a line that writes."""
        args = " and ".join(self.arguments)
        if self.stale:
            return f"writes into {args}: {self.assumed}"
        if self.all_cached and not self.declared_literal:
            return f"writes into {args}, which the code served from the compile cache takes {self.op} as not writing: {self.why}"
        declares = "schema does not mark written" if self.form == DEFINE else "mutates_args does not declare"
        return f"writes into {args}, which {self.op}'s {declares}: {self.why}"

    def call_note(self, call: OpCall) -> str:
        """What a source page says on a line that calls it."""
        args = " and ".join(self.arguments)
        if call.dropped:
            return (f"calls {self.op}, whose result is unused: the compiled code leaves the call out, and its write into "
                    f"{args} with it")
        if self.stale or (call.cached and not self.declared_literal):
            return f"calls {self.op} as a functional op: {self.why if call.moved_reads else self.assumed}"
        return f"calls {self.op}, which writes into {args} undeclared: {self.why if call.moved_reads else self.assumed}"

    def read_note(self, call: OpCall, read: MovedRead) -> str:
        """What a source page says on a line that reads the argument before the call, run after it when compiled."""
        return (f"reads {' and '.join(self.arguments)} before the call of {self.op} at {call.location.short}, but the "
                f"compiled code computes it in {read.kernel} after that call, so it reads what {self.op} wrote")

    @property
    def advice(self) -> str:
        if self.stale:
            return STALE_ADVICE
        if self.form == DEFINE:
            return DEFINE_ADVICE.format(marks=", ".join(f"`Tensor({chr(ord('a') + i)}!) {a}`"
                                                        for i, a in enumerate(self.arguments[:26])))
        names = ", ".join(f'"{a}"' for a in self.arguments)
        return TRITON_ADVICE.format(names=names) if self.form == TRITON_OP else ADVICE.format(names=names)

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "function": self.function, "arguments": self.arguments, "declared": self.declared,
                "declared_value": self.declared_value, "defined_at": self.defined_at.to_json(), "writes": [w.to_json() for w in self.writes],
                "calls": [c.to_json() for c in self.calls], "stale": self.stale, "title": self.title, "why": self.why,
                "advice": self.advice, "form": self.form, "cloned": self.cloned}


# Why an op's source was not read (UnreadSource.why), and what the report adds to it
NOT_READABLE = "was not readable"
CHANGED = "differs from the lines the log quotes of it"
NOT_FOUND = "was not found from its call"
UNREAD_DETAIL = {
    NOT_READABLE: "not on this machine, or no Python file compilescope reads: run it where the program is",
    CHANGED: "the file changed since the run, so its lines are not the ones that ran",
    NOT_FOUND: "neither that file nor a module it imports from beside it defines the op with "
               "torch.library.custom_op, triton_op or a Library's define: an installed package's op, or one registered "
               "at run time",
}


@dataclass
class UnreadSource:
    """A custom op called in compiled code whose source was not read: what it writes is not known."""

    op: str  # "mylib::scale"
    path: str  # the file that calls it, as the log names it
    why: str  # NOT_READABLE, CHANGED, NOT_FOUND

    @property
    def said(self) -> str:
        """"the source of mylib::scale was not readable at /home/u/prog.py"."""
        return f"the source of {self.op} {self.why} at {self.path}"

    @property
    def not_checked(self) -> str:
        """The line the report and the summary show: "mylib::scale: not checked: its source was not readable at
        /home/u/prog.py (...)"."""
        detail = UNREAD_DETAIL.get(self.why)
        return f"{self.op}: not checked: its source {self.why} at {self.path}{f' ({detail})' if detail else ''}"

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "file": self.path, "why": self.why, "said": self.said}


# What a compile's page says of a call AOTAutograd left out, whatever the op's body does (the log alone shows it)
DEAD_CALL = ("AOTAutograd left this call out of the compiled code: torch took the op for functional (as compiled, its "
             "mutates_args named none of its arguments) and its result is unused, and a functional op whose result is "
             "unused is dead code to AOTAutograd")


@dataclass
class DroppedCall:
    """A custom op's call in Dynamo's graph, its result unused, that AOTAutograd's graphs no longer hold: the compiled
    code does not run it."""

    op: str  # "mylib::clamp_np"
    compile_id: str  # the compile whose graphs left it out, as its page is named ("[1/0]")
    location: UserLocation  # the calling line (the node's `# File:` comment)
    checked: bool = False  # the op's source was read
    writes: list[str] = field(default_factory=list)  # the arguments its body writes undeclared, as the source reads

    @property
    def why(self) -> str:
        if self.writes:
            return (f"{DEAD_CALL}; its body writes into {' and '.join(self.writes)}, so that write is lost: compiled "
                    "results differ from eager's")
        if self.checked:
            return f"{DEAD_CALL}; its body, as your source reads, writes into none of its arguments: nothing is lost"
        return f"{DEAD_CALL}; its source was not read, so whether a write into an argument is lost is not known"

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "compile_id": self.compile_id, "location": self.location.to_json(),
                "checked": self.checked, "writes": self.writes, "why": self.why}


@dataclass
class OpMutations:
    """The custom ops called in compiled code whose source writes into an argument torch takes as only read."""

    ops: list[UndeclaredMutation] = field(default_factory=list)
    # The custom ops called whose calling file was not on this machine, or not as the run had it, or that no file
    # read defines: not checked
    unread: list[UnreadSource] = field(default_factory=list)
    # Every call AOTAutograd left out (its result unused, the op taken for functional), whatever the op writes
    dropped: list[DroppedCall] = field(default_factory=list)
    # triton_ops writing undeclared whose calls' graphs show AOTAutograd found the write itself (tensors_to_clone):
    # no result differs for it, so not in ops; what mutates_args should say, for torch.export and the op kept whole
    functionalized: list[UndeclaredMutation] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.ops)

    @property
    def unread_ops(self) -> list[str]:
        """The ops not checked, each once (an op unread in two calling files is listed twice in unread)."""
        return list(dict.fromkeys(u.op for u in self.unread))

    def to_json(self) -> dict[str, Any]:
        return {"ops": [op.to_json() for op in self.ops], "unread": [u.to_json() for u in self.unread],
                "dropped": [d.to_json() for d in self.dropped],
                "functionalized": [op.to_json() for op in self.functionalized]}


# --- the source ---------------------------------------------------------------------------------------------------


@dataclass
class OpSource:
    """What a file's source says of one custom op: its function, what mutates_args names, what the body writes."""

    op: str
    function: str
    declared_text: str
    # the literal's names (mutates_args="unknown": all the arguments); None: not a literal (the log tells how torch
    # took it)
    declared: frozenset[str] | None
    defined_line: int
    writes: list[tuple[str, int]]  # (argument, line)
    declared_value: str = ""  # a name's value, where its module-level assignment says (named_value)
    parameters: list[str] = field(default_factory=list)  # the function's, in order: which argument of a call is which
    form: str = "custom_op"  # how the op is defined: CUSTOM_OP, DEFINE (a schema string), TRITON_OP
    # A triton_op's: each argument its kernels store into -> the kernel parameters its launches pass it as ("x_ptr")
    pointers: dict[str, list[str]] = field(default_factory=dict)


def _is_custom_op(func: ast.expr) -> bool:
    """custom_op(...) or triton_op(...): both declare mutates_args, custom_op's way."""
    return _called_name(func) in (CUSTOM_OP, TRITON_OP)


def _literal_names(node: ast.expr | None) -> frozenset[str] | None:
    """The names of a literal mutates_args (`()`, `{"x"}`, `["x", "y"]`, `"unknown"`: the caller reads it as every
    argument); None where it is no literal."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        # (torch refuses any other string: an op declared so never ran)
        return frozenset((UNKNOWN,)) if node.value == UNKNOWN else None
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        if all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
            return frozenset(e.value for e in node.elts)  # type: ignore[attr-defined]
        return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("set", "tuple", "list") \
            and not node.args and not node.keywords:
        return frozenset()
    return None


def _root(node: ast.expr, aliases: dict[str, tuple[str, bool]]) -> tuple[str, bool] | None:
    """(argument, through NumPy) of an expression that refers to an argument's memory: `x`, `x.numpy()`,
    `x[0].view(-1)`, `np.asarray(x)`; None otherwise."""
    numpy = False
    for _ in range(64):  # (a chain this long is no kernel's: bounded all the same)
        if isinstance(node, ast.Name):
            found = aliases.get(node.id)
            return (found[0], found[1] or numpy) if found else None
        if isinstance(node, (ast.Subscript, ast.NamedExpr)):
            node = node.value
        elif isinstance(node, ast.Attribute) and node.attr in _VIEW_ATTRIBUTES:
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _VIEWS:
            numpy = numpy or node.func.attr in ("numpy", "asarray")
            # `x.numpy()`: the receiver; `np.asarray(x)`, `torch.from_numpy(a)`: the first argument
            receiver = node.func.value
            if node.func.attr in ("asarray", "from_numpy") or (isinstance(receiver, ast.Name) and receiver.id in
                                                                ("np", "numpy", "torch")):
                if not node.args:
                    return None
                node = node.args[0]
            else:
                node = receiver
        else:
            return None
    return None


def _tensor_arguments(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    args = fn.args
    return [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)
            if a.annotation is not None and "Tensor" in ast.unparse(a.annotation)]


def _body_nodes(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    """The body's nodes in source order, not those of functions, lambdas or classes defined in it; bounded."""
    out: list[ast.AST] = []
    stack: list[ast.AST] = list(reversed(fn.body))
    while stack and len(out) < MAX_BODY_NODES:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        out.append(node)
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    # (an assignment's value is read before its target is bound: `a = x.numpy()` visits the Name `a` first)
    return sorted(out, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))


def _module_path(node: ast.expr) -> bool:
    """`torch`, `torch.Tensor`, `F`, `np`, `torch.ops.aten.add_`: a module's (or class's) path, not a local value."""
    for _ in range(16):
        if not isinstance(node, ast.Attribute):
            break
        node = node.value
    return isinstance(node, ast.Name) and node.id in _MODULES


def _in_place(name: str) -> bool:
    return name.endswith("_") and not name.startswith("_") and name not in _NOT_WRITES


def _bound_names(target: ast.expr) -> list[str]:
    """The names a binding's target binds: `x`; `x, (y, *z)`."""
    names: list[str] = []
    stack = [target]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            names.append(node.id)
        elif isinstance(node, (ast.Tuple, ast.List)):
            stack.extend(node.elts)
        elif isinstance(node, ast.Starred):
            stack.append(node.value)
    return names


def body_writes(fn: ast.FunctionDef | ast.AsyncFunctionDef, tensors: list[str] | None = None,
                kernels: dict[str, tuple[list[str], frozenset[str]]] | None = None,
                pointers: dict[str, list[str]] | None = None) -> list[tuple[str, int]]:
    """(argument, line) of each write into a Tensor argument's memory the body makes (the module doc's heuristic).
    tensors: the Tensor arguments where the schema says (a defined op's function has no annotations); kernels: the
    module's Triton kernels (triton_kernel_stores), whose launches write into what they pass a stored pointer;
    pointers, where given, gets for each argument so written the kernels' parameters it is passed as (`x_ptr`)."""
    aliases: dict[str, tuple[str, bool]] = {name: (name, False) for name in (
        _tensor_arguments(fn) if tensors is None else tensors)}
    writes: list[tuple[str, int]] = []
    launchers: dict[str, list[str]] = {}  # a name bound to wrap_triton(kernel) -> the kernels it may launch
    positions: dict[str, dict[str, int]] = {}  # a launched kernel -> where each of its parameters is
    pointed = {(argument, p) for argument, written_as in (pointers or {}).items() for p in written_as}

    def wrote(target: ast.expr, line: int) -> None:
        found = _root(target, aliases)
        if found is not None:
            writes.append((found[0], line))

    def bind(target: ast.expr, value: ast.expr | None, line: int) -> None:
        """`target = value`: a name bound to what refers to an argument's memory is its alias; any other binding of
        a name ends its alias (`x = x.clone()`, `x, y = x.clone(), y.clone()`)."""
        if isinstance(target, ast.Name):
            found = _root(value, aliases) if value is not None else None
            if found is not None:
                aliases[target.id] = found
            else:
                aliases.pop(target.id, None)
        elif isinstance(target, ast.Subscript) or (isinstance(target, ast.Attribute) and target.attr == "data"):
            wrote(target.value, line)
        elif isinstance(target, (ast.Tuple, ast.List)):
            elements = target.elts
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(elements) and not any(
                    isinstance(e, ast.Starred) for e in (*elements, *value.elts)):
                for element, element_value in zip(elements, value.elts):  # (each pair, in order)
                    bind(element, element_value, line)
                return
            # `a, b = x.unbind(0)`: each name a view of x; any other value: none the argument
            split = None
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _SPLITS:
                receiver = value.func.value
                split = _root(value.args[0] if _module_path(receiver) and value.args else receiver, aliases)
            for element in elements:
                if isinstance(element, (ast.Subscript, ast.Attribute)):
                    bind(element, None, line)
            for name in _bound_names(target):
                if split is not None:
                    aliases[name] = split
                else:
                    aliases.pop(name, None)
        elif isinstance(target, ast.Starred):
            bind(target.value, None, line)

    for node in _body_nodes(fn):
        if isinstance(node, ast.Assign):
            if kernels and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                launched = _launched_kernels(node.value, kernels, launchers)
                if launched:
                    launchers[node.targets[0].id] = launched
                else:
                    launchers.pop(node.targets[0].id, None)
            for target in node.targets:
                bind(target, node.value, node.lineno)
        elif isinstance(node, ast.AugAssign):
            target = node.target
            wrote(target.value if isinstance(target, (ast.Subscript, ast.Attribute)) else target, node.lineno)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            bind(node.target, node.value, node.lineno)
        elif isinstance(node, ast.NamedExpr):
            bind(node.target, node.value, node.lineno)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            # `for t in xs:` each t is xs's (a list of tensors, or a tensor's rows); `for x in [x.clone()]:` not x's
            found = _root(node.iter, aliases)
            for name in _bound_names(node.target):
                if found is not None:
                    aliases[name] = found
                else:
                    aliases.pop(name, None)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                for name in _bound_names(item.optional_vars) if item.optional_vars is not None else []:
                    aliases.pop(name, None)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                for name in _bound_names(target):
                    aliases.pop(name, None)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            aliases.pop(node.name, None)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for imported in node.names:
                aliases.pop((imported.asname or imported.name).partition(".")[0], None)
        elif isinstance(node, ast.Call):
            func = node.func
            if kernels and isinstance(func, ast.Subscript):  # `wrap_triton(kernel)[grid](x, out, n)`
                for kernel in _launched_kernels(func.value, kernels, launchers):
                    parameters, stored = kernels[kernel]
                    given = dict(zip(parameters, node.args)) | {k.arg: k.value for k in node.keywords if k.arg}
                    if kernel not in positions:
                        positions[kernel] = {p: i for i, p in enumerate(parameters)}
                    order = positions[kernel]
                    # (what the launch passes, in the kernel's order: not each of the kernel's parameters, which made
                    # launches x parameters; a keyword the kernel does not take is none of its pointers)
                    for parameter in sorted((p for p in given if p in order), key=order.__getitem__):
                        if parameter in stored:
                            wrote(given[parameter], node.lineno)
                            if pointers is not None and (found := _root(given[parameter], aliases)) is not None:
                                if (found[0], parameter) not in pointed:  # (a set: a list's `in` is a scan)
                                    pointed.add((found[0], parameter))
                                    pointers.setdefault(found[0], []).append(parameter)
            if isinstance(func, ast.Attribute):
                name = func.attr
                if _in_place(name):
                    # `x.mul_(2)`: the receiver; `torch.relu_(x)`, `torch.Tensor.add_(x, 1)`: the first argument,
                    # where the receiver is a module's path (`out.copy_(x)`, `stats.update_(x)` do not write into x)
                    if _root(func.value, aliases) is not None:
                        wrote(func.value, node.lineno)
                    elif node.args and _module_path(func.value):
                        wrote(node.args[0], node.lineno)
                elif isinstance(func.value, ast.Attribute) and _in_place(func.value.attr) and node.args \
                        and _module_path(func.value):  # an overload: `torch.ops.aten.add_.Tensor(x, 1)`
                    wrote(node.args[0], node.lineno)
                elif name in _NUMPY_IN_PLACE and (found := _root(func.value, aliases)) is not None and found[1]:
                    writes.append((found[0], node.lineno))
                elif name == "copyto" and node.args:
                    wrote(node.args[0], node.lineno)
            for keyword in node.keywords:
                if keyword.arg == "inplace" and isinstance(keyword.value, ast.Constant) and keyword.value.value is True \
                        and node.args:  # F.relu(x, inplace=True)
                    wrote(node.args[0], node.lineno)
                if keyword.arg == "out":
                    outs = keyword.value.elts if isinstance(keyword.value, (ast.Tuple, ast.List)) else [keyword.value]
                    for out in outs:
                        wrote(out, node.lineno)
    return list(dict.fromkeys(writes))


_WRAPS_TRITON = frozenset(("wrap_triton", "capture_triton"))
# Triton calls that write through their first argument, a pointer
_TRITON_WRITES = frozenset(("store", "atomic_add", "atomic_and", "atomic_cas", "atomic_max", "atomic_min", "atomic_or",
                            "atomic_xchg", "atomic_xor"))


def _launched_kernels(node: ast.expr, kernels: dict[str, tuple[list[str], frozenset[str]]],
                      launchers: dict[str, list[str]]) -> list[str]:
    """The module's Triton kernels an expression launches when subscripted with a grid: `wrap_triton(k)`,
    `torch.library.wrap_triton(k)`, `k` itself, a name bound to one of those, either side of `a if c else b`."""
    if isinstance(node, ast.IfExp):
        return list(dict.fromkeys((*_launched_kernels(node.body, kernels, launchers),
                                   *_launched_kernels(node.orelse, kernels, launchers))))
    if isinstance(node, ast.Call) and node.args and (
            (isinstance(node.func, ast.Name) and node.func.id in _WRAPS_TRITON)
            or (isinstance(node.func, ast.Attribute) and node.func.attr in _WRAPS_TRITON)):
        node = node.args[0]
    if isinstance(node, ast.Name):
        if node.id in kernels:
            return [node.id]
        return launchers.get(node.id, [])
    return []


def _is_triton_jit(decorator: ast.expr) -> bool:
    """`@triton.jit`, `@jit`, `@triton.jit(...)`, `@triton.autotune(...)` (over a jit kernel)."""
    func = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in ("jit", "autotune", "heuristics")


def triton_kernel_stores(tree: ast.Module) -> dict[str, tuple[list[str], frozenset[str]]]:
    """The module's `@triton.jit` kernels: name -> (parameters, those the kernel writes through): a parameter named in
    the pointer of a `tl.store(...)` (or `tl.atomic_*`), directly (`out_ptr + offs`) or through a local name bound to
    an expression of it (`ptrs = out_ptr + offs`; a value loaded, `tl.load(...)`, is no pointer). Bounded; a pointer
    passed on to another function (a `@triton.jit` helper) is not followed."""
    found: dict[str, tuple[list[str], frozenset[str]]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.FunctionDef) and any(_is_triton_jit(d) for d in node.decorator_list)):
            continue
        args = node.args
        parameters = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
        refers: dict[str, set[str]] = {p: {p} for p in parameters}
        stored: set[str] = set()

        def named(expression: ast.expr) -> set[str]:
            names: set[str] = set()
            stack: list[ast.AST] = [expression]
            while stack and len(names) < 1000:
                part = stack.pop()
                if isinstance(part, ast.Call) and isinstance(part.func, ast.Attribute) and part.func.attr == "load":
                    continue  # (a value read, not a pointer)
                if isinstance(part, ast.Name):
                    names |= refers.get(part.id, set())
                stack.extend(ast.iter_child_nodes(part))
            return names

        for inner in _body_nodes(node):
            if isinstance(inner, ast.Assign) and len(inner.targets) == 1 and isinstance(inner.targets[0], ast.Name):
                refers[inner.targets[0].id] = named(inner.value)
            elif isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) \
                    and inner.func.attr in _TRITON_WRITES:
                pointer = inner.args[0] if inner.args else next(
                    (k.value for k in inner.keywords if k.arg in ("pointer", "ptr")), None)
                if pointer is not None:
                    stored |= named(pointer)
        # (`BLOCK: tl.constexpr` in `offs` is a size, not a pointer; an int named in the pointer, a stride, is kept:
        # a launch passes no argument tensor there)
        constants = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)
                     if a.annotation is not None and "constexpr" in _unparsed(a.annotation)}
        found[node.name] = (parameters, frozenset(stored & set(parameters) - constants))
    return found


# A schema string's argument: `Tensor(a!) buf`, `float limit=1.0`, `Tensor[] xs`
_SCHEMA_ARGUMENT = re.compile(r"^(?P<type>\S+)\s+(?P<name>[A-Za-z_]\w*)\s*(?:=.*)?$")


def schema_arguments(schema: str) -> list[tuple[str, bool, bool]] | None:
    """(name, a Tensor, marked written: an alias annotation with `!`, `Tensor(a!)`) of each argument of a schema
    string, "scale_into(Tensor x, Tensor(a!) buf) -> Tensor" (or without its name: "(Tensor x) -> Tensor"); None
    where it does not read as one."""
    opened = schema.find("(")
    if opened < 0 or len(schema) > 4000:
        return None
    depth, at, parts = 0, opened + 1, []
    for i in range(opened + 1, len(schema)):
        if schema[i] in "([":
            depth += 1
        elif schema[i] in ")]":
            if depth == 0:
                parts.append(schema[at:i])
                break
            depth -= 1
        elif schema[i] == "," and depth == 0:
            parts.append(schema[at:i])
            at = i + 1
    else:
        return None
    found: list[tuple[str, bool, bool]] = []
    for part in parts:
        part = part.strip()
        if part in ("*", ""):
            continue
        argument = _SCHEMA_ARGUMENT.match(part)
        if argument is None:
            return None
        kind = argument["type"]
        found.append((argument["name"], kind.startswith("Tensor"), "!" in kind))
    return found


def _string(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _called_name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def library_definitions(tree: ast.Module, text: str) -> list[tuple[str, ast.expr, int]]:
    """(op "mylib::scale_into", the schema as written, its line) of each op the module defines with a schema string:
    `lib.define("scale_into(Tensor x, Tensor buf) -> Tensor")` on `lib = torch.library.Library("mylib", "DEF")` (or
    "FRAGMENT"), `torch.library.define("mylib::scale_into", "(Tensor x, Tensor buf) -> Tensor")`. A schema that is no
    string literal (an f-string, a name) is kept as written: the log then tells how torch took it. An overload
    (`scale_into.out(...)`) is not read: the log names its calls by the op's name alone."""
    libraries = _libraries(tree)
    found: list[tuple[str, ast.expr, int]] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _called_name(node.func) == "define" and node.args):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in libraries:
            schema = node.args[0]
            literal = _string(schema)
            name = literal.split("(", 1)[0].strip() if literal is not None else _schema_name(schema)
            if name and "." not in name:
                found.append((f"{libraries[func.value.id]}::{name}", schema, node.lineno))
        elif len(node.args) > 1 and (qualified := _string(node.args[0])) and "::" in qualified \
                and "." not in qualified:
            found.append((qualified, node.args[1], node.lineno))
    return found


def _schema_name(schema: ast.expr) -> str | None:
    """The op's name at the start of an f-string schema (`f"scale_into(Tensor x, {BUF}) -> Tensor"`)."""
    if isinstance(schema, ast.JoinedStr) and schema.values and (first := _string(schema.values[0])) and "(" in first:
        return first.split("(", 1)[0].strip()
    return None


def _libraries(tree: ast.Module) -> dict[str, str]:
    """name -> namespace of each `name = torch.library.Library("mylib", "DEF")` in the module."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Call) and _called_name(node.value.func) == "Library" \
                and (namespace := _string(node.value.args[0] if node.value.args else None)):
            found[node.targets[0].id] = namespace
    return found


def library_impls(tree: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef | str]]:
    """(op, its function or the function's name) of each implementation registered for a defined op:
    `@torch.library.impl(lib, "scale_into", "CPU")`, `@torch.library.impl("mylib::scale_into", "cpu")`,
    `@torch.library.register_kernel("mylib::scale_into", "cpu")`, `lib.impl("scale_into", fn, "CPU")`. Not those
    for Meta or a fake kernel: they compute shapes, not what ran."""
    libraries = _libraries(tree)

    def op_of(call: ast.Call, skip_library: bool) -> str | None:
        args = list(call.args)
        if skip_library and args and isinstance(args[0], ast.Name) and args[0].id in libraries:
            namespace, name = libraries[args[0].id], _string(args[1] if len(args) > 1 else None)
            return f"{namespace}::{name}" if name and "::" not in name and "." not in name else None
        name = _string(args[0] if args else None)
        if name is None or "." in name:
            return None
        if "::" in name:
            return name
        return None

    def for_meta(call: ast.Call, at: int) -> bool:
        key = next((k.value for k in call.keywords if k.arg in ("dispatch_key", "types", "device_types")),
                   call.args[at] if len(call.args) > at else None)
        return "meta" in (_string(key) or "").lower()

    found: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef | str]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and _called_name(decorator.func) in ("impl", "register_kernel"):
                    with_library = bool(decorator.args) and isinstance(decorator.args[0], ast.Name) \
                        and decorator.args[0].id in libraries
                    op = op_of(decorator, with_library)
                    if op is not None and not for_meta(decorator, 2 if with_library else 1):
                        found.append((op, node))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "impl" \
                and isinstance(node.func.value, ast.Name) and node.func.value.id in libraries and len(node.args) > 1 \
                and isinstance(node.args[1], ast.Name) and (name := _string(node.args[0])) and "." not in name \
                and not for_meta(node, 2):
            op = name if "::" in name else f"{libraries[node.func.value.id]}::{name}"
            found.append((op, node.args[1].id))
    return found


def _unparsed(node: ast.expr) -> str:
    """The source of an expression; a stand-in where it is too deep to write back (`-` 600 times over: ast.unparse
    recurses once a level)."""
    try:
        return ast.unparse(node)
    except (RecursionError, MemoryError, ValueError):
        return "(an expression too deeply nested to show)"


def custom_op_sources(text: str) -> dict[str, list[OpSource]]:
    """The custom ops a module's source defines, by name ("mylib::scale"): with torch.library.custom_op or triton_op
    (mutates_args declares the writes), or with a schema string (Library.define: `Tensor(a!)` declares them) and a
    function registered as its implementation. Several where the name is defined more than once (each branch of an
    `if`). {} where it does not parse."""
    if not any(word in text for word in ("custom_op", "triton_op", "define")):
        return {}
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    registrations: list[tuple[ast.Call, ast.FunctionDef | ast.AsyncFunctionDef | str]] = []
    try:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.setdefault(node.name, []).append(node)
                registrations.extend((d, node) for d in node.decorator_list
                                     if isinstance(d, ast.Call) and _is_custom_op(d.func))
            elif isinstance(node, ast.Call) and _is_custom_op(node.func):
                fn = node.args[1] if len(node.args) > 1 else next(
                    (k.value for k in node.keywords if k.arg == "fn"), None)
                if isinstance(fn, ast.Name):
                    registrations.append((node, fn.id))
        kernels = triton_kernel_stores(tree) if "triton_op" in text else {}
        defined = library_definitions(tree, text) if "define" in text else []
        impls = library_impls(tree) if defined else []
    except RecursionError:
        return {}
    found: dict[str, list[OpSource]] = {}
    for call, target in registrations:
        name = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "name"), None)
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str) and "::" in name.value):
            continue
        form = TRITON_OP if _called_name(call.func) == TRITON_OP else CUSTOM_OP
        declared = next((k.value for k in call.keywords if k.arg == "mutates_args"), None)
        names = _literal_names(declared)
        for impl in functions.get(target, []) if isinstance(target, str) else [target]:
            pointers: dict[str, list[str]] = {}
            try:
                writes = body_writes(impl, kernels=kernels if form == TRITON_OP else None, pointers=pointers)
            except RecursionError:
                continue
            value = named_value(tree, text, declared.id, call.lineno) if isinstance(declared, ast.Name) else None
            args = impl.args
            parameters = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
            found.setdefault(name.value, []).append(OpSource(
                name.value, impl.name, _unparsed(declared) if declared is not None else "",
                frozenset(parameters) if names == {UNKNOWN} else names, call.lineno, writes, value or "",
                parameters, form, pointers))
    # (grouped once: a definitions x registrations scan is quadratic in a file of many lib.define/lib.impl pairs)
    impls_of: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for registered, target in impls:
        impls_of.setdefault(registered, []).extend(functions.get(target, []) if isinstance(target, str) else [target])
    writes_of: dict[tuple[int, tuple[str, ...]], list[tuple[str, int]]] = {}
    for op, schema, line in defined:
        _add_defined(found, op, schema, line, text, impls_of.get(op, []), writes_of)
    return found


def _add_defined(found: dict[str, list[OpSource]], op: str, schema: ast.expr, line: int, text: str,
                 impls: list[ast.FunctionDef | ast.AsyncFunctionDef],
                 writes_of: dict[tuple[int, tuple[str, ...]], list[tuple[str, int]]]) -> None:
    """The OpSource of each implementation of an op defined by a schema string. Its arguments are the schema's, in
    order (the call in the graph passes them so), named as the function names them; a schema that is no literal
    declares what the log says (None), its Tensor arguments then those annotated, or every one. writes_of: the
    body_writes of each (function, tensors) already walked (one function registered for many ops is walked once)."""
    literal = _string(schema)
    arguments = schema_arguments(literal) if literal is not None else None
    said = _segment(text, schema) or _unparsed(schema)
    for impl in impls:
        args = impl.args
        parameters = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
        if arguments is not None:
            if len(arguments) != len(parameters):
                continue  # (not this schema's function: torch would have refused the call)
            tensors = [p for p, (_, tensor, _) in zip(parameters, arguments) if tensor]
            declared: frozenset[str] | None = frozenset(p for p, (_, _, w) in zip(parameters, arguments) if w)
        else:
            annotated = _tensor_arguments(impl)
            tensors, declared = annotated or parameters, None
        key = (id(impl), tuple(tensors))
        if key not in writes_of:
            try:
                writes_of[key] = body_writes(impl, tensors)
            except RecursionError:
                continue
        found.setdefault(op, []).append(OpSource(op, impl.name, said, declared, line, list(writes_of[key]), "",
                                                 parameters, DEFINE))


MAX_VALUE_CHARS = 60  # a literal or condition quoted longer is not quoted
MAX_MODULE_NODES = 200_000  # nodes walked to find where a name is bound
_ENV_GETTERS = frozenset(("os.environ.get", "environ.get", "os.getenv", "getenv"))


def _segment(text: str, node: ast.expr) -> str | None:
    """The source's own text of a node (its quotes kept: `{"x"}`, which ast.unparse would write `{'x'}`), bounded: one
    line's, as ast.get_source_segment cuts it (columns are UTF-8 offsets), from the file split once (_utf8_lines), not
    once a node as get_source_segment splits it."""
    end, start, stop = getattr(node, "end_lineno", None), getattr(node, "col_offset", None), \
        getattr(node, "end_col_offset", None)
    if end != node.lineno or start is None or stop is None or stop - start > 4 * MAX_VALUE_CHARS:
        return None  # (several lines, or longer than said: not quoted)
    lines = _utf8_lines(text)
    if not 0 < end <= len(lines):
        return None
    try:
        found = lines[end - 1][start:stop].decode()
    except UnicodeDecodeError:
        return None
    return found if len(found) <= MAX_VALUE_CHARS else None


_LINE_END = re.compile(rb"\r\n|\r|\n")  # where Python ends a line (not at a form feed: ast.get_source_segment's)


@functools.lru_cache(maxsize=1)
def _utf8_lines(text: str) -> list[bytes]:
    """The text's lines in UTF-8, split once for every node of one file (the cache's key: the same str object, whose
    hash Python keeps); one file's at a time."""
    return _LINE_END.split(text.encode(errors="surrogatepass"))


def _env_condition(test: ast.expr) -> str | None:
    """`MUTOP_VARIANT is "fixed"` of `os.environ.get("MUTOP_VARIANT") == "fixed"` (or os.getenv, os.environ[...],
    with != as well); None for any other test."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq))):
        return None
    left, right = test.left, test.comparators[0]
    if not (isinstance(right, ast.Constant) and isinstance(right.value, str) and len(right.value) <= MAX_VALUE_CHARS):
        return None
    variable = None
    if isinstance(left, ast.Call) and ast.unparse(left.func) in _ENV_GETTERS and left.args and len(left.args) <= 2:
        if len(left.args) == 2:
            return None  # (a default equal to the constant would make "unset" match: not said)
        variable = left.args[0]
    elif isinstance(left, ast.Subscript) and ast.unparse(left.value) in ("os.environ", "environ"):
        variable = left.slice
    if not (isinstance(variable, ast.Constant) and isinstance(variable.value, str)
            and len(variable.value) <= MAX_VALUE_CHARS and variable.value.isidentifier()):
        return None
    verb = "is" if isinstance(test.ops[0], ast.Eq) else "is not"
    return f"{variable.value} {verb} {json.dumps(right.value)}"  # (escaped: the file is untrusted)


def named_value(tree: ast.Module, text: str, name: str, before: int) -> str | None:
    """What the module-level name given as mutates_args holds, where the file settles it: bound once, at the top level,
    before the custom_op line, to a literal (`MUTATES = ()`) or a choice of two (`{"x"} if FIXED else ()`, or
    `if FIXED: MUTATES = {"x"} / else: MUTATES = ()`); a condition that is a name bound once to an environment
    comparison is said as that (`MUTOP_VARIANT is "fixed"`): 'line 21: {"x"} if MUTOP_VARIANT is "fixed", else ()'.
    None where anything else binds the name (an import, a function's argument, `global`, a loop)."""
    stores = _bindings(tree, name)
    if stores is None:
        return None
    choice = _top_level_choice(tree, name, before)
    if choice is None or stores != choice[0]:
        return None
    _, lines, chosen, otherwise, test = choice
    chosen_text = _segment(text, chosen) if _literal_names(chosen) is not None else None
    if chosen_text is None:
        return None
    where = f"line {lines[0]}" if len(lines) == 1 else f"lines {lines[0]}-{lines[-1]}"
    if otherwise is None or test is None:
        return f"{where}: {chosen_text}"
    other_text = _segment(text, otherwise) if _literal_names(otherwise) is not None else None
    condition = _condition(tree, text, test)
    if other_text is None or condition is None:
        return None
    return f"{where}: {chosen_text} if {condition}, else {other_text}"


def _condition(tree: ast.Module, text: str, test: ast.expr) -> str | None:
    """The condition said plainly where the environment decides it (directly, or through a name bound once at the top
    level), else as written."""
    if (said := _env_condition(test)) is not None:
        return said
    if isinstance(test, ast.Name) and _bindings(tree, test.id) == 1:
        bound = [s for s in tree.body if isinstance(s, ast.Assign) and len(s.targets) == 1
                 and isinstance(s.targets[0], ast.Name) and s.targets[0].id == test.id]
        if len(bound) == 1 and (said := _env_condition(bound[0].value)) is not None:
            return said
    return _segment(text, test)


def _bindings(tree: ast.Module, name: str) -> int | None:
    """How many times the module binds name as a plain name (an assignment's, augmented assignment's, loop's, with's or
    walrus's target, or del: each a Name not loaded); None where it is bound otherwise (import, a function's argument,
    global) or the module is too big to walk."""
    count = 0
    for walked, node in enumerate(ast.walk(tree)):
        if walked > MAX_MODULE_NODES:
            return None
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            count += 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return None
        elif isinstance(node, ast.alias) and (node.asname or node.name.split(".")[0]) == name:
            return None
        elif isinstance(node, ast.arg) and node.arg == name:
            return None
    return count


def _assigned(statements: list[ast.stmt], name: str) -> list[ast.Assign]:
    return [s for s in statements if isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name) and s.targets[0].id == name]


def _top_level_choice(tree: ast.Module, name: str, before: int
                      ) -> tuple[int, list[int], ast.expr, ast.expr | None, ast.expr | None] | None:
    """(bindings, lines, value, other value, condition) of the one top-level statement binding name before line
    `before`: `name = v`, `name = a if c else b`, or `if c: name = a / else: name = b`; None otherwise."""
    found: list[tuple[int, list[int], ast.expr, ast.expr | None, ast.expr | None]] = []
    for statement in tree.body:
        if statement.lineno >= before:
            break
        if (plain := _assigned([statement], name)):
            value = plain[0].value
            if isinstance(value, ast.IfExp):
                found.append((1, [statement.lineno], value.body, value.orelse, value.test))
            else:
                found.append((1, [statement.lineno], value, None, None))
        elif isinstance(statement, ast.If):
            body, orelse = _assigned(statement.body, name), _assigned(statement.orelse, name)
            if len(body) == 1 and len(orelse) == 1:
                found.append((2, [body[0].lineno, orelse[0].lineno], body[0].value, orelse[0].value, statement.test))
            elif body or orelse:
                return None
    return found[0] if len(found) == 1 else None


# --- the log ------------------------------------------------------------------------------------------------------


def _op_name(graph_op: str) -> str | None:
    """"mylib::scale" of the graph's `mylib.scale.default` (or of the packet `mylib.scale`, called as the user wrote
    `torch.ops.mylib.scale(x)`); None for torch's own ops."""
    parts = graph_op.split(".")
    if len(parts) not in (2, 3) or parts[0] in TORCH_NAMESPACES:
        return None
    return f"{parts[0]}::{parts[1]}"


# An op named in an AOT graph: `torch.ops.mylib.scale.default(`; wrapped where `auto_functionalized(` (torch's
# `torch.ops.higher_order.auto_functionalized_v2(torch.ops.mylib.scale.default, ...`) comes right before it
_AOT_OP = lazy_compile(r"torch\.ops\.(?P<op>[A-Za-z_][\w.]{0,400})")
_WRAPPERS = ("auto_functionalized(", "auto_functionalized_v2(")


def aot_calls(text: str) -> tuple[set[str], set[str]]:
    """The ops an AOT graph's text calls ("mylib.scale.default", and its packet "mylib.scale": Dynamo's graph names the
    packet where the user called it), and those it wraps in auto_functionalized: read once per compile, looked up per
    call site (a search of the whole text per site was quadratic in a graph of many)."""
    called: set[str] = set()
    wrapped: set[str] = set()
    for match in _AOT_OP.finditer(text):
        op = match["op"].rstrip(".")
        names = (op, op.rsplit(".", 1)[0]) if op.count(".") == 2 else (op,)
        called.update(names)
        if text.endswith(_WRAPPERS, max(0, match.start() - 24), match.start()):
            wrapped.update(names)
    return called, wrapped


# A Triton kernel's launch as AOTAutograd functionalizes it, a triton_op's decomposed or one launched directly:
# `torch.ops.higher_order.triton_kernel_wrapper_functional(kernel_idx = 0, ..., kwargs = {'x_ptr': arg0_1, ...},
# tensors_to_clone = ['x_ptr', 'out_ptr'])`, tensors_to_clone the pointers torch found the kernel stores through
# (torch/_higher_order_ops/triton_kernel_wrap.py reads them from the kernel's own code), whose stores it keeps
_KERNEL_WRAPPER = "torch.ops.higher_order.triton_kernel_wrapper_"
_TENSORS_TO_CLONE = "tensors_to_clone = ["
MAX_CLONE_LIST_CHARS = 4000  # a longer list is not read
_QUOTED = lazy_compile(r"'(?P<name>[^'\n]{1,300})'")


def kernel_launches(aot_text: str) -> dict[tuple[str, int], set[str]]:
    """The lines under whose `# File:` comment AOTAutograd's graphs launch a Triton kernel: (file, line) -> the
    pointers tensors_to_clone lists there (empty where none is stored through)."""
    found: dict[tuple[str, int], set[str]] = {}
    if _KERNEL_WRAPPER not in aot_text:
        return found
    for _, expr, site in graph_nodes(aot_text):
        if site is None or not expr.lstrip().startswith(_KERNEL_WRAPPER):
            continue
        stored = found.setdefault((site.path, site.line), set())
        # (the last occurrence, found by rfind and ended by find within a bound: a regex search tried the bounded
        # list at every occurrence, rescanning up to its bound each time where no `]` came)
        start = expr.rfind(_TENSORS_TO_CLONE)
        if start >= 0:
            start += len(_TENSORS_TO_CLONE)
            end = expr.find("]", start, start + MAX_CLONE_LIST_CHARS + 1)
            if end >= 0 and "\n" not in expr[start:end]:
                stored.update(m["name"] for m in _QUOTED.finditer(expr, start, end))
    return found


class _FoundCalls(NamedTuple):
    calls: dict[str, list[OpCall]]  # op -> its calls
    functional: dict[str, bool]  # op -> every AOT graph that has it calls it plainly
    files: set[tuple[str, int, str | None]]  # (path, line, code) of the call sites: the files to read, checked
    # id of a call -> (its compile, Dynamo's graph, the op as the graph names it, which of its calls there)
    where: dict[int, tuple[Compile, str, str, int]]
    left_out: list[DroppedCall]  # the calls AOTAutograd dropped, in the log's order
    # id of a call -> the pointers the Triton kernels AOTAutograd launches under its line are found storing through
    stored_at: dict[int, set[str]]
    # ops the graphs call only as a packet (`torch.ops.ns.op(x)`, no overload): checked only where a file read
    # defines them (a Library's define), else any library's op (torchvision's, fbgemm's) would read as not checked
    packets: set[str]


def _found_calls(trace: Trace) -> _FoundCalls:
    """The custom ops' calls the compiles' graphs hold."""
    # op -> [(call, the compile's AOT graph text)]; ops the log shows AOTAutograd wrapped as mutating
    calls: dict[str, list[OpCall]] = {}
    functional: dict[str, bool] = {}  # op -> every AOT graph that has it calls it plainly
    files: set[tuple[str, int, str | None]] = set()  # (path, line, code) of the call sites: the files to read, checked
    # id of a call -> (its compile, Dynamo's graph, the op as the graph names it, which of its calls there)
    where: dict[int, tuple[Compile, str, str, int]] = {}
    left_out: list[DroppedCall] = []  # the calls AOTAutograd dropped, in the log's order
    # id of a call -> the pointers the Triton kernels AOTAutograd launches under its line are found storing through
    stored_at: dict[int, set[str]] = {}
    overloads: set[str] = set()  # ops called with an overload somewhere (`mylib.scale.default`)
    for entry in trace.sorted_compiles():
        if entry.compile_id is None:
            continue
        graphs = [a for a in entry.artifacts if a.name == GRAPH_ARTIFACT and a.payload is not None]
        aot = "\n".join(trace.payload_text(a.payload) for a in entry.artifacts
                        if a.name in AOT_GRAPHS and a.payload is not None)
        if not graphs or not aot:
            continue  # (no AOTAutograd: nothing took the op for functional; or no graph to place its calls)
        key = compilation_key(entry.compile_id)
        cached = any(a.name in CACHE_HITS for a in entry.artifacts)
        aot_called, aot_wrapped = aot_calls(aot)
        launches = kernel_launches(aot)
        for artifact in graphs[-1:]:  # (a restarted compile's last graph is the one compiled)
            graph = trace.payload_text(artifact.payload)
            seen: dict[str, int] = {}
            for graph_op, site, unused in op_call_sites(graph):
                nth = seen[graph_op] = seen.get(graph_op, -1) + 1
                op = _op_name(graph_op)
                if op is None or site is None:
                    continue
                functional[op] = functional.get(op, True) and graph_op not in aot_wrapped
                if graph_op.count(".") == 2:
                    overloads.add(op)
                # (a triton_op decomposed: its kernels' launches under the call's line, whatever its source says)
                launched = launches.get((site.path, site.line))
                dropped = unused and graph_op not in aot_called and launched is None
                loc = UserLocation(site.path, site.line, site.function, site.code)
                call = OpCall(key, loc, dropped, cached)
                if launched is not None:
                    stored_at[id(call)] = launched
                calls.setdefault(op, []).append(call)
                where[id(call)] = (entry, graph, graph_op, nth)
                files.add((site.path, site.line, site.code))
                if dropped:
                    left_out.append(DroppedCall(op, entry.key, loc))
    return _FoundCalls(calls, functional, files, where, left_out, stored_at, set(calls) - overloads)


def _read_calling_files(found: _FoundCalls, files: SourceFiles) -> tuple[dict[str, list[tuple[str, OpSource]]],
                                                                          dict[str, str], dict[str, str]]:
    """(op -> (file, what its source says), per definition; path -> why its ops were not read; path -> its text, of
    each file read) of the files of the calls."""
    sources: dict[str, list[tuple[str, OpSource]]] = {}
    unread: dict[str, str] = {}
    texts: dict[str, str] = {}
    for path in sorted({p for p, _, _ in found.files}):
        _add_file_ops(path, found.files, sources, unread, texts, files)
    return sources, unread, texts


def _importers(found: _FoundCalls, sources: dict[str, list[tuple[str, OpSource]]], texts: dict[str, str]) -> list[str]:
    """The calling files read whose imports are followed: those of the calls of an op they do not define."""
    return [path for path in sorted({c.location.filename for op, op_calls in found.calls.items() if op not in sources
                                     for c in op_calls}) if path in texts]


def _import_roots(found: _FoundCalls, path: str) -> list[str]:
    """Where the calling file at path's absolute imports are found: script_folders of the compiles calling from it."""
    return script_folders([found.where[id(c)][0] for op_calls in found.calls.values() for c in op_calls
                           if c.location.filename == path], path)


def files_wanted(trace: Trace) -> list[str]:
    """The files op_mutations reads first (_file_text: an absolute path to a .py file): those of the custom ops'
    calls. For ingest to read; then modules_wanted."""
    return sorted({p for p, _, _ in _found_calls(trace).files if os.path.isabs(p) and p.endswith(".py")})


def modules_wanted(trace: Trace, files: SourceFiles) -> list[tuple[str, ...]]:
    """Where op_mutations looks for the modules the calling files import (files: as ingest read files_wanted), each
    module's candidates in Python's order (imported_modules): for ingest to read the first that is a file of each."""
    found = _found_calls(trace)
    if not found.calls:
        return []
    sources, _, texts = _read_calling_files(found, files)
    return [group for path in _importers(found, sources, texts)
            for group in imported_modules(path, texts[path], _import_roots(found, path), files.is_regular_file)]


def package_markers(trace: Trace, files: SourceFiles) -> list[str]:
    """The `__init__.py` files that make the importing calling files' folders packages, from each folder up to its
    import roots (files: as ingest read files_wanted): for ingest to read before modules_wanted, which follows a
    relative import only inside a package."""
    found = _found_calls(trace)
    if not found.calls:
        return []
    sources, _, texts = _read_calling_files(found, files)
    markers: list[str] = []
    for path in _importers(found, sources, texts):
        below = tuple(os.path.join(os.path.normpath(root), "") for root in _import_roots(found, path))
        folder = os.path.dirname(path)
        while os.path.normpath(folder).startswith(below) and len(markers) < MAX_IMPORTS:
            markers.append(os.path.join(folder, "__init__.py"))
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
    return list(dict.fromkeys(markers))


def op_mutations(trace: Trace, files: SourceFiles = NO_FILES) -> OpMutations:
    """files: as ingest read them, with files_wanted and modules_wanted (the files the ops are defined in)."""
    in_graphs = _found_calls(trace)
    calls, functional, where = in_graphs.calls, in_graphs.functional, in_graphs.where
    left_out, stored_at = in_graphs.left_out, in_graphs.stored_at
    if not calls:
        return OpMutations()
    sources, unread, texts = _read_calling_files(in_graphs, files)
    # An op its calling files do not define: in the modules they import, where Python finds them from the script
    for path in _importers(in_graphs, sources, texts):
        for module in imported_files(path, texts[path], files, _import_roots(in_graphs, path)):
            if module not in texts and module not in unread:
                _add_file_ops(module, in_graphs.files, sources, unread, texts, files)
    out = OpMutations()
    compiled: dict[int, CompiledCalls] = {}  # id of a compile -> what its code says of moved reads
    unknown = in_graphs.packets - set(sources)  # (a packet no file read defines: some library's op, not checked)
    calls = {op: op_calls for op, op_calls in calls.items() if op not in unknown}
    left_out = [d for d in left_out if d.op not in unknown]
    for op, op_calls in calls.items():
        if op in sources:
            continue
        for path in dict.fromkeys(c.location.filename for c in op_calls):
            if path in unread:
                out.unread.append(UnreadSource(op, path, unread[path]))
            elif not any(_names_op(text, op) for text in texts.values()):
                # (a file read names it: defined there otherwise than with custom_op, as triton_op or a Library's
                # define, whose schema says what it writes)
                out.unread.append(UnreadSource(op, path, NOT_FOUND))
    decomposed: set[str] = set()  # triton_ops: AOTAutograd runs their body, so a call it no longer holds is no drop
    for op, op_calls in calls.items():
        stored = [stored_at.get(id(c), set()) for c in op_calls]  # (each call's, in order)
        for path, source in sources.get(op, []):
            if source.form == TRITON_OP:
                decomposed.add(op)
                op_calls = [OpCall(c.compile_id, c.location, False, c.cached) for c in op_calls]
                if source.declared is None:
                    continue  # (AOTAutograd decomposes it: how torch took mutates_args, the log does not show)
            declared = source.declared if source.declared is not None else (
                frozenset() if functional.get(op) else None)
            if declared is None:
                continue  # (torch took it for mutating: which arguments, the log does not say)
            if not declared and functional.get(op) is False:
                continue  # (AOTAutograd wrapped it as mutating: not this definition's, which declares no write, ran)
            written = [(arg, line) for arg, line in source.writes if arg not in declared]
            # Declared, yet run as functional: graphs compiled before the declaration, served from the cache (checked
            # with custom_op's mutates_args only)
            stale = not written and source.form == CUSTOM_OP and bool(source.declared) and functional.get(op, False) \
                and any(c.cached for c in op_calls)
            if stale:
                written = [(arg, line) for arg, line in source.writes if arg in declared]
            if not written:
                continue
            lines = read_lines(path, files)
            arguments = list(dict.fromkeys(a for a, _ in written))
            # (a triton_op's calls: no read moved past them is claimed, its kernels run in the op's place)
            told = op_calls if source.form == TRITON_OP else told_calls(trace, op_calls, where, arguments,
                                                                         source.parameters, compiled)
            defined_at = UserLocation(path, source.defined_line, source.function, _code(lines, source.defined_line))
            writes = [UserLocation(path, line, source.function, _code(lines, line))
                      for line in dict.fromkeys(line for _, line in written)]
            if source.form == TRITON_OP:
                # A call under whose line AOTAutograd's kernel launches list each written argument's pointer in
                # tensors_to_clone: torch found the store itself and keeps it, whatever mutates_args says
                pointers = [set(source.pointers.get(a, ())) for a in arguments]
                found = [bool(pointers) and all(p & s for p in pointers) for s in stored]
                if any(found):
                    cloned = sorted({name for p in pointers for s, f in zip(stored, found) if f for name in p & s})
                    out.functionalized.append(UndeclaredMutation(
                        op, source.function, arguments, source.declared_text or "(none)", defined_at, writes,
                        [c for c, f in zip(told, found) if f], False, source.declared_value, source.form, cloned))
                told = [c for c, f in zip(told, found) if not f]
                if not told:
                    continue
            out.ops.append(UndeclaredMutation(
                op, source.function, arguments, source.declared_text or "(none)", defined_at, writes, told, stale,
                source.declared_value, source.form))
    written_by = {op.op: op.arguments for op in (*out.ops, *out.functionalized)}
    out.dropped = [DroppedCall(d.op, d.compile_id, d.location, d.op in sources, written_by.get(d.op, []))
                   for d in left_out if d.op not in decomposed]
    return out


MAX_CALL_CHARS = 4_000  # a graph node's call parsed to see which of its arguments is which
# (Each pattern's indentation is `[ \t]*`, never `\s*`: under re.M, \s spans newlines, so a run of n blank lines in
# the untrusted output code made every search n^2: 80k blank lines, 12 s for one search.)
# The wrapper's `def call(args):` (older torch) or `def call(self, args):` (Runner): the order its kernels run in
_WRAPPER_CALL = re.compile(r"^[ \t]*def call\((?:self, )?args\):", re.M)
# `# Topologically Sorted Source Nodes: [shifted, mul], Original ATen: ...` over a kernel's call: the nodes it computes
_SOURCE_NODES = re.compile(r"^[ \t]*# Topologically Sorted Source Nodes: \[(?P<nodes>[^\]\n]{0,4000})\]", re.M)
_CALLED = re.compile(r"^[ \t]*(?:\w+ = )?(?P<kernel>[A-Za-z_]\w{0,300})(?:\.run)?\(", re.M)


MAX_MOVED_READS = 20  # moved reads listed per op, over its calls; the rest counted (OpCall.more_moved_reads)
_TORCH_OPS = "torch.ops."
# A line of the wrapper that calls something: `kernel.run(`, `kernel(`, `buf3 = extern_kernels.mm(`
_CALL_LINE = re.compile(r"^[ \t]*(?:\w+ = )?(?P<callee>[A-Za-z_][\w.]*)\(", re.M)


def told_calls(trace: Trace, op_calls: list[OpCall], where: dict[int, tuple[Compile, str, str, int]],
               arguments: list[str], parameters: list[str], compiled: dict[int, CompiledCalls]) -> list[OpCall]:
    """The op's calls with their moved reads: at most MAX_MOVED_READS listed over all of them, the rest counted.
    `compiled` keeps what each compile's graph and output code say, read once however many calls it has."""
    told: list[OpCall] = []
    room = MAX_MOVED_READS
    for c in op_calls:
        reads: list[MovedRead] = []
        more = 0
        if not c.dropped:
            entry, graph, graph_op, nth = where[id(c)]
            if (found := compiled.get(id(entry))) is None:
                found = compiled[id(entry)] = CompiledCalls(trace, entry, graph)
            reads, more = found.moved_reads(graph_op, nth, arguments, parameters, room)
            room -= len(reads)
        told.append(OpCall(c.compile_id, c.location, c.dropped, c.cached, reads, more))
    return told


class CompiledCalls:
    """What one compile's Dynamo graph and output code say of the reads moved past a custom op's calls, each read once
    (per call it re-parsed the graph, reloaded the provenance JSON and searched the wrapper per earlier node: 1,000
    calls in a graph took 15 s): the graph's nodes, which of them read each name, each kernel's first call and the
    Source Nodes comments of the wrapper; and, per name read, a sweep over its readers in graph order."""

    def __init__(self, trace: Trace, entry: Compile, graph: str) -> None:
        self.nodes = graph_nodes(graph)
        self.trace, self.entry = trace, entry
        self.calls: dict[str, list[int]] = {}  # the op as the graph names it -> its call nodes, in order
        self.readers: dict[str, list[int]] = {}  # a name -> the nodes whose expression reads it, in order
        self.named: dict[str, int] = {}  # a node's name -> its index
        for i, (name, expr, site) in enumerate(self.nodes):
            self.named.setdefault(name, i)
            stripped = expr.lstrip()
            if stripped.startswith(_TORCH_OPS):
                self.calls.setdefault(stripped[len(_TORCH_OPS):].split("(", 1)[0], []).append(i)
            if site is not None:
                for word in set(re.findall(r"\w+", expr)):
                    self.readers.setdefault(word, []).append(i)
        self._wrapper: str | None = None
        self.op_calls: dict[str, list[int]] = {}  # the op as the graph names it -> where the wrapper calls it
        self.kernels: dict[str, list[str]] = {}  # Dynamo's node -> its kernels, by provenance
        self.first_call: dict[str, int] = {}  # a kernel -> where the wrapper first calls it
        self.commented: dict[str, list[tuple[int, str]]] = {}  # a node -> (comment's position, the call's kernel)
        self._latest: dict[int, int | None] = {}  # a node -> the position of its last kernel's call (or comment)
        # a name -> (readers swept, the graph position swept to, (latest position, node) of each sorted)
        self._sweeps: dict[str, tuple[int, int, list[tuple[int, int]]]] = {}

    @property
    def wrapper(self) -> str:
        """The output code after its `def call(...)`, read on first use; "" where there is none."""
        if self._wrapper is None:
            code = next((self.trace.payload_text(a.payload) for a in reversed(self.entry.artifacts)
                         if a.name.startswith("inductor_output_code") and a.payload is not None), "")
            start = _WRAPPER_CALL.search(code)
            self._wrapper = code[start.end():] if start is not None else ""
            if self._wrapper:
                self.kernels = _node_kernels(self.trace, self.entry)
                for call in _CALL_LINE.finditer(self._wrapper):
                    callee = call["callee"]
                    self.first_call.setdefault(callee, call.start())
                    if callee.endswith(".run"):
                        self.first_call.setdefault(callee[:-4], call.start())
                self.commented = _commented_calls(self._wrapper)
        return self._wrapper

    def moved_reads(self, graph_op: str, nth: int, arguments: list[str], parameters: list[str],
                    room: int) -> tuple[list[MovedRead], int]:
        """The nodes of Dynamo's graph that read an argument the op writes before its nth call, whose kernel the
        output code runs after that call (Inductor took the op for functional, so order did not matter to it): each
        such read sees what the op wrote. At most `room` of them, in graph order, and how many more. A node's
        kernel: torch's provenance mappings (Dynamo's node -> post-grad nodes -> the kernel computing them), else
        the `# Topologically Sorted Source Nodes` comment over a call in the wrapper."""
        at = self.calls.get(graph_op, [])
        if nth >= len(at):
            return [], 0
        read = _written_values(self.nodes[at[nth]][1].strip(), arguments, parameters)
        if not read or not self.wrapper:
            return [], 0
        if graph_op not in self.op_calls:
            self.op_calls[graph_op] = _positions(self.wrapper, f"{_TORCH_OPS}{graph_op}(") if graph_op.count(".") == 2 \
                else [m.start() for m in re.finditer(rf"{re.escape(_TORCH_OPS + graph_op)}\.\w+\(", self.wrapper)]
        if nth >= len(self.op_calls[graph_op]):
            return [], 0  # (fewer calls in the wrapper than in the graph: which is which, it does not say)
        op_at = self.op_calls[graph_op][nth]  # (the wrapper calls the op in the graph's order)
        moved: set[int] = set()
        for value in read:
            moved.update(map(itemgetter(1), self._after(value, at[nth], op_at)))
        moved.difference_update(self.named[v] for v in read if v in self.named)  # (the node giving the value)
        ordered = sorted(moved)
        found_reads: list[MovedRead] = []
        for i in ordered[:max(room, 0)]:
            site = self.nodes[i][2]
            assert site is not None  # (only nodes under a `# File:` comment are readers)
            found_reads.append(MovedRead(UserLocation(site.path, site.line, site.function, site.code),
                                         self._kernel_after(self.nodes[i][0], op_at)))
        return found_reads, len(ordered) - len(found_reads)

    def _after(self, value: str, before: int, op_at: int) -> list[tuple[int, int]]:
        """(latest position, node) of the nodes before node `before` that read value, whose kernel is called (or
        commented) after position op_at in the wrapper: the readers swept in graph order into a list sorted by
        latest position, so that each call asks one bisect (calls come in graph order; an earlier one starts over)."""
        readers = self.readers.get(value, [])
        swept, upto, latest = self._sweeps.get(value, (0, -1, []))
        if before < upto:
            swept, latest = 0, []
        while swept < len(readers) and readers[swept] < before:
            if (position := self._latest_of(readers[swept])) is not None:
                insort(latest, (position, readers[swept]))
            swept += 1
        self._sweeps[value] = (swept, before, latest)
        return latest[bisect_right(latest, (op_at, len(self.nodes))):]

    def _latest_of(self, i: int) -> int | None:
        if i not in self._latest:
            name = self.nodes[i][0]
            if name in self.kernels:
                self._latest[i] = max((self.first_call[k] for k in self.kernels[name] if k in self.first_call),
                                      default=None)
            else:  # (no provenance: the wrapper's comments over its calls)
                self._latest[i] = self.commented[name][-1][0] if name in self.commented else None
        return self._latest[i]

    def _kernel_after(self, name: str, op_at: int) -> str:
        """The first of the node's kernels the wrapper calls after op_at (by provenance, else by the comments)."""
        if name in self.kernels:
            return next(k for k in self.kernels[name] if self.first_call.get(k, -1) > op_at)
        commented = self.commented[name]
        return commented[bisect_right(commented, (op_at, chr(0x10FFFF)))][1]


def _written_values(expr: str, arguments: list[str], parameters: list[str]) -> set[str]:
    """The graph's names passed as the written arguments in a call node's expression
    (`torch.ops.mylib.scale.default(l_x_, 2.0)` with parameters [x, factor] and x written: {"l_x_"})."""
    if len(expr) > MAX_CALL_CHARS:
        return set()
    try:
        call = ast.parse(expr, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    if not isinstance(call, ast.Call):
        return set()
    given = {p: a for p, a in zip(parameters, call.args)} | {k.arg: k.value for k in call.keywords if k.arg}
    return {v.id for arg in arguments if isinstance(v := given.get(arg), ast.Name)}


def _node_kernels(trace: Trace, entry: Compile) -> dict[str, list[str]]:
    """Dynamo's node -> the kernels of the output code that compute it, by torch's provenance mappings (preToPost,
    then the kernel's debug handle `triton_poi_fused_add_mul_0:2` -> post-grad nodes); {} where not logged."""
    mapping = next((a for a in reversed(entry.artifacts) if a.name == NODE_MAPPINGS and a.payload is not None), None)
    if mapping is None:
        return {}
    try:
        found = json.loads(trace.payload_text(mapping.payload))
    except (ValueError, RecursionError):
        return {}
    pre_to_post = found.get("preToPost") if isinstance(found, dict) else None
    code_to_post = next((found.get(k) for k in ("cppCodeToPost", "pyCodeToPost") if isinstance(found.get(k), dict)),
                        None) if isinstance(found, dict) else None
    if not isinstance(pre_to_post, dict) or not isinstance(code_to_post, dict):
        return {}
    post_kernels: dict[str, list[str]] = {}
    for handle, posts in code_to_post.items():
        kernel = str(handle).rsplit(":", 1)[0]
        if kernel.startswith("torch.ops.") or not isinstance(posts, list):
            continue  # (an op's call, not a kernel of Inductor's)
        for post in posts:
            post_kernels.setdefault(str(post), []).append(kernel)
    return {str(pre): list(dict.fromkeys(k for post in posts for k in post_kernels.get(str(post), [])))
            for pre, posts in pre_to_post.items() if isinstance(posts, list)}


def _positions(text: str, part: str) -> list[int]:
    """Where part occurs in text, in order."""
    found: list[int] = []
    at = text.find(part)
    while at >= 0:
        found.append(at)
        at = text.find(part, at + 1)
    return found


def _commented_calls(wrapper: str) -> dict[str, list[tuple[int, str]]]:
    """Dynamo's node -> (where the comment is, the kernel of the call under it) of each `# Topologically Sorted Source
    Nodes` comment of the wrapper that names it, in the wrapper's order."""
    calls = [(c.start(), c["kernel"]) for c in _CALLED.finditer(wrapper)
             if c["kernel"] not in ("get_raw_stream", "stream0", "buf", "del")]
    starts = [start for start, _ in calls]
    found: dict[str, list[tuple[int, str]]] = {}
    for comment in _SOURCE_NODES.finditer(wrapper):
        if (under := bisect_left(starts, comment.end())) < len(calls):
            for node in comment["nodes"].split(","):
                found.setdefault(node.strip(), []).append((comment.start(), calls[under][1]))
    return found


def read_lines(path: str, files: SourceFiles) -> list[str] | None:
    """The lines of a .py file as ingest read it (files), where it holds at most MAX_SOURCE_BYTES."""
    read = files.lines(path, MAX_SOURCE_BYTES) if path.endswith(".py") else None
    return list(read) if read is not None else None


def _code(lines: list[str] | None, line: int) -> str | None:
    return lines[line - 1].strip() if lines is not None and 0 < line <= len(lines) else None


def _add_file_ops(path: str, sites: set[tuple[str, int, str | None]], sources: dict[str, list[tuple[str, OpSource]]],
                  unread: dict[str, str], texts: dict[str, str], files: SourceFiles) -> None:
    """Read path (_file_text, checked against the lines the log quotes of it) into texts and the ops it defines into
    sources, or why not into unread."""
    quoted = [(line, code) for p, line, code in sites if p == path and code]
    text, why = _file_text(path, quoted, files)
    if text is None:
        unread[path] = why
        return
    texts[path] = text
    for op, defs in custom_op_sources(text).items():
        sources.setdefault(op, []).extend((path, d) for d in defs)


def _file_text(path: str, quoted: list[tuple[int, str]], files: SourceFiles) -> tuple[str | None, str]:
    """(the file's text, ""), where it is on this machine and every line the log quotes of it agrees with it; else
    (None, why it was not read): NOT_READABLE, or CHANGED (the file changed since the run: nothing is read from it)."""
    lines = read_lines(path, files) if os.path.isabs(path) else None
    if lines is None:
        return None, NOT_READABLE
    if any(line > len(lines) or lines[line - 1].strip() != code for line, code in quoted):
        return None, CHANGED
    return "\n".join(lines), ""


def _names_op(text: str, op: str) -> bool:
    """The text names the op in a string, as a definition does (`triton_op("mylib::scale"`, `"mylib::scale.out"`,
    `Library("mylib", "DEF")`); not in prose (a docstring's `mylib::scale multiplies`)."""
    namespace = op.split("::", 1)[0]
    return any(f"{quote}{name}" in text for quote in "\"'" for name in (op, f"{namespace}{quote}"))


MAX_IMPORTS = 64  # import statements of a calling file followed


def script_folders(compiles: list[Compile], path: str) -> list[str]:
    """Where an absolute import of the calling file at path is found (sys.path's first entry): the folder of the
    script, the file of the outermost `<module>` frame of the compiles' dynamo_start stacks (`python main.py` runs
    main.py's module code first, whatever file the compiled function is in); the calling file's own folder where no
    stack has such a frame."""
    folders: list[str] = []
    for entry in compiles:
        outermost = next((f for f in entry.stack or () if f.name == "<module>"), None)  # (stacks are outermost first)
        if outermost is not None and os.path.dirname(outermost.filename) not in folders:
            folders.append(os.path.dirname(outermost.filename))
    return folders or [os.path.dirname(path)]


def imported_modules(path: str, text: str, roots: Sequence[str] | None = None,
                     is_file: Callable[[str], bool] | None = None) -> list[tuple[str, ...]]:
    """Where the modules a calling file imports (`from mutops import scale`, `import pkg.ops`, `from .ops import
    scale`) may lie, each module's candidates in the order Python's path search takes them: an absolute import in
    roots (sys.path's first entry: the folder of the script `python prog.py` runs, the working folder of `python -m
    pkg.prog`; None: the calling file's own, as where it is the script), a relative one in the calling file's package;
    a module's `.py` or its package's `__init__.py`. A folder above is not looked in (Python does not: a `utils.py`
    there is another program's), nor is a relative import followed outside a package: the script's own (`python
    prog.py` refuses it), or one climbing above its top-level package (each folder climbed must hold an `__init__.py`
    that is_file finds, below a root: package_markers lists them for ingest to read; without is_file, none is).
    Bounded: the file is parsed only where it imports, MAX_IMPORTS statements followed.
    (imported_files: the first of each that is a file.)"""
    if "import" not in text:
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    folder = os.path.dirname(path)
    bases = list(roots) if roots is not None else [folder]
    below = [os.path.join(os.path.normpath(base), "") for base in bases]

    def in_package(candidate: str) -> bool:
        """A package's folder, as a relative import can name: it holds __init__.py and lies below a root (a file in
        a root itself is the script, `__main__`, or a top-level module: neither has a package; one above a root is
        not imported as a package of this program)."""
        return is_file is not None and os.path.normpath(candidate).startswith(tuple(below)) \
            and is_file(os.path.join(candidate, "__init__.py"))

    # (folders to look in, dotted module name) of each import
    modules: list[tuple[tuple[str, ...], str]] = []
    statements = 0
    try:
        for walked, node in enumerate(ast.walk(tree)):
            if walked > MAX_MODULE_NODES or statements >= MAX_IMPORTS:
                break
            if isinstance(node, ast.Import):
                statements += 1
                modules.extend((tuple(bases), alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                statements += 1
                if node.level:  # relative: the calling file's package, `level - 1` folders up
                    package: str | None = folder if in_package(folder) else None
                    for _ in range(node.level - 1):
                        if package is None:
                            break
                        package = os.path.dirname(package)
                        package = package if in_package(package) else None
                    if package is None:
                        continue  # (Python raises ImportError: no known parent package, or beyond the top-level one)
                    looked_in: tuple[str, ...] = (package,)
                else:
                    looked_in = tuple(bases)
                if node.module:
                    modules.append((looked_in, node.module))
                # (`from pkg import ops`, `from . import ops`: a name imported may be a module of the package)
                modules.extend((looked_in, f"{node.module}.{a.name}" if node.module else a.name)
                               for a in node.names if a.name != "*")
    except RecursionError:
        return []
    groups: list[tuple[str, ...]] = []
    for looked_in, module in dict.fromkeys(modules):
        parts = module.split(".")
        if all(part.isidentifier() for part in parts):
            groups.append(tuple(candidate for base in looked_in for candidate in (
                os.path.join(base, *parts) + ".py", os.path.join(base, *parts, "__init__.py"))))
    return groups


def imported_files(path: str, text: str, files: SourceFiles, roots: Sequence[str] | None = None) -> list[str]:
    """The local files of the modules a calling file imports (imported_modules, roots as there): of each, the first
    candidate that is a regular file (files: as ingest read them). What is read of each module is bounded as the
    calling file is (read_lines)."""
    return first_files(path, imported_modules(path, text, roots, files.is_regular_file), files.is_regular_file)


def first_files(path: str, modules: Iterable[Iterable[str]], is_file: Callable[[str], bool]) -> list[str]:
    """Of each module's candidates (imported_modules), the first that is_file says is a regular file, as Python's path
    search takes it; not the importing file itself, each once."""
    found: list[str] = []
    for candidates in modules:
        first = next((candidate for candidate in candidates if is_file(candidate)), None)
        if first is not None and first != path and first not in found:
            found.append(first)
    return found

