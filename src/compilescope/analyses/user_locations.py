"""Where in the user's code something happened: parsed from the text torch writes.

Torch puts user locations in free text (graph break reasons, guard failures, error
messages) as Python traceback lines. These helpers find them; they never guess.
"""

from __future__ import annotations

import ast
import functools
import os
import re
from typing import Any

from ..lazy_regex import lazy_compile
from ..model.trace import Frame
from ..model.records import NamedTuple, dataclass
from ..wording import ordinal, possessive

# `  File "/path/x.py", line 23, in f` (optionally followed by the code on the next line)
# The function name is taken to the end of the line and stripped after: a lazy `.+?\s*$` is
# quadratic on a run of spaces. Line numbers are bounded so int() never sees a huge digit string.
TRACEBACK_FRAME = lazy_compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d{1,9}), in (?P<func>.+)$')
# `# File "/path/x.py", line 23, in f, code: if y.sum() > 0:` (graph-break explanations)
_INLINE_FRAME = lazy_compile(r'File "(?P<file>[^"]+)", line (?P<line>\d{1,9}), in (?P<func>[^,\n]+)(?:, code: (?P<code>.*))?')
# A source as the compiled function's own code names it: L['self'].param_groups[0]['lr'] is self.param_groups[0]['lr']
# (a local), G['lr'] is lr (a global). FRAME_SOURCE.sub(r"\1", source) gives that name.
FRAME_SOURCE = lazy_compile(r"^[LG]\['([^'\n]{1,500})'\]")
# A module's child, parameter or buffer as Dynamo reaches it (`._modules['norm1']`, `._modules['0']`,
# `._parameters['weight']`, `._buffers['running_mean']`): the user wrote `.norm1`, `[0]`, `.weight`, `.running_mean`.
_MODULE_ATTRIBUTE = lazy_compile(r"\._(?:modules|parameters|buffers)\['([^'\n]{1,500})'\]")
# A NumPy array the compiled function takes, as the tensor Dynamo makes of it (torch._dynamo.source.NumpyTensorSource):
# `___from_numpy(L['a'])`, with what is read of it after (`.size()[0]`).
NUMPY_SOURCE = lazy_compile(r"___from_numpy\((?P<source>[^()\n]{1,500})\)")
# A size of that tensor is the array's shape (NumPy's a.size is its element count, a.shape[0] its first size).
_TENSOR_SIZE = lazy_compile(r"\.size\(\)\[(\d{1,9})\]")


def user_source_name(source: str) -> str:
    """A Dynamo source as the user's code names it: L['self']._modules['blocks']._modules['0']._modules['norm1'].eps
    is self.blocks[0].norm1.eps, L['x'].size()[0] is x.size()[0], and the tensor Dynamo made of a NumPy array,
    ___from_numpy(L['a']).size()[0], is a.shape[0]. A name Dynamo made (L['___stack0']) keeps its frame's prefix: the
    user never wrote it (stack_values says it in words). The raw source stays where it is shown as torch wrote it
    (JSON "source" fields)."""
    array = NUMPY_SOURCE.match(source)
    if array is not None:  # (the user's array: `___from_numpy(L['a']).size()[0]` is a.shape[0])
        return user_source_name(array["source"]) + _TENSOR_SIZE.sub(r".shape[\1]", source[array.end():])
    named = source if source.startswith(("L['___", "G['___")) else FRAME_SOURCE.sub(r"\1", source)
    return _MODULE_ATTRIBUTE.sub(lambda m: f"[{m[1]}]" if m[1].isdigit() else f".{m[1]}", named)


# That tensor wherever a text names it (a guard), with a size read of it after.
_NUMPY_IN_TEXT = lazy_compile(r"___from_numpy\((?P<source>[^()\n]{1,500})\)(?:\.size\(\)\[(?P<dim>\d{1,9})\])?")


