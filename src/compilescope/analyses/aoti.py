"""AOTInductor packages: what each one compiled accepts as input, read from its generated C++ wrapper.

``torch._inductor.aoti_compile_and_package`` (and ``aot_compile``) compile an exported program outside any compile
id: torch logs the graphs, the time (``compile_fx_aot``) and the generated code as ``graph_dump`` records
``inductor_aot_wrapper_code`` and ``inductor_aot_kernel_code``. The wrapper holds one ``check_input_N`` function per
input: its dtype, each dim's value (a static dim) or bounds (a dynamic one: the ``Dim``'s min and max), its strides
and device. torch 2.13 runs them only when ``AOTI_RUNTIME_CHECK_INPUTS`` is set where the package runs
(``__check_inputs_outputs`` returns first otherwise): without it an input of another shape runs unchecked, and a
static batch of 4 given 8 rows returns 4 rows, with no error.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, Iterable

from ..lazy_regex import lazy_compile
from ..model.ids import NO_COMPILE_ID
from ..model.records import dataclass
from ..model.trace import Artifact, Trace
from ..wording import count
from .user_locations import UserLocation, is_framework_file, is_torch_file

WRAPPER_CODE = "inductor_aot_wrapper_code"
KERNEL_CODE = "inductor_aot_kernel_code"
CHECK_ENV = "AOTI_RUNTIME_CHECK_INPUTS"
# The torch functions a user calls to compile with AOTInductor (torch/_inductor/__init__.py).
AOTI_ENTRY_POINTS = frozenset({"aoti_compile_and_package", "aot_compile"})

_CHECK_FUNCTION = lazy_compile(r"static void check_input_(\d{1,19})\(")
_DTYPE = lazy_compile(r"\(at::k(\w+)\)")
# (numbers of at most 19 digits: an int64's; a longer one is no check torch wrote, and int() refuses 4,300 digits)
_STATIC_DIM = lazy_compile(r"if \((\d{1,19}) != \w+_size\[(\d{1,19})\]\)")
_LOWER = lazy_compile(r"if \(\w+_size\[(\d{1,19})\] < (\d{1,19})\)")
_UPPER = lazy_compile(r"if \(\w+_size\[(\d{1,19})\] > (\d{1,19})\)")
_DEVICE = lazy_compile(r'<< "\d*\((\w+)\), "')
# (its parameters, up to the `{`, are two handles: bounded, so text repeating the name without a `{` costs linear time)
_GATED = lazy_compile(r"__check_inputs_outputs\([^{]{0,500}\{\s*if \(!_check_aoti_runtime_check_inputs_env\(\)\)")
# What the package holds, as its wrapper names it: the header of the device it runs on
# (`#include <torch/csrc/inductor/aoti_include/cuda.h>`), its Triton kernels (each loaded once, `kernels_.NAME =
# loadKernel("....cubin", ...)` where torch keeps their cubins apart), its C++ kernels (declared `extern "C"  void
# cpp_fused_relu_0(...);`, compiled into its library), the ATen ops it calls through torch's C shim
# (`aoti_torch_cuda_mm_out(`) and its constants (`constants_info_[0].data_size = 2048;`, `.type = ...Parameter`).
_DEVICE_HEADER = lazy_compile(r"#include <torch/csrc/inductor/aoti_include/(\w{1,20})\.h>")
_TRITON_KERNEL = lazy_compile(r"kernels_\.(\w{1,200}) = loadKernel\(")
_CUBIN = lazy_compile(r'kernels_\.(\w{1,200}) = loadKernel\("[^"\n]{0,4096}\.cubin"')
_CPP_KERNEL = lazy_compile(r'extern "C"\s{1,8}void\s{1,8}(\w{1,200})\(')
_ATEN_CALL = lazy_compile(r"\baoti_torch_(?:cpu|cuda|xpu|mps)_(\w{1,200})\(")
_CONSTANT_SIZE = lazy_compile(r"constants_info_\[(\d{1,9})\]\.data_size = (\d{1,19});")
_CONSTANT_TYPE = lazy_compile(r"constants_info_\[(\d{1,9})\]\.type = [^;\n]{0,200}ConstantType::(\w{1,40})\)")
_DEVICE_WORDS = {"cuda": "CUDA", "cpu": "the CPU", "xpu": "XPU", "mps": "MPS"}
# The user's inputs, in order, in the signature of the graph Inductor received (its params are attributes):
# `def forward(self, x: "f32[s77, 16][16, 1]cpu"):`, one line (print_readable's, without expanded_def).
_SIGNATURE = "def forward(self"
_PARAM = lazy_compile(r"\b(\w+)\s*:\s*\"")
# torch's outermost event of an AOTInductor compile (compile_fx.py), logged outside any compile id: a timeline row
# "[-/-] compile_fx_aot" left open is a package build the log ends during.
COMPILE_EVENT = "compile_fx_aot"
# Torch writes a check of each dim of an input (a dynamic one's lower bound at least, unless
# aot_inductor.check_lowerbound is off and the dim has no upper bound either): a dim without one is rare, and a check
# more than this many dims past the checked ones is none torch wrote, not a rank to build.
_MAX_UNCHECKED_DIMS = 8


@dataclass
class AotiDim:
    """One dimension of an AOTInductor package's input: a static size, or a dynamic one's bounds."""

    size: int | None = None  # a static dim's size
    min: int | None = None  # a dynamic dim's bounds, as the checks hold them (None: unbounded there)
    max: int | None = None

    @property
    def text(self) -> str:
        if self.size is not None:
            return str(self.size)
        return f"{self.min if self.min is not None else ''}..{self.max if self.max is not None else ''}"

    def to_json(self) -> dict[str, Any]:
        return {"size": self.size, "min": self.min, "max": self.max}


@dataclass
class AotiInput:
    """One input an AOTInductor package's wrapper checks: its argument, dtype, dims and device."""

    index: int
    name: str | None  # the user's argument, from the graph's signature
    dtype: str | None  # at::k<dtype>: "Float"
    dims: list[AotiDim] = field(default_factory=list)
    device: str | None = None

    @property
    def text(self) -> str:
        """`x: Float [2..64, 16] cpu`."""
        name = self.name or f"input {self.index}"
        shape = f"[{', '.join(d.text for d in self.dims)}]"
        return " ".join(p for p in (f"{name}:", self.dtype, shape, self.device) if p)

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "name": self.name, "dtype": self.dtype, "dims": [d.to_json() for d in self.dims],
                "device": self.device, "text": self.text}


