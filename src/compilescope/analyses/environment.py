"""What the run ran on, as its log says: the torch, Python, CUDA and Triton versions and the GPU. The first thing a
PyTorch developer asks of a report, and a cause of what changed between two runs."""

from __future__ import annotations

from dataclasses import field
from typing import Any

import orjson

from ..lazy_regex import lazy_compile
from ..model.records import dataclass
from ..model.trace import Trace

# fx_graph_runnable (every Inductor compile) has `# GPU Hardware Info: ` then one `# <name> : <count>` line per kind
# of GPU; on a machine without one, `# torch.cuda.is_available()==False, no GPU info collected`.
_GPU_HEADER = "# GPU Hardware Info:"
_GPU_LINE = lazy_compile(r"^# (?P<name>\S.{0,199}?) : (?P<count>\d{1,6})\s*$")
_NO_GPU = "torch.cuda.is_available()==False"
# Its header also names the build ("# torch version: 2.6.0a0+giteece9ec", "# torch cuda version: 12.2", "None" in a CPU
# build): the only place older logs (no torch_version record, no versions in compilation_metrics) say which torch ran.
_TORCH_LINE = lazy_compile(r"^# torch version: (?P<value>\S{1,100})\s*$")
_CUDA_LINE = lazy_compile(r"^# torch cuda version: (?P<value>\S{1,100})\s*$")
_RUNNABLE = "fx_graph_runnable"
# Its header then sets the Inductor config the compile ran with ("torch._inductor.config.max_autotune = True"): torch's
# codegen_config, which writes every setting someone set, even back to its default. compilation_metrics'
# inductor_config is the global config: it lacks what torch.compile(mode=..., options=...) patched in for a compile.
# (Private keys, "_save_config_ignore", and lists, dicts and sets say nothing of the run: older torch (simple.log)
# wrote each such setting at its default.)
_INDUCTOR_LINE = lazy_compile(r"^torch\._inductor\.config\.(?P<key>[A-Za-z]\w{0,99}(?:\.[A-Za-z]\w{0,99}){0,4}) = "
                              r"(?P<value>.{1,300})$")
_CONTAINER = ("{", "[", "set(")
# The defaults (torch 2.11-2.14) of the settings torch's own code patches around a compile and then restores, which
# codegen_config still writes once set: a restored max_autotune = False is no setting of the user's.
_INDUCTOR_DEFAULTS = {
    "max_autotune": "False", "coordinate_descent_tuning": "False", "triton.cudagraphs": "False",
    "deterministic": "False", "benchmark_kernel": "False", "triton.store_cubin": "False",
    "comprehensive_padding": "True", "inplace_buffers": "True", "implicit_fallbacks": "True",
    "fx_graph_cache": "True", "autotune_local_cache": "True", "trace.save_real_tensors": "False",
    "test_configs.runtime_triton_dtype_assert": "False"}
# What each torch.compile mode sets (torch._inductor.list_mode_options, torch 2.13; "default" sets nothing).
MODE_OPTIONS: dict[str, dict[str, str]] = {
    "reduce-overhead": {"triton.cudagraphs": "True"},
    "max-autotune-no-cudagraphs": {"max_autotune": "True", "coordinate_descent_tuning": "True"},
    "max-autotune": {"max_autotune": "True", "triton.cudagraphs": "True", "coordinate_descent_tuning": "True"},
    "lite": {"fallback_by_default": "True", "selective_decompose": "True", "reorder_for_peak_memory": "False",
             "reorder_for_compute_comm_overlap": "False", "triton.reorder_for_reducing_graph_partitions": "False",
             "use_pre_grad_passes": "False", "use_joint_graph_passes": "False", "use_post_grad_passes": "False",
             "use_dce": "False", "allow_buffer_reuse": "False"}}
_MODE_KEYS = {key for options in MODE_OPTIONS.values() for key in options}
_HEADER_CHARS = 16_384  # how much of a payload torch's header blocks take, at most

# compilation_metrics' config dumps (JSON objects, key -> value) and the module each one's keys are settings of.
CONFIG_MODULES = {"dynamo_config": "torch._dynamo.config", "inductor_config": "torch._inductor.config",
                  "functorch_config": "torch._functorch.config", "compiler_config": "torch.compiler.config"}