def numpy_in_words(text: str) -> str:
    """A guard's text with each tensor Dynamo made of a NumPy array the function takes said as the array:
    `check_tensor(___from_numpy(L['a']), ...)` reads `check_tensor(NumPy array a, ...)`, a size of it,
    `___from_numpy(L['a']).size()[0]`, `a.shape[0]` (user_source_name). The text as it is where it names none."""
    def said(m: re.Match[str]) -> str:
        name = user_source_name(m["source"])
        return f"{name}.shape[{m['dim']}]" if m["dim"] is not None else f"NumPy array {name}"

    return _NUMPY_IN_TEXT.sub(said, text)


# A variable a function closes over, as Dynamo reaches it: `G['counter'].__closure__[0].cell_contents` (the innermost
# cell where closures nest: what torch's hint names). Torch names the variable in a hint on the guard's line (torch
# 2.13, guards._get_closure_var_hint): `... in count (HINT: guard on "seen")`, `(HINT: guard on "seen"[0], type int)`.
CLOSURE_CELL = lazy_compile(r"[LG]\[\S{0,500}\.__closure__\[\d{1,4}\]\.cell_contents")
_CLOSURE_HINT = lazy_compile(r'\(HINT: guard on "(?P<name>\w{1,200})"')


def closure_variables(text: str) -> dict[str, str]:
    """The closure variables the guard lines of text name, by their cell: `G['counter'].__closure__[0].cell_contents`
    -> "seen" (from torch's hint on the line; {} where it gives none)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        named = closure_variable(line)
        if named is not None:
            found.setdefault(*named)
    return found


def closure_variable(line: str) -> tuple[str, str] | None:
    """(cell, variable) of the closure variable one guard line names by torch's hint; None where it names none."""
    hint = _CLOSURE_HINT.search(line) if "cell_contents" in line else None
    cell = CLOSURE_CELL.search(line, 0, hint.start()) if hint is not None else None
    return (cell[0], hint["name"]) if hint is not None and cell is not None else None


def name_closures(text: str, closures: dict[str, str]) -> str:
    """text with each closure cell of closures said as its variable: `len(G['counter'].__closure__[0].cell_contents)
    == 2` is `len(seen) == 2`."""
    for cell in sorted(closures, key=len, reverse=True):  # (a nested cell's source holds its outer one's)
        text = text.replace(cell, closures[cell])
    return text


def closure_owner(cell: str) -> str | None:
    """The function whose closure a cell is, in the user's words: `counter` for `G['counter'].__closure__[0]
    .cell_contents`; None for any other source."""
    at = cell.rfind(".__closure__[")
    return user_source_name(cell[:at]) if at > 0 and cell.endswith(".cell_contents") else None


# Only caret lines (`^^^^`, and `~~~^^^~~~` of Python 3.11+) are decoration, not code.
CARETS = lazy_compile(r"^\s*[~^]+\s*$")

# Files that belong to torch / Python, not to the user: any file of a torch package, installed or a source checkout
# (.../pytorch/torch/_logging/..., where PyTorch developers' logs come from), and Python's own library (and what is
# installed into it: a library's code is not the user's either).
_FRAMEWORK_PARTS = ("/lib/python3",)
# An installed package is the folder right after the last site-packages (a venv may itself lie in a folder named
# torch: /opt/torch/.venv/lib/python3.12/site-packages/transformers/...); elsewhere, a source checkout's torch is a
# folder named torch holding one of torch's own folders or modules (not /home/me/torch/project/train.py).
_PACKAGES = lazy_compile(r"[/\\](?:site|dist)-packages[/\\]")
_TORCH_CHECKOUT = lazy_compile(
    r"(?:^|[/\\])torch[/\\](?:_\w|(?:nn|fx|utils|autograd|distributed|cuda|export|optim|profiler|testing|ao|amp|"
    r"jit|backends|onnx|func|compiler|library\.py|overrides\.py|functional\.py|serialization\.py|storage\.py|"
    r"random\.py|types\.py|hub\.py|return_types\.py)(?:[/\\]|$))")