@dataclass
class AotiContents:
    """What an AOTInductor package holds, as its generated wrapper names it (AOTInductor packages the wrapper's
    compiled library with its kernels' binaries and the model's constants)."""

    device: str | None = None  # the aoti_include header the wrapper includes: "cuda", "cpu"
    triton_kernels: list[str] = field(default_factory=list)  # each loaded with loadKernel
    cubins: int = 0  # of them, those loaded from a .cubin file of their own
    cpp_kernels: list[str] = field(default_factory=list)  # declared extern "C" (compiled into its library)
    aten_calls: list[str] = field(default_factory=list)  # the ATen op of each call through torch's C shim: "mm"
    weights: int = 0  # constants of type Parameter (the model's parameters)
    buffers: int = 0  # the other constants
    constant_bytes: int = 0

    @property
    def text(self) -> str:
        """"2 Triton kernels (cubins), 2 calls of ATen ops (mm ×2), 4 parameters (6,400 bytes) and the C++ wrapper
        that runs them on CUDA"."""
        parts = []
        if self.triton_kernels:
            kind = " (cubins)" if self.cubins == len(self.triton_kernels) else ""
            parts.append(f"{count(len(self.triton_kernels), 'Triton kernel')}{kind}")
        if self.cpp_kernels:
            parts.append(count(len(self.cpp_kernels), "C++ kernel"))
        if self.aten_calls:
            ops = {op: self.aten_calls.count(op) for op in self.aten_calls}
            named = ", ".join(f"{op} ×{n}" if n > 1 else op for op, n in ops.items())
            parts.append(f"{count(len(self.aten_calls), 'call')} of ATen ops ({named})")
        constants = " and ".join(c for c in (count(self.weights, "parameter") if self.weights else "",
                                             count(self.buffers, "buffer") if self.buffers else "") if c)
        if constants:
            parts.append(f"{constants} ({self.constant_bytes:,} bytes)")
        where = f" on {_DEVICE_WORDS.get(self.device, self.device)}" if self.device else ""
        wrapper = f"the C++ wrapper that runs {'them' if parts else 'the model'}{where}"
        return ", ".join(parts) + (f" and {wrapper}" if parts else wrapper)

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device, "triton_kernels": self.triton_kernels, "cubins": self.cubins,
                "cpp_kernels": self.cpp_kernels, "aten_calls": self.aten_calls, "weights": self.weights,
                "buffers": self.buffers, "constant_bytes": self.constant_bytes, "text": self.text}