# A setting of torch's own tests (cpp.inject_relu_bug_TESTING_ONLY, sleep_sec_TESTING_ONLY, ...) with its value, read
# from the dump's text: every compile repeats a 22 KB dump, and these few keys are all that is wanted of it. Each
# defaults to None or False in torch (2.11-2.14); any other value is on.
_TESTING_ONLY = lazy_compile(r'"([\w.]{1,200}_TESTING_ONLY)": ("(?:[^"\\]|\\.){0,200}"|[^,}\s]{1,200})')
# A backend of torch's own tests (torch._dynamo.backends.debugging's relu_compile_error_TESTING_ONLY, which raises for
# any graph with a relu): no dump names the backend; a compile it failed does, in its fail_reason
# ("backend='relu_compile_error_TESTING_ONLY' raised:\nReluCompileError: ").
_TESTING_ONLY_BACKEND = lazy_compile(r"\bbackend='(\w{1,200}_TESTING_ONLY)'")


@dataclass
class Environment:
    """The versions and the GPU of the run: each None where the log does not say."""

    torch: str | None = None  # "2.11.0+cu130"
    python: str | None = None  # "3.12.3"
    cuda: str | None = None  # the CUDA torch was built with ("13.0"); None in a CPU build
    triton: str | None = None  # "3.6.0"
    gpus: dict[str, int] | None = None  # {"NVIDIA H100 80GB HBM3": 8}: how many of each; {} when torch saw none
    # The Inductor settings compiles ran with, as their fx_graph_runnable headers set them; compiles with the same
    # settings together, in the order the compiles ran
    compile_settings: list[CompileSettings] = field(default_factory=list)
    # Settings of torch's own tests that were on: they make compiles fail, or kernels compute wrong results, on purpose
    testing_only: list[TorchTestSetting] = field(default_factory=list)

    def __bool__(self) -> bool:
        return any(v is not None for v in (self.torch, self.python, self.cuda, self.triton, self.gpus))

    @property
    def gpu(self) -> str | None:
        """"NVIDIA H200", "8 × NVIDIA H100 80GB HBM3", "none" (torch saw no GPU); None where the log does not say."""
        if self.gpus is None:
            return None
        if not self.gpus:
            return "none"
        return ", ".join(name if n == 1 else f"{n} × {name}" for name, n in self.gpus.items())

    def facts(self) -> list[tuple[str, str]]:
        """(what, value) for what the log says, in the order a bug report gives them."""
        found = [("torch", self.torch), ("Python", self.python), ("CUDA", self.cuda), ("Triton", self.triton),
                 ("GPU", self.gpu)]
        return [(what, value) for what, value in found if value]

    def to_json(self) -> dict[str, Any]:
        return {"torch": self.torch, "python": self.python, "cuda": self.cuda, "triton": self.triton,
                "gpus": self.gpus, "compile_settings": [c.to_json() for c in self.compile_settings],
                "testing_only": [t.to_json() for t in self.testing_only]}


@dataclass
class CompileSettings:
    """Inductor settings not at their default that some compiles ran with (the same set for each of them)."""

    settings: list[tuple[str, str]]  # (key under torch._inductor.config, value as Python): ("max_autotune", "True")
    compile_ids: list[str]  # ["[0/0]"]
    mode: str | None = None  # the torch.compile mode that sets exactly these of its keys ("max-autotune"), else None

    @property
    def assignments(self) -> str:
        """"max_autotune = True, coordinate_descent_tuning = True"."""
        return ", ".join(f"{key} = {value}" for key, value in self.settings)

    def to_json(self) -> dict[str, Any]:
        return {"settings": [{"setting": key, "value": value} for key, value in self.settings],
                "compile_ids": self.compile_ids, "mode": self.mode}