@dataclass
class UserLocation:
    """A line of the user's code: file, line, and when known the function and the line's text."""

    filename: str
    line: int
    function: str | None = None
    code: str | None = None  # the source line, when the log has it

    @property
    def short(self) -> str:
        """`file.py:23`, for tables."""
        return f"{os.path.basename(self.filename)}:{self.line}"

    @property
    def key(self) -> tuple[str, int]:
        return (self.filename, self.line)

    def to_json(self) -> dict[str, Any]:
        return {"filename": self.filename, "line": self.line, "function": self.function, "code": self.code}

    @classmethod
    def from_frame(cls, frame: Frame | dict) -> UserLocation:
        if isinstance(frame, dict):
            frame = Frame.from_json(frame)
        return cls(frame.filename, frame.line, frame.name, frame.loc.strip() if frame.loc else None)


# Python's own library (.../lib/python3.11/inspect.py), not a package installed into it (site-packages).
_PYTHON_LIBRARY = lazy_compile(r"[/\\]lib[/\\]python3\.\d+[/\\](?!(?:site|dist)-packages[/\\])")


def is_python_library_file(filename: str) -> bool:
    """A file of Python's standard library: torch may call it from compiled code (torch 2.14's compiled autograd calls
    inspect.getattr_static), and Dynamo then compiles it like any frame; the user cannot change it."""
    return filename.startswith("<frozen ") or _PYTHON_LIBRARY.search(filename) is not None


def _installed_at(filename: str) -> int | None:
    """Where the installed package's folder starts in filename: after its last site-packages; None: not installed."""
    packages = None
    for packages in _PACKAGES.finditer(filename):
        pass
    return packages.end() if packages is not None else None


@functools.lru_cache(maxsize=4096)  # (asked of every frame of every stack: a log names few files)
def is_torch_file(filename: str) -> bool:
    """A file of torch itself: installed (…/site-packages/torch/…) or a source checkout (…/pytorch/torch/_dynamo/…)."""
    start = _installed_at(filename)
    if start is not None:
        return filename.startswith(("torch/", "torch\\"), start)
    # (A user's file names no folder torch: its pattern, a quarter of a millisecond to compile, is not needed.)
    return ("torch/" in filename or "torch\\" in filename) and _TORCH_CHECKOUT.search(filename) is not None


@functools.lru_cache(maxsize=4096)
def is_triton_file(filename: str) -> bool:
    """A file of Triton as installed (…/site-packages/triton/__init__.py): the compiler torch.compile's GPU kernels and
    a user's own @triton.jit kernels run on, installed with torch. Dynamo traces its helpers inline (the user's
    `triton.cdiv(n, 1024)` becomes nodes under `# File: …/site-packages/triton/__init__.py:68 in cdiv`): its lines are
    no more the user's than torch's are, though it is no model library (transformers) whose code is the model's."""
    start = _installed_at(filename)
    return start is not None and filename.startswith(("triton/", "triton\\"), start)


def is_toolchain_file(filename: str) -> bool:
    """torch's or Triton's: the compiler's code, never the user's nor their model's."""
    return is_torch_file(filename) or is_triton_file(filename)


def is_clipped_torch_file(filename: str) -> bool:
    """A path torch clipped at the front (its guard comments: torch.utils._traceback.shorten_filename keeps what follows
    the folder the file shares with torch's own) that names a file of torch: what is left starts in one of torch's
    folders ("_higher_order_ops/invoke_subgraph.py"). Ask it of a path no stack of the log names in full: a user's file
    clipped so is nearly always named in full by some stack. A bare file name ("functional.py", a user's module run
    from its folder) is no clipped path of torch's: torch's are clipped to a folder and a file."""
    return (not filename.startswith(("/", "\\", "<")) and ("/" in filename or "\\" in filename)
            and _TORCH_CHECKOUT.match("torch/" + filename) is not None)


def is_framework_file(filename: str) -> bool:
    # "<string>", "<eval_with_key>.3": code torch generated, not the user's
    return (filename.startswith("<") or is_torch_file(filename)
            or any(part in filename for part in _FRAMEWORK_PARTS))