def wrapper_contents(code: str) -> AotiContents:
    """What a package holds, read from its C++ wrapper's code."""
    header = _DEVICE_HEADER.search(code)
    triton = list(dict.fromkeys(_TRITON_KERNEL.findall(code)))
    cubins = set(_CUBIN.findall(code))
    kinds: dict[str, str] = dict(_CONSTANT_TYPE.findall(code))
    sizes: dict[str, str] = dict(_CONSTANT_SIZE.findall(code))
    constants = set(kinds) | set(sizes)
    weights = sum(1 for c in constants if kinds.get(c) == "Parameter")
    return AotiContents(header.group(1) if header else None, triton, sum(1 for k in triton if k in cubins),
                        list(dict.fromkeys(_CPP_KERNEL.findall(code))),
                        [op.removesuffix("_out") for op in _ATEN_CALL.findall(code)],
                        weights, len(constants) - weights, sum(int(n) for n in sizes.values()))


@dataclass
class AotiPackage:
    """One AOTInductor compile: the user's call, the inputs its wrapper checks, and whether it checks them always."""

    call: UserLocation | None  # the user's aoti_compile_and_package / aot_compile line
    wrapper_number: int  # the inductor_aot_wrapper_code output's number
    inputs: list[AotiInput] = field(default_factory=list)
    # The checks run only with AOTI_RUNTIME_CHECK_INPUTS set where the package runs
    checks_need_env: bool = False
    # The outputs that are its code (Artifact.number, as pages key them): the wrapper, and the kernel file logged
    # after it (a CPU package's C++ kernels; a CUDA package's embeds its Triton kernels in the wrapper)
    wrapper_artifact: int | None = None
    kernel_artifact: int | None = None
    kernel_number: int | None = None  # the inductor_aot_kernel_code output's number
    contents: AotiContents | None = None  # what it holds, from its wrapper

    @property
    def one_shape(self) -> bool:
        """Every dim of every input has one size (the export was given no Dim): the package serves that shape alone.
        (A dim no check covers is not known to be fixed; inputs of no dim, scalars, have no size to vary.)"""
        dims = [d for i in self.inputs for d in i.dims]
        return bool(dims) and all(d.size is not None for d in dims)

    @property
    def accepts(self) -> str:
        return "; ".join(i.text for i in self.inputs)

    def to_json(self) -> dict[str, Any]:
        return {"call": self.call.to_json() if self.call else None, "wrapper": self.wrapper_number,
                "kernels": self.kernel_number,
                "inputs": [i.to_json() for i in self.inputs], "checks_need_env": self.checks_need_env,
                "accepts": self.accepts, "one_shape": self.one_shape,
                "contents": self.contents.to_json() if self.contents else None}


@dataclass
class HeaderPrecompile:
    """torch's aoti_precompile_header events: preprocessing the AOTInductor runtime headers (and building their
    precompiled form where its cache lacks it), before the wrapper's own C++ compile. The C++ compiler runs in it
    (compile_file) count in the C++ compile phase with the rest: this says how much of it they are."""

    seconds: float = 0.0  # the events' whole time
    compiles: int = 0  # compile_file events within them
    compile_s: float = 0.0  # their time

    def to_json(self) -> dict[str, Any]:
        return {"seconds": round(self.seconds, 6), "compiles": self.compiles, "compile_s": round(self.compile_s, 6)}


@dataclass
class PackageBuild:
    """torch's AotCodeCompiler.compile events: building the package's library from its generated code. torch times
    the compiler runs in it (compile_file) and nothing else: on torch 2.11 CUDA (aoti_deploy_cuda_dynamic) 45.2 s of
    its 61.2 s lie between its 15 runs, ~4 s apart, in steps it names no event for."""

    seconds: float = 0.0  # the events' whole time
    compiles: int = 0  # compile_file events within them
    compile_s: float = 0.0  # their time

    @property
    def untimed_s(self) -> float:
        return max(0.0, self.seconds - self.compile_s)

    def to_json(self) -> dict[str, Any]:
        return {"seconds": round(self.seconds, 6), "compiles": self.compiles, "compile_s": round(self.compile_s, 6),
                "untimed_s": round(self.untimed_s, 6)}