@dataclass
class TorchTestSetting:
    """A setting for torch's tests only (its name ends in _TESTING_ONLY) that compiles ran with: inductor's
    cpp.inject_relu_bug_TESTING_ONLY = "compile_error" makes every relu fail to compile, "accuracy" computes it
    wrong."""

    setting: str  # "torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY"; "backend" for a test backend
    value: str  # as the dump has it, JSON: '"compile_error"'
    compile_ids: list[str]  # the compiles that ran with it (a backend: that it failed, the only ones that name it)
    kind: str = "setting"  # "setting" (a config key), or "backend" (torch.compile's backend= of torch's tests)

    @property
    def assignment(self) -> str:
        """"torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = 'compile_error'", as the program would set it;
        "torch.compile(backend='relu_compile_error_TESTING_ONLY')" for a backend."""
        try:
            value = orjson.loads(self.value)
        except orjson.JSONDecodeError:
            value = self.value
        if self.kind == "backend":
            return f"torch.compile(backend={value!r})"
        return f"{self.setting} = {value!r}"

    @property
    def off(self) -> str:
        """The setting at its default, as the program would set it: False for a switch, else None."""
        return f"{self.setting} = {False if self.value == 'true' else None}"

    @property
    def what(self) -> str:
        return "a backend for torch's own tests was used" if self.kind == "backend" else (
            "a setting for torch's own tests was on")

    @property
    def undo(self) -> str:
        """What the program does instead: the setting back at its default, or another backend."""
        if self.kind == "backend":
            return "compile with another backend ('inductor', the default; 'eager' for Dynamo alone)"
        return f"set it back ({self.off})"

    @property
    def with_it(self) -> str:
        """What its compiles did with it: a test backend is named only by the compiles it failed."""
        return "failed with it" if self.kind == "backend" else "compiled with it"

    def to_json(self) -> dict[str, Any]:
        return {"setting": self.setting, "value": self.value, "compile_ids": self.compile_ids, "kind": self.kind}


def testing_only_settings(trace: Trace) -> list[TorchTestSetting]:
    """The _TESTING_ONLY settings that were on (not None, not False) in any compile's config dumps, in the order the
    compiles ran, each with its compiles; then the _TESTING_ONLY backends that compiles failed in, each with those."""
    found: dict[tuple[str, str], TorchTestSetting] = {}
    backends: dict[str, TorchTestSetting] = {}
    seen: dict[str, list[tuple[str, str]]] = {}  # a dump's text -> what is on in it (compiles repeat one dump)
    for entry in trace.sorted_compiles():
        metrics = entry.metrics or {}
        reason = metrics.get("fail_reason")
        backend = _TESTING_ONLY_BACKEND.search(reason) if isinstance(reason, str) else None
        if backend is not None:
            named = backends.setdefault(backend[1], TorchTestSetting("backend", orjson.dumps(backend[1]).decode(), [],
                                                                     "backend"))
            if entry.compile_id is not None and str(entry.compile_id) not in named.compile_ids:
                named.compile_ids.append(str(entry.compile_id))
        for field_name, module in CONFIG_MODULES.items():
            dump = metrics.get(field_name)
            if not isinstance(dump, str):
                continue
            on = seen.get(dump)
            if on is None:
                on = seen[dump] = [(f"{module}.{m[1]}", m[2]) for m in _TESTING_ONLY.finditer(dump)
                                   if m[2] not in ("null", "false")]
            for setting, value in on:
                got = found.setdefault((setting, value), TorchTestSetting(setting, value, []))
                if entry.compile_id is not None and str(entry.compile_id) not in got.compile_ids:
                    got.compile_ids.append(str(entry.compile_id))
    return [*found.values(), *backends.values()]


def environment(trace: Trace) -> Environment:
    env = Environment()
    runnable = None
    settings: dict[str, dict[str, str]] = {}  # compile id -> its settings
    for entry in trace.sorted_compiles():
        for artifact in entry.artifacts:
            if env.torch is None and artifact.name == "torch_version" and artifact.payload is not None:
                try:
                    doc = orjson.loads(trace.payload_text(artifact.payload))
                except orjson.JSONDecodeError:
                    doc = None
                if isinstance(doc, dict) and doc.get("pytorch_version"):
                    env.torch = str(doc["pytorch_version"])
            elif artifact.name == _RUNNABLE and artifact.payload is not None:
                runnable = runnable or artifact
                if entry.compile_id is not None:
                    found = settings.setdefault(str(entry.compile_id), {})
                    for key, value in _inductor_settings(trace.payload_text(artifact.payload)):
                        found.setdefault(key, value)  # (a compile's forward and backward set the same)
        metrics = entry.metrics or {}
        env.torch = env.torch or _text(metrics.get("pytorch_version"))
        env.python = env.python or _text(metrics.get("python_version"), first_word=True)
        env.cuda = env.cuda or _text(metrics.get("cuda_version"))
        env.triton = env.triton or _text(metrics.get("triton_version"))
    if runnable is not None:
        text = trace.payload_text(runnable.payload)
        env.gpus = _gpus(text)
        if env.torch is None or env.cuda is None:
            torch_version, cuda = _build(text)
            env.torch = env.torch or torch_version
            env.cuda = env.cuda or cuda
    env.testing_only = testing_only_settings(trace)
    env.compile_settings = _grouped(settings)
    return env