def traceback_frames(text: str) -> list[UserLocation]:
    """Every `File "...", line N, in f` frame in text, with the code line that follows it."""
    frames: list[UserLocation] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = TRACEBACK_FRAME.match(line)
        if not m:
            continue
        code = None
        if i + 1 < len(lines):
            nxt = lines[i + 1]
            if nxt.strip() and not TRACEBACK_FRAME.match(nxt) and not CARETS.match(nxt) and nxt.startswith((" ", "\t")):
                code = nxt.strip()
        frames.append(UserLocation(m["file"], int(m["line"]), m["func"].strip(), code))
    return frames


def section(text: str, marker: str) -> str | None:
    """The indented block after the last occurrence of marker (e.g. "User code traceback:")."""
    idx = text.rfind(marker)
    if idx < 0:
        return None
    out: list[str] = []
    for line in text[idx + len(marker):].splitlines()[1:]:
        if line.strip() and not line[0].isspace():
            break
        out.append(line)
    return "\n".join(out)


def last_user_frame(text: str, markers: tuple[str, ...] = ("User code traceback:", "from user code:", "Found from :",
                                                           "User stack trace:")) -> UserLocation | None:
    """The innermost user frame of the first marked section that has one; else of any traceback in text."""
    for marker in markers:
        body = section(text, marker)
        if body:
            frames = [f for f in traceback_frames(body) if not is_framework_file(f.filename)]
            if frames:
                return frames[-1]
    return None


def _is_code(filename: str) -> bool:
    """Neither torch's (nor Triton's) nor Python's own nor generated code: the user's, or a library's they run
    (transformers')."""
    return not filename.startswith("<") and not is_python_library_file(filename) and not is_toolchain_file(filename)


def last_code_frame(text: str, markers: tuple[str, ...]) -> UserLocation | None:
    """The innermost frame of the first marked section that is the user's or a library's code (a transformers
    model's, when no frame is the user's)."""
    for marker in markers:
        body = section(text, marker)
        if body:
            frames = [f for f in traceback_frames(body) if _is_code(f.filename)]
            if frames:
                return frames[-1]
    return None


def inline_frame(text: str) -> UserLocation | None:
    m = _INLINE_FRAME.search(text)
    if not m:
        return None
    return UserLocation(m["file"], int(m["line"]), m["func"].strip(), (m["code"] or "").strip() or None)


def code_origin(filename: str) -> str | None:
    """Whose code a file is, when it is not the user's: what a compile page says of a frame Dynamo compiled there."""
    if not is_framework_file(filename):
        return None
    if is_python_library_file(filename):  # (before the next: "<frozen os>" is Python's too)
        return "Python's library"
    if filename.startswith("<"):
        return "code generated at run time"  # "<string>": e.g. a dataclass's __init__
    return "library code"


def code_owner(filename: str | None) -> str | None:
    """Whose a file is, as a possessive: "torch's", "transformers'" (the installed package it is in), "Python's"; None
    for the user's own code or a file of no package."""
    if not filename:
        return None
    if is_torch_file(filename):
        return "torch's"
    if is_python_library_file(filename):
        return "Python's"
    start = _installed_at(filename)
    package = re.split(r"[/\\]", filename[start:], maxsplit=1)[0] if start is not None else ""
    return possessive(package.removesuffix(".py")) if package.isidentifier() or package.endswith(".py") else None


# A value passed to a compiled function as it is (`x`, `args[1]`, `kwargs['input_ids']`), not one reached through an
# argument (`kwargs['cache'].layers[0].keys`): its caller passed it.
_ARGUMENT = lazy_compile(r"^(?:\w+|args\[\d{1,9}\]|kwargs\[['\"]\w+['\"]\])$")
# A size of it, as a symbol's source names it (`L['args'][1].size()[1]`): the frame's local and the size dropped.
_LOCAL = lazy_compile(r"^L\['([^'\n]{1,500})'\]")
_SIZE_OF = lazy_compile(r"\.size\(\)\[\d{1,6}\]$")