@dataclass
class Aoti:
    """What the log says of AOTInductor: the packages it built, the build's and header's times, and the user's calls."""

    packages: list[AotiPackage] = field(default_factory=list)
    header: HeaderPrecompile | None = None  # None where the log times no header precompile
    build: PackageBuild | None = None  # None where the log times no AotCodeCompiler.compile
    # The user's lines that called aoti_compile_and_package (or aot_compile), each once, from the stacks torch logs
    # outside any compile id: known also where the log ends before a package's wrapper (a build that never finished).
    calls: list[UserLocation] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.packages)

    @property
    def compiled(self) -> bool:
        """The log compiled with AOTInductor: a package's wrapper, or a call of it whose build the log ends during."""
        return bool(self.packages or self.calls)

    @property
    def name(self) -> str | None:
        """What the log compiled with AOTInductor, as every report names it where a compile id would be (its compile
        has none: tlparse's [-/-]): "AOTInductor package of aoti_deploy.py:41", by the user's lines that compiled it;
        None where the log holds no AOTInductor compile."""
        if not self.compiled:
            return None
        lines = list(dict.fromkeys(p.call.short for p in self.packages if p.call is not None))
        lines = lines or list(dict.fromkeys(c.short for c in self.calls))
        noun = "AOTInductor packages" if max(len(self.packages), len(lines)) > 1 else "AOTInductor package"
        return f"{noun} of {', '.join(lines)}" if lines else noun

    def compile_name(self, compile_id: str) -> str:
        """A compile id as reports show it to the user: NO_COMPILE_ID as the AOTInductor package where the log compiled
        one (name), else the id itself ("[0/1]", and tlparse's [-/-] for what no compile made)."""
        return (self.name or compile_id) if compile_id == NO_COMPILE_ID else compile_id

    def said(self, compile_id: str) -> str:
        """compile_name in a sentence: "the AOTInductor package of aoti_deploy.py:41", "[0/1]"."""
        named = self.compile_name(compile_id)
        return f"the {named}" if named != compile_id else named

    def code_roles(self) -> dict[int, str]:
        """What each package's code outputs are (Artifact.number -> its role), for the list of outputs outside any
        compile id, where torch logs them under tlparse's file names (inductor_aot_wrapper_code_N.txt) alone."""
        roles: dict[int, str] = {}
        for package in self.packages:
            whose = f" of {package.call.short}" if package.call is not None and len(self.packages) > 1 else ""
            if package.wrapper_artifact is not None:
                roles[package.wrapper_artifact] = f"AOTInductor package{whose}: C++ wrapper"
            if package.kernel_artifact is not None:
                roles[package.kernel_artifact] = f"AOTInductor package{whose}: kernels"
        return roles

    def to_json(self) -> dict[str, Any]:
        return {"packages": [p.to_json() for p in self.packages],
                "header_precompile": self.header.to_json() if self.header else None,
                "package_build": self.build.to_json() if self.build else None}


def aoti_call(stack: list | None) -> UserLocation | None:
    """The user's line that called aoti_compile_and_package (or aot_compile) in a Python stack, else None."""
    for i, frame in enumerate(stack or []):
        name = frame.get("name") if isinstance(frame, dict) else frame.name
        filename = str(frame.get("filename", "") if isinstance(frame, dict) else frame.filename)
        if name in AOTI_ENTRY_POINTS and is_torch_file(filename):
            for j in range(i - 1, -1, -1):
                before = stack[j]  # type: ignore[index]
                if not is_framework_file(str(before.get("filename", "") if isinstance(before, dict)
                                             else before.filename)):
                    return UserLocation.from_frame(before)
            return None
    return None


def wrapper_inputs(code: str, names: list[str]) -> list[AotiInput]:
    """The inputs a wrapper's check_input_N functions check, named by the graph's signature where it has them."""
    starts = [(m.start(), int(m.group(1))) for m in _CHECK_FUNCTION.finditer(code)]
    found = []
    for k, (start, index) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else code.find("__check_inputs_outputs", start)
        body = code[start:end if end > start else len(code)]
        dims: dict[int, AotiDim] = {}
        for m in _STATIC_DIM.finditer(body):
            dims.setdefault(int(m.group(2)), AotiDim()).size = int(m.group(1))
        for m in _LOWER.finditer(body):
            dims.setdefault(int(m.group(1)), AotiDim()).min = int(m.group(2))
        for m in _UPPER.finditer(body):
            dims.setdefault(int(m.group(1)), AotiDim()).max = int(m.group(2))
        # The dims up to the highest checked, the unchecked among them unknown (a dim index is the log's number)
        checked = [n for n in dims if n < len(dims) + _MAX_UNCHECKED_DIMS]
        rank = max(checked) + 1 if checked else 0
        dtype, device = _DTYPE.search(body), _DEVICE.search(body)
        found.append(AotiInput(index, names[index] if index < len(names) else None, dtype.group(1) if dtype else None,
                               [dims.get(n, AotiDim()) for n in range(rank)], device.group(1) if device else None))
    return found