def _inductor_settings(runnable: str) -> list[tuple[str, str]]:
    """The Inductor settings an fx_graph_runnable's header sets that are not at their default, in its order. Only
    torch's header lines count: the user's graph follows them."""
    found = []
    for line in runnable[:_HEADER_CHARS].splitlines():
        if m := _INDUCTOR_LINE.match(line.rstrip()):
            key, value = m["key"], m["value"]
            # (a _TESTING_ONLY setting is said first, as testing_only, from the config dumps)
            if not value.startswith(_CONTAINER) and _INDUCTOR_DEFAULTS.get(key) != value \
                    and not key.endswith("_TESTING_ONLY"):
                found.append((key, value))
        elif line.startswith(("class Repro", "def forward")):
            break
    return found


def _grouped(settings: dict[str, dict[str, str]]) -> list[CompileSettings]:
    groups: dict[tuple[tuple[str, str], ...], CompileSettings] = {}
    for compile_id, found in settings.items():
        if found:
            key = tuple(found.items())
            groups.setdefault(key, CompileSettings(list(key), [], _mode(found))).compile_ids.append(compile_id)
    return list(groups.values())


def _mode(settings: dict[str, str]) -> str | None:
    """The mode whose options are exactly the settings' values of the modes' keys (the other keys may be anything:
    max_autotune_gemm_backends is set beside a mode); None where none is, or where no mode key is set."""
    of_modes = {key: value for key, value in settings.items() if key in _MODE_KEYS}
    return next((mode for mode, options in MODE_OPTIONS.items() if of_modes and options == of_modes), None)


def _build(runnable: str) -> tuple[str | None, str | None]:
    """The torch version and the CUDA it was built with, as an fx_graph_runnable's header names them (None each where
    it does not; CUDA None in a CPU build). Only torch's header lines count: the user's graph follows them."""
    torch_version = cuda = None
    for line in runnable[:_HEADER_CHARS].splitlines():
        line = line.strip()
        if m := _TORCH_LINE.match(line):
            torch_version = torch_version or m["value"]
        elif (m := _CUDA_LINE.match(line)) and m["value"] != "None":
            cuda = cuda or m["value"]
        elif line.startswith(("class Repro", "def forward")):
            break
    return torch_version, cuda


def _text(value: object, first_word: bool = False) -> str | None:
    # ("3.12.3 (main, Aug 31 2026, 10:18:26) [GCC 13.3.0]": the version is its first word; "" is not a version)
    if not isinstance(value, str) or not value.strip():
        return None
    return value.split()[0] if first_word else value.strip()


def _gpus(runnable: str) -> dict[str, int] | None:
    """The GPUs an fx_graph_runnable names (torch's device_count: those the process could see), with how many of
    each; {} when torch saw none; None when it does not say. Only torch's header block is read: the rest of the
    payload is the user's graph and code, which may say anything."""
    start = runnable.find(_GPU_HEADER)
    if start < 0:
        head = runnable[:_HEADER_CHARS]  # (torch writes its header blocks before the graph)
        return {} if any(line.startswith("# ") and _NO_GPU in line for line in head.splitlines()) else None
    gpus: dict[str, int] = {}
    for line in runnable[start:start + _HEADER_CHARS].splitlines()[1:65]:  # (a machine has a few kinds at most)
        m = _GPU_LINE.match(line.strip())
        if m is None:
            break
        if int(m["count"]) > 0:
            gpus[m["name"]] = gpus.get(m["name"], 0) + int(m["count"])
    return gpus or None