def calls_in(code: str) -> list[ast.Call] | None:
    """The calls a line's text makes, or None where the text is no whole statement (the first line of a call split
    over lines, all a stack holds of it, or one nested past the parser's depth)."""
    try:
        tree = ast.parse(code.strip())
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)]


def passed_by_call(call_code: str | None, value: str, frame_function: str | None = None) -> bool:
    """Whether the user's call (its line's text) may have passed the frame's argument named value: `args[1]` and
    `kwargs['k']` are a wrapper's own arguments, as the call passed them; a named one (`logits`) unless the line is
    whole and each of its calls passes keywords only, none of them that name. A library frame compiled inside the call
    (transformers' loss, called by the model's forward) takes values the library made: `logits`, where the user's line
    is `model(input_ids=ids, labels=ids)`. A positional argument (`cm(x)` into `forward(self, x)`) or a call whose
    text the stack cuts may pass any name. A resume function's arguments (frame_function: Dynamo's
    torch_dynamo_resume_in_loss_at_49) are the locals it carries across a graph break: passed only where the call's
    text names them."""
    name = _SIZE_OF.sub("", _LOCAL.sub(r"\1", value))
    if call_code is None or not name.isidentifier():
        return True
    if (frame_function or "").startswith("torch_dynamo_resume_in_"):
        return re.search(rf"\b{re.escape(name)}\b", call_code) is not None
    calls = calls_in(call_code)
    return not calls or any(call.args or any(kw.arg is None or kw.arg == name for kw in call.keywords)
                            for call in calls)


def placed_at_call(frame_file: str | None, value: str, used_file: str | None, call_code: str | None = None,
                   frame_function: str | None = None) -> bool:
    """Whether the user's line that called a compiled frame places a value better than the line that first used it:
    the frame is a library's (transformers' decorator `wrapped_func` around the model's forward), the value one of its
    arguments as it is (`args[1]`, `kwargs['input_ids']`, or a size of one: `args[1].size()[1]`), and its first use is
    the library's code too, or nowhere the log says. A value reached through an argument (the KV cache's keys) is
    not the caller's: its first use stays, as does a named argument the call's text does not pass (call_code:
    passed_by_call). One rule for recompiles' failed checks and dynamic shapes' symbols."""
    return (frame_file is not None and not is_torch_file(frame_file) and code_origin(frame_file) == "library code"
            and _ARGUMENT.match(_SIZE_OF.sub("", _LOCAL.sub(r"\1", value))) is not None
            and (used_file is None or code_origin(used_file) is not None)
            and passed_by_call(call_code, value, frame_function))


def called_inside_compiled_code(stack: list | None) -> bool:
    """Whether a compiled frame was called by code that was itself running compiled: its stack passes through torch's
    wrapper of a compiled call (eval_frame.py) and, after the last one, through other frames before the compiled one
    (module.py's call of a submodule, made by the compiled model's code). gpt2_train's transformers loss and output
    dataclass __init__, called by GPT2LMHeadModel's compiled forward, against the model's wrapper, the call's own."""
    names = [str(frame.get("filename", "")) if isinstance(frame, dict) else frame.filename for frame in stack or []]
    wrappers = [i for i, name in enumerate(names) if name.replace("\\", "/").endswith("_dynamo/eval_frame.py")
                and is_torch_file(name)]
    return bool(wrappers) and wrappers[-1] < len(names) - 2


def called_at_text(callers: list[UserLocation]) -> str:
    """"prog.py:20, 22": the user's lines that called a frame not their own, in order, a file named once where the
    next lines are in it too ("" for none). Recompiles' and diff's labels of a frame, one wording."""
    shown: list[str] = []
    for loc in callers:
        same_file = shown and loc.filename == callers[0].filename
        shown.append(str(loc.line) if same_file else loc.short)
    return ", ".join(shown)


def last_code_stack_frame(stack: list | None) -> UserLocation | None:
    """The innermost frame of a structured stack that is the user's or a library's code (a transformers model's
    forward, in site-packages)."""
    for frame in reversed(stack or []):
        loc = UserLocation.from_frame(frame)
        if _is_code(loc.filename):
            return loc
    return None