def signature_names(graph: str) -> list[str]:
    """The parameter names of a graph dump's forward signature, read from its line alone (up to its `):`)."""
    start = graph.find(_SIGNATURE)
    if start < 0:
        return []
    end = graph.find("\n", start)
    line = graph[start + len(_SIGNATURE):end if end >= 0 else len(graph)]
    close = line.find("):")
    return _PARAM.findall(line, 0, close) if close >= 0 else []


HEADER_EVENT = "aoti_precompile_header"  # torch/_inductor/codecache.py's dynamo_timed
BUILD_EVENT = "AotCodeCompiler.compile"  # the same file's, around building the package's library
_SOURCE_COMPILE = "compile_file"


def header_precompile(events: Iterable[Any]) -> HeaderPrecompile | None:
    """The time of the log's aoti_precompile_header events (B/E pairs per track), and of the compile_file runs
    within them; None where there are none."""
    found = _timed_with_compiles(events, HEADER_EVENT)
    return HeaderPrecompile(*found) if found else None


def package_build(events: Iterable[Any]) -> PackageBuild | None:
    """The time of the log's AotCodeCompiler.compile events, and of the compile_file runs within them; None where
    there are none."""
    found = _timed_with_compiles(events, BUILD_EVENT)
    return PackageBuild(*found) if found else None


def _timed_with_compiles(events: Iterable[Any], name_timed: str) -> tuple[float, int, float] | None:
    """The whole time of the events named name_timed (B/E pairs per track), the compile_file runs within them and
    their time; None where there are none."""
    seconds, compiles, compile_s = 0.0, 0, 0.0
    seen = False
    opened: dict[tuple, list[tuple[str, float]]] = {}  # per track, the open timed and compile_file events
    for event in events:
        if not isinstance(event, dict) or event.get("name") not in (name_timed, _SOURCE_COMPILE):
            continue
        ts, name, track = event.get("ts"), event["name"], (event.get("pid"), event.get("tid"))
        if not isinstance(ts, (int, float)):
            continue
        stack = opened.setdefault(track, [])
        if event.get("ph") == "B":
            stack.append((name, ts / 1e6))
        elif event.get("ph") == "E" and stack and stack[-1][0] == name:
            _, start = stack.pop()
            if name == name_timed:
                seconds += ts / 1e6 - start
                seen = True
            elif any(n == name_timed for n, _ in stack):
                compiles += 1
                compile_s += ts / 1e6 - start
    return (seconds, compiles, compile_s) if seen else None


def _package_call(trace: Trace, wrapper: Artifact, calls: list[UserLocation]) -> UserLocation | None:
    """The user's call that compiled a wrapper: the one in the stack its own record was logged with (torch logs one
    with each record outside a compile id), so two compiles from one line and then one from another are each their
    own; without it, the log's AOTI call where it has only one (of several, which is not known)."""
    own = None
    if wrapper.stack is not None and 0 <= wrapper.stack < len(trace.unknown_stacks):
        own = aoti_call(trace.unknown_stacks[wrapper.stack])
    return own if own is not None else calls[0] if len(calls) == 1 else None


def aoti(trace: Trace) -> Aoti:
    found: dict[tuple[str, int], UserLocation] = {}
    for call in map(aoti_call, trace.unknown_stacks):
        if call is not None:
            found.setdefault(call.key, call)
    calls = list(found.values())  # each line once (a stack is kept once, however many compiles it made)
    result = Aoti(calls=calls)
    for entry in trace.compiles.values():
        if not any(artifact.name == WRAPPER_CODE for artifact in entry.artifacts):
            continue  # (no AOTI compile here: its graphs' signatures are not read)
        graph = None  # the last before_pre_grad_graph: the graph the next wrapper was compiled from
        for artifact in entry.artifacts:
            if artifact.name == "before_pre_grad_graph" and artifact.payload is not None:
                graph = artifact
            if artifact.name == KERNEL_CODE and result.packages and result.packages[-1].kernel_artifact is None:
                result.packages[-1].kernel_artifact = artifact.number  # (torch logs it right after its wrapper)
                result.packages[-1].kernel_number = artifact.file_number
            if artifact.name != WRAPPER_CODE or artifact.payload is None:
                continue
            names = signature_names(trace.payload_text(graph.payload)) if graph and graph.payload else []
            code = trace.payload_text(artifact.payload)
            result.packages.append(AotiPackage(_package_call(trace, artifact, calls), artifact.file_number,
                                               wrapper_inputs(code, names), bool(_GATED.search(code)),
                                               wrapper_artifact=artifact.number, contents=wrapper_contents(code)))
    if result:
        result.header = header_precompile(trace.chromium_events)
        result.build = package_build(trace.chromium_events)
    return result
