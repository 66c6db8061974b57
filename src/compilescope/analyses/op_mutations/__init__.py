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
(`mylib.scale`), AOTAutograd's the overload (`mylib.scale.default`). An overload other than the default, defined by its
own schema (`lib.define("scale.out(Tensor x, *, Tensor(a!) out) -> ()")`, `impl(lib, "scale.out")`) and called so
(`torch.ops.mylib.scale.out(x, out=buf)`: both graphs name `mylib.scale.out`), is an op of its own, "mylib::scale.out".
A call of the packet that torch resolves to such an overload by its arguments (`torch.ops.mylib.scale(x, 2.0,
out=buf)`: Dynamo's graph names the packet) is that overload's where AOTAutograd's graph runs it, and no other
overload of the packet, under the call's `# File:` line; where it runs several there (two calls on one line), or none
(the call left out), which overload ran the log does not say: with other overloads in the source, the call is not
checked (OVERLOAD_NOT_SHOWN), never credited to the default. A call's reads moved past it are looked for at the output
code's call of the overload it ran that holds its place among AOTAutograd's calls of that overload (GraphPlace), not
its place among all calls of the op (an overload called by name, then through its packet, shifted that place); where
its line holds another number of calls of the overload in Dynamo's graph than in AOTAutograd's (one left out), or the
output code another number than AOTAutograd's graph, which call it is the log does not say (OpCall.unplaced).
Where a definition declares no write but the log
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

The package, in the order the analysis runs (each module imports only the ones above it and this file):
  graph_calls.py    the custom ops' calls in the log's graphs, and what AOTAutograd made of each (found_calls)
  op_bodies.py      what an op's body writes into: the ast heuristic above (body_writes), a Triton kernel's stores
  definitions.py    the ops a module's source defines (custom_op_sources), what a name given as mutates_args holds
  calling_files.py  the calling files, read where they agree with the log, and the local modules they import; the
                    files ingest reads for the analysis (files_wanted, package_markers, modules_wanted)
  moved_reads.py    the reads of a written argument a compile's output code runs after the op's call: one compile's
                    graph and output code, read once for all its calls (CompiledCalls)
  analysis.py       op_mutations(): the calls joined with their source; each call's reads moved past it (told_calls)
  __init__.py       what the analysis finds, saved in results (OpMutations, UndeclaredMutation, ...) and its wording
"""

from __future__ import annotations

import ast
from dataclasses import field
from typing import Any

from ...model.records import NamedTuple, dataclass
from ...model.trace import Compile
from ...wording import LISTED, first_listed
from ..user_locations import UserLocation
# What mutates_args says where torch cannot tell: every Tensor argument may be written
UNKNOWN = "unknown"
# How an op is defined (OpSource.form, UndeclaredMutation.form)
CUSTOM_OP = "custom_op"  # torch.library.custom_op(name, mutates_args=...)
TRITON_OP = "triton_op"  # torch.library.triton_op(name, mutates_args=...): its writes are its Triton kernels' stores
DEFINE = "define"  # a schema string: Library(ns, "DEF").define(schema), torch.library.define(name, schema)
MAX_VALUE_CHARS = 60  # a literal or condition quoted longer is not quoted
MAX_MODULE_NODES = 200_000  # nodes walked to find where a name is bound

# What a finding and a source page say (the names: `"x"`, `"x", "out"`)
WHY = ("torch.compile takes the op for functional: it may move a read of {names} past the call, or drop a call whose "
       "result is unused, so compiled results can differ from eager's")
MOVED = ("the compiled code computes {reads} in {kernels} after the call, so it reads {names} as {op} left it: "
         "compiled results differ from eager's")
LEFT_OUT = "its result is unused, so the compiled code leaves the call out, and the write with it"
DROPPED = f"{LEFT_OUT}: compiled results differ from eager's"
# (Checked on torch 2.13: the fixed program, compiled with the cache of the run before the fix, was served its graphs
# from the cache and still gave the wrong numbers; with an empty cache, eager's.)
ADVICE = ("declare mutates_args={{{names}}}, or write into a new tensor and return it; then compile with an empty cache "
          "(compilescope run --fresh-cache): torch's compile cache ignores mutates_args and serves the graphs compiled "
          "before the fix")


# A call whose place among the output code's calls of its overload the log does not say (OpCall.unplaced)
UNPLACED = ("the log does not say which of the compiled code's calls of this overload is this one, so whether a read "
            "of the written argument runs after it is not said")

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

# A triton_op some of whose calls' graphs show AOTAutograd found the store and others' not: the undeclared write,
# told with the calls torch handled (OpCall.store_found), then TRITON_WHY
PARTLY_FOUND = ("AOTAutograd found the kernel's store into {names} itself in {found} of the {calls} calls ({compiles}: "
                "the kernel's launch lists its pointer in tensors_to_clone, and that compiled code keeps the write); "
                "the graphs of {others} show no such store: ")
# The same, said on the line of one call whose graph shows no such store: the counts, the op's finding lists the calls
# (each call's note repeating the op's lists made a line of N calls N times N compile ids)
PARTLY_FOUND_ELSEWHERE = ("AOTAutograd found the kernel's store into {names} itself in {found} of the {calls} calls, "
                          "not in this one: ")
# A call's own note where the op is called in other places as well: what it says of them (counts, never their list)
FOUND_ELSEWHERE = ("torch found the store at this call and keeps it, though not at every call of it ({found} of "
                   "{calls}): ")

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
    # A triton_op's call under whose line AOTAutograd's kernel launch lists the written arguments' pointers in
    # tensors_to_clone: torch found the kernel's store at this call and keeps it
    store_found: bool = False
    # Which of the output code's calls of its overload is this one, the log does not say (GraphPlace.ran_at None, or
    # the output code calls the overload another number of times than AOTAutograd's graph): no read is said moved
    # past it, nor said not to be
    unplaced: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"compile_id": self.compile_id, "location": self.location.to_json(), "dropped": self.dropped,
                "cached": self.cached, "moved_reads": [m.to_json() for m in self.moved_reads],
                "more_moved_reads": self.more_moved_reads, "store_found": self.store_found,
                "unplaced": self.unplaced}

    @property
    def unplaced_note(self) -> str:
        """What a report says of a call it cannot find in the output code ("" where it can)."""
        return UNPLACED if self.unplaced else ""


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
            found = self.store_found_calls
            partly = f"; torch.compile found the write in {found} of its {len(self.calls)} calls only" if found else ""
            return (f"{self.op} writes into {args} from its Triton kernel, which its mutates_args={self.declared} does "
                    f"not declare{partly}")
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
            return literal_names(ast.parse(self.declared, mode="eval").body) is not None
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False

    @property
    def store_found_calls(self) -> int:
        """A triton_op's calls whose launch shows AOTAutograd found the kernel's store (OpCall.store_found): in ops,
        some of them and not all (all: OpMutations.functionalized)."""
        return sum(c.store_found for c in self.calls)

    @property
    def cached_ids(self) -> str:
        """The compiles served from the cache, the first LISTED of them named."""
        return first_listed(list(dict.fromkeys(c.compile_id for c in self.calls if c.cached)))

    @property
    def listed_compile_ids(self) -> str:
        """The compiles that call the op, as a finding names them: the first LISTED, then how many more."""
        return first_listed(self.compile_ids)

    @property
    def listed_calls(self) -> list[OpCall]:
        """The calls a page or the terminal lists, one line each: the first LISTED (the rest: more_calls)."""
        return self.calls[:LISTED]

    @property
    def more_calls(self) -> int:
        return max(0, len(self.calls) - LISTED)

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
            return FOUND.format(compiles=self.listed_compile_ids, pointers=" and ".join(self.cloned),
                                names=" and ".join(self.arguments))
        moved = [m for c in self.calls for m in c.moved_reads]
        if self.dropped and not moved:
            return DROPPED + self._cached
        if moved:
            reads = " and ".join(dict.fromkeys(
                f"{m.location.short}{f' ({m.location.code})' if m.location.code else ''}" for m in moved))
            # (one call left out, others with reads moved past them: both said, as each call's note says its own)
            return (f"{LEFT_OUT}; and " if self.dropped else "") + MOVED.format(
                reads=reads, kernels=", ".join(dict.fromkeys(m.kernel for m in moved)),
                names=" and ".join(self.arguments), op=self.op) + self._cached
        return self.assumed

    @property
    def assumed(self) -> str:
        """What torch took the op for, without what a call shows."""
        names = " and ".join(self.arguments)
        if self.stale:
            return STALE.format(names=names, compiles=self.cached_ids,
                                dropped="; the unused call left out" if self.dropped else "")
        if self.form == TRITON_OP and self.store_found_calls and not self.cloned:
            found = list(dict.fromkeys(c.compile_id for c in self.calls if c.store_found))
            others = list(dict.fromkeys(c.compile_id for c in self.calls if not c.store_found))
            return PARTLY_FOUND.format(found=self.store_found_calls, calls=len(self.calls),
                                       compiles=first_listed(found), others=first_listed(others),
                                       names=names) + TRITON_WHY
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
        """What a source page says on a line that calls it: this call's part only (its compile, its moved reads), as
        a line may hold thousands of calls; the lists of all of them are said once, in the op's finding."""
        args = " and ".join(self.arguments)
        if call.dropped:
            return (f"calls {self.op}, whose result is unused: the compiled code leaves the call out, and its write into "
                    f"{args} with it")
        if call.store_found:
            return (f"calls {self.op}: AOTAutograd's graph launches its kernel here with the pointer of {args} in "
                    f"tensors_to_clone, so "
                    + ("torch found the store at this call and keeps it: no result differs for it; mutates_args should "
                       "still name it for torch.export and the op kept whole" if self.cloned else
                       FOUND_ELSEWHERE.format(found=self.store_found_calls, calls=len(self.calls)) + TRITON_WHY))
        said = self._call_why(call) if call.moved_reads else self._call_assumed(call)
        if call.unplaced:
            said = f"{said}; {UNPLACED}"
        if self.stale or (call.cached and not self.declared_literal):
            return f"calls {self.op} as a functional op: {said}"
        return f"calls {self.op}, which writes into {args} undeclared: {said}"

    def _call_why(self, call: OpCall) -> str:
        """why, of one call whose reads were moved past it: its own reads, its own compile if cached."""
        if self.stale:
            return self._call_assumed(call)
        if self.cloned:
            return self.why  # (its compiles listed LISTED at most: bounded)
        # (not the op's dropped call's words: this call ran, a call left out has no moved reads, and says its own)
        reads = " and ".join(dict.fromkeys(
            f"{m.location.short}{f' ({m.location.code})' if m.location.code else ''}" for m in call.moved_reads))
        return MOVED.format(reads=reads, kernels=", ".join(dict.fromkeys(m.kernel for m in call.moved_reads)),
                            names=" and ".join(self.arguments), op=self.op) + self._call_cached(call)

    def _call_assumed(self, call: OpCall) -> str:
        """assumed, of one call: its own compile where the op's says the cached ones, counts where it lists calls."""
        names = " and ".join(self.arguments)
        if self.stale:
            return STALE.format(names=names, compiles=call.compile_id,
                                dropped="; the unused call left out" if self.dropped else "")
        if self.form == TRITON_OP and self.store_found_calls and not self.cloned:
            return PARTLY_FOUND_ELSEWHERE.format(names=names, found=self.store_found_calls,
                                                 calls=len(self.calls)) + TRITON_WHY
        if self.form == TRITON_OP:
            return TRITON_WHY
        return WHY.format(names=names) + self._call_cached(call)

    def _call_cached(self, call: OpCall) -> str:
        return CACHED.format(compiles=call.compile_id, names=" and ".join(self.arguments)) if call.cached else ""

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
# A call of the packet (`torch.ops.mylib.scale(x, 2.0, out=buf)`) that torch resolves to an overload by its arguments:
# Dynamo's graph names the packet, AOTAutograd's the overload, placed by the call's line only
OVERLOAD_NOT_SHOWN = "calls it through its packet where the log does not show which overload ran"
UNREAD_DETAIL = {
    NOT_READABLE: "not on this machine, or no Python file compilescope reads: run it where the program is",
    CHANGED: "the file changed since the run, so its lines are not the ones that ran",
    NOT_FOUND: "neither that file nor a module it imports from beside it defines the op with "
               "torch.library.custom_op, triton_op or a Library's define: an installed package's op, or one registered "
               "at run time",
    OVERLOAD_NOT_SHOWN: "your source defines other overloads of it; AOTAutograd's graph, which names the overload "
                        "torch resolved, runs several of them under the calling line, or none where the call was left "
                        "out: call each on a line of its own, or call the overload by name",
}


@dataclass
class UnreadSource:
    """A custom op called in compiled code whose source was not read: what it writes is not known."""

    op: str  # "mylib::scale"
    path: str  # the file that calls it, as the log names it
    why: str  # NOT_READABLE, CHANGED, NOT_FOUND

    @property
    def said(self) -> str:
        """"the source of mylib::scale was not readable at /home/u/prog.py"; "/home/u/prog.py calls mylib::scale
        through its packet where ..." (OVERLOAD_NOT_SHOWN)."""
        if self.why == OVERLOAD_NOT_SHOWN:
            return self._packet_call(self.op)
        return f"the source of {self.op} {self.why} at {self.path}"

    @property
    def not_checked(self) -> str:
        """The line the report and the summary show: "mylib::scale: not checked: its source was not readable at
        /home/u/prog.py (...)"."""
        detail = UNREAD_DETAIL.get(self.why)
        said = self._packet_call("it") if self.why == OVERLOAD_NOT_SHOWN else f"its source {self.why} at {self.path}"
        return f"{self.op}: not checked: {said}{f' ({detail})' if detail else ''}"

    def _packet_call(self, op: str) -> str:
        packet = f"torch.ops.{self.op.replace('::', '.', 1)}"
        return f"{self.path} calls {op} through its packet {packet}(...) where the log does not show which overload ran"

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
    checked: bool = False  # the op's source was read (and the call's overload known: OVERLOAD_NOT_SHOWN)
    writes: list[str] = field(default_factory=list)  # the arguments its body writes undeclared, as the source reads
    overload_unknown: bool = False  # not checked for that alone: the source was read, the call's overload is not shown

    @property
    def why(self) -> str:
        if self.writes:
            return (f"{DEAD_CALL}; its body writes into {' and '.join(self.writes)}, so that write is lost: compiled "
                    "results differ from eager's")
        if self.checked:
            return f"{DEAD_CALL}; its body, as your source reads, writes into none of its arguments: nothing is lost"
        unknown = ("the log does not say which of its overloads this call was (its source was read)"
                   if self.overload_unknown else "its source was not read")
        return f"{DEAD_CALL}; {unknown}, so whether a write into an argument is lost is not known"

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


# --- what the classes above need of the source and of the log, read by the modules too --------------------------


def literal_names(node: ast.expr | None) -> frozenset[str] | None:
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


class GraphPlace(NamedTuple):
    """Where a call of an op is in its compile (FoundCalls.where): its node in Dynamo's graph, and which of the
    output code's calls runs it. Dynamo's graph names a call as the user wrote it (the packet `mylib.scale`, or an
    overload `mylib.scale.out`), the output code by the overload torch resolved it to, so the two orders differ where
    a function calls an overload by name and through its packet: the call is matched by its overload, as AOTAutograd's
    graph runs it under the call's `# File:` line, and its place among that graph's calls of the overload."""

    entry: Compile
    graph: str  # Dynamo's graph
    graph_op: str  # the op as Dynamo's graph names the call: "mylib.scale", "mylib.scale.out"
    nth: int  # which of the graph's calls of graph_op it is
    ran: str  # the overload it ran, as AOTAutograd's graph and the output code name it ("mylib.scale.out")
    # Which of AOTAutograd's graph's calls of `ran` it is; None where the log does not say (the call's line holds
    # other calls of the overload than AOTAutograd runs there: one left out, or one whose overload is not shown)
    ran_at: int | None
    ran_calls: int  # how many calls of `ran` AOTAutograd's graph holds: the output code holds as many, or is not read


class FoundCalls(NamedTuple):
    """The custom ops' calls the compiles' graphs hold (graph_calls.found_calls)."""

    calls: dict[str, list[OpCall]]  # op -> its calls
    functional: dict[str, bool]  # op -> every AOT graph that has it calls it plainly
    files: set[tuple[str, int, str | None]]  # (path, line, code) of the call sites: the files to read, checked
    # op -> each of its calls' place in its compile, in the order of calls[op]: by place, not by id(call), which a copy
    # of the memo (Trace.found_once) would not keep
    where: dict[str, list[GraphPlace]]
    left_out: list[DroppedCall]  # the calls AOTAutograd dropped, in the log's order
    # op -> each of its calls' pointers the Triton kernels AOTAutograd launches under its line are found storing
    # through (None: no launch there), in the order of calls[op]
    stored_at: dict[str, list[set[str] | None]]
    # ops the graphs call only as a packet (`torch.ops.ns.op(x)`, no overload): checked only where a file read
    # defines them (a Library's define), else any library's op (torchvision's, fbgemm's) would read as not checked
    packets: set[str]
    # op -> which of its calls (indexes into calls[op]) call the packet where AOTAutograd's graphs do not say which
    # overload ran (graph_calls.aot_overloads): credited to the packet's name, the default's, unless the source
    # defines other overloads of it (analysis.op_mutations: then not checked, UnreadSource.why OVERLOAD_NOT_SHOWN)
    unresolved: dict[str, set[int]]