def export_call(stack: list | None) -> UserLocation | None:
    """The user's line that called torch.export (export, draft_export) in a Python stack: the innermost frame outside
    torch's before torch/export/'s first. None where the stack runs through no torch.export code."""
    # (file names first: most stacks run through no torch.export code, and a location is made only for the one found)
    names = [str(frame.get("filename", "")) if isinstance(frame, dict) else frame.filename for frame in stack or []]
    for i, name in enumerate(names):
        if "/torch/export/" in name.replace("\\", "/") and is_torch_file(name):
            caller = next((j for j in range(i - 1, -1, -1) if not is_framework_file(names[j])), None)
            return UserLocation.from_frame(stack[caller]) if stack and caller is not None else None
    return None


def exported_user_frame(stack: list | None) -> UserLocation | None:
    """The innermost frame of the user's code in a Python stack that runs through torch.export first: the model line
    non-strict export was running (it runs forward in Python under its tracer, and logs an empty user stack). None
    outside torch.export (torch.compile's Python stack holds the frame it compiles too, but not the line it traces)."""
    call = export_call(stack)
    found = last_user_stack_frame(stack) if call is not None else None
    return found if found is not None and call is not None and found.key != call.key else None


def last_user_stack_frame(stack: list | None) -> UserLocation | None:
    """The innermost non-framework frame of a structured stack (list of Frame or frame dicts)."""
    for frame in reversed(stack or []):
        loc = UserLocation.from_frame(frame)
        if not is_framework_file(loc.filename):
            return loc
    return None


_CALL_MACHINERY = ("/torch/_dynamo/", "/torch/nn/modules/module.py")


def called_bound(stack: list | None) -> bool | None:
    """How the user's line on a compiled frame's stack called it: True where it called a module (nn.Module's
    _call_impl ran the frame, its forward: the module passed as self, unseen), False where it called the compiled
    function itself, None where anything else ran between (torch's checkpoint(cm, x, t) calls cm itself: the line's
    arguments are not the frame's), no wrapper of torch's, or no line of the user's."""
    names = [(str(frame.get("filename", "")) if isinstance(frame, dict) else frame.filename,
              str(frame.get("name", "")) if isinstance(frame, dict) else frame.name) for frame in stack or []]
    user = next((i for i in range(len(names) - 2, -1, -1) if not is_framework_file(names[i][0])), None)
    if user is None:
        return None
    between = [name.replace("\\", "/") for name, _ in names[user + 1:-1]]
    # (torch's wrapper of the compiled callable ran it: a stack showing none (['<module>', 'loss3'] for a frame an
    # unbound forward's graph break left to run apart) does not say what called it)
    if not any(name.endswith("/torch/_dynamo/eval_frame.py") for name in between) or not all(
            any(part in name for part in _CALL_MACHINERY) for name in between):
        return None
    return names[-1][1] == "forward" and any(function == "_call_impl" for _, function in names[user + 1:-1])


def called_through_torch(stack: list | None) -> bool:
    """Whether only torch's own call machinery (nn.Module's __call__, Dynamo's wrappers; none of them renames a
    keyword) ran between the user's line on a compiled frame's stack and the frame: a module compiled with
    model.compile() shows its _wrapped_call_impl only, which called_bound does not read."""
    names = [(str(frame.get("filename", "")) if isinstance(frame, dict) else frame.filename) for frame in stack or []]
    user = next((i for i in range(len(names) - 2, -1, -1) if not is_framework_file(names[i])), None)
    return user is not None and all(any(part in name.replace("\\", "/") for part in _CALL_MACHINERY)
                                    for name in names[user + 1:-1])


class ArgumentSlot(NamedTuple):
    """Where a frame's argument sits among the frame's own locals (its code's order, the guard tree's
    framelocals_idx), for placing it in a call's arguments. (A NamedTuple: a placement's working, never saved.)"""

    local_index: int  # the argument's local index (framelocals_idx)
    # the frame's local 0 is `self`: a bound call passes it unseen, an unbound one by hand; None: the tree reads no
    # local 0 (a forward that uses nothing of self), so it does not say
    after_self: bool | None
    # (name, local index) of each argument the tree checks as a tensor: a call must pass each (a default is one
    # object, of one size), else something between passed some (functools.partial(cm, t)) and positions shift
    tensors: tuple[tuple[str, int], ...] = ()

    def position(self, bound: bool = False) -> int | None:
        """The argument's position among a call's positional arguments (None: not known). A method's call passes its
        `self` unseen (`cm(x, t)` into `forward(self, x, target)`: target is at 1), a call of the function itself by
        hand (`unbound(net, x, t)`: target at 2). bound: the stack settles it (a module's forward, called by
        nn.Module's __call__). Else nothing does: counting the call's arguments against the locals the guard tree
        reads is off by one either way, a trailing parameter the code never reads being in no tree (`cm(x, t, u)`
        into a bound forward(self, x, target, weight=None) passes as many as an unbound call would), and a defaulted
        one it reads in every tree (`unbound(net, x)` into forward(self, x, target=None) as few as a bound call).
        A local 0 the tree never reads is the module itself where the call is bound and nn.Module ran its forward as
        the module's method (NetSwap.forward(self, x, target), reading nothing of self: x is local 1, at 0), but a
        staticmethod forward(unused, x) reads so too, x at 1: call_argument counts the call's arguments for that."""
        if self.after_self is False:
            return self.local_index
        if bound:
            return self.local_index - 1 if self.local_index > 0 else None
        return None


class CallArgument(NamedTuple):
    """What a call's line passes as one argument of the frame it calls: its text (`t`, `torch.randn(n, 4)`), the
    name where it is one (`t`), and its position among the positional arguments (None: by keyword). (A NamedTuple:
    a placement's working, never saved.)"""

    text: str
    name: str | None
    position: int | None

    @property
    def ordinal(self) -> str:
        """"the first argument", "the keyword argument target"."""
        if self.position is None:
            return "a keyword argument"
        return f"the {ordinal(self.position + 1)} argument"


def _callee_name(call: ast.Call) -> str | None:
    return call.func.id if isinstance(call.func, ast.Name) else call.func.attr if isinstance(call.func, ast.Attribute) \
        else None


def _passes_each(call: ast.Call, slot: ArgumentSlot, bound: bool) -> bool:
    """Whether a whole call passes each tensor argument the frame's tree checks, at its position or by its keyword:
    a call passing fewer (`g(x)` into forward(self, x, target), g a functools.partial of the compiled module) had
    others passed for it, ahead of its own, so its positions are not the frame's. A `**` splat may pass any."""
    if any(kw.arg is None for kw in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
        return True
    keywords = {kw.arg for kw in call.keywords}
    return all(name in keywords or ((at := ArgumentSlot(index, slot.after_self).position(bound)) is not None
                                    and at < len(call.args)) for name, index in slot.tensors)


def _source_segment(text: str, node: ast.AST) -> str | None:
    """ast.get_source_segment(text, node), without its splitting the text into lines a character at a time for every
    node where the text is one line (a stack's line of code: call_argument asks for each call and argument of it)."""
    end_col = getattr(node, "end_col_offset", None)
    if getattr(node, "lineno", None) == getattr(node, "end_lineno", None) == 1 and end_col is not None \
            and "\n" not in text and "\r" not in text:
        return text.encode()[node.col_offset:end_col].decode()  # type: ignore[attr-defined]
    return ast.get_source_segment(text, node)


def call_argument(call_code: str | None, local: str, slot: ArgumentSlot | None, callee: str | None = None,
                  bound: bool = False, by_keyword: bool = False) -> CallArgument | None:
    """What the call on a line (its text, from a stack) passes as the frame's argument `local`, at its slot among
    the frame's locals where that is known (installed_guards.tree_argument_slot; bound: the stack shows a module's
    forward called by nn.Module, its self passed unseen): by keyword `local=`, else at its position, in the one call
    of the line that could pass it (callee: the function it calls, where its text names it: `loss3`). Every call on
    the line counts, one inside another's arguments too (`torch.add(cm(x, t), u)`: cm's t or torch.add's u, the
    stack does not say: None). A call whose first line alone the stack holds (`out = cm(torch.randn(n, 4),`) shows
    its first arguments, each whole where a comma follows it. None where the line shows no such argument, a `*args`
    splat comes before it, or more than one call could pass it. A stack's line is untrusted: one nested past the
    parser's depth (`cm(x, ----…t)`) is None, and an argument's text is the line's own, never rebuilt by recursion.
    by_keyword: the frame took the argument into its **kwargs, so by keyword: a call that passes no such keyword and
    spreads no dict (`print(..., float(model(input_ids=ids)...))`'s print and float) cannot have passed it."""
    if call_code is None or len(call_code) > 500:
        return None
    text = call_code.strip()
    shown_all = True
    whole = True  # (the line holds the call to its end: its arguments can be counted)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        text += ")"  # (the first line of a call split over lines: closed where it was cut)
        whole = False
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        shown_all = text.endswith(",)")
    # (ast.walk walks with a queue, not recursion: safe on a deep line)
    # (torch's own functions are never the compiled callable the line calls by the name the user gave it:
    # `cm(torch.randn(n, 4),`, `torch.add(cm(x, t), u)`)
    calls = [call for call in ast.walk(tree) if isinstance(call, ast.Call)
             and (_callee_name(call) == callee if callee is not None else
                  not (_source_segment(text, call.func) or "").startswith("torch."))]
    found: list[CallArgument | None] = []  # (None: a call that could pass it, its argument not shown)
    for call in calls:
        keyword = next((kw.value for kw in call.keywords if kw.arg == local), None)
        if keyword is not None:
            found.append(CallArgument(_source_segment(text, keyword) or "?",
                                      keyword.id if isinstance(keyword, ast.Name) else None, None))
            continue
        splats = [kw.value for kw in call.keywords if kw.arg is None]
        if whole and not call.args and len(splats) == 1 and isinstance(splats[0], ast.Name):
            # (`cm(**batch)`: each argument is an item of batch, by its name: a tensor whose size changed is no
            # default, one object)
            found.append(CallArgument(f'{splats[0].id}["{local}"]', None, None))
            continue
        if by_keyword:
            if splats:
                found.append(None)  # (a dict it spreads may hold it)
            continue
        # (the last argument of a cut line may go on on the next: `cm(a, b` / `.float())`; columns are UTF-8 bytes)
        cut = not shown_all and call.end_lineno == 1 and call.end_col_offset == len(text.encode())
        shown = call.args[:-1] if cut else call.args
        position = slot.position(bound) if slot is not None else None
        if any(isinstance(a, ast.Starred) for a in shown[:(position or 0) + 1]):
            found.append(None)
            continue
        if position is not None and whole and slot is not None and not _passes_each(call, slot, bound):
            found.append(None)  # (`g(x)`, g = functools.partial(cm, t): x is forward's target, not its x)
            continue
        if position is not None and slot is not None and slot.after_self is None and (
                not whole or _passes_each(call, slot._replace(after_self=False), bound)):
            # (a local 0 the tree never reads may be no self: a staticmethod forward(unused, x) takes the call's
            # first argument there. Settled only where the call passes too few arguments for that reading: NetSwap's
            # `cm(t, x)` into forward(self, x, target))
            found.append(None)
            continue
        if position is None:
            if shown or call.keywords:  # (it passes arguments: one could be this, where is not known)
                found.append(None)
            continue
        if position >= len(shown):
            continue
        arg = shown[position]
        found.append(CallArgument(_source_segment(text, arg) or "?", arg.id if isinstance(arg, ast.Name)
                                  else None, position))
    return found[0] if len(found) == 1 else None
