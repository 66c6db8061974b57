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
_HEADER_CHARS = 16_384  # how much of a payload torch's header blocks take, at most

# compilation_metrics' config dumps (JSON objects, key -> value) and the module each one's keys are settings of.
CONFIG_MODULES = {"dynamo_config": "torch._dynamo.config", "inductor_config": "torch._inductor.config",
                  "functorch_config": "torch._functorch.config", "compiler_config": "torch.compiler.config"}
# A setting of torch's own tests (cpp.inject_relu_bug_TESTING_ONLY, sleep_sec_TESTING_ONLY, ...) with its value, read
# from the dump's text: every compile repeats a 22 KB dump, and these few keys are all that is wanted of it. Each
# defaults to None or False in torch (2.11-2.14); any other value is on.
_TESTING_ONLY = lazy_compile(r'"([\w.]{1,200}_TESTING_ONLY)": ("(?:[^"\\]|\\.){0,200}"|[^,}\s]{1,200})')


@dataclass
class Environment:
    """The versions and the GPU of the run: each None where the log does not say."""

    torch: str | None = None  # "2.11.0+cu130"
    python: str | None = None  # "3.12.3"
    cuda: str | None = None  # the CUDA torch was built with ("13.0"); None in a CPU build
    triton: str | None = None  # "3.6.0"
    gpus: dict[str, int] | None = None  # {"NVIDIA H100 80GB HBM3": 8}: how many of each; {} when torch saw none
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
                "gpus": self.gpus, "testing_only": [t.to_json() for t in self.testing_only]}


@dataclass
class TorchTestSetting:
    """A setting for torch's tests only (its name ends in _TESTING_ONLY) that compiles ran with: inductor's
    cpp.inject_relu_bug_TESTING_ONLY = "compile_error" makes every relu fail to compile, "accuracy" computes it
    wrong."""

    setting: str  # "torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY"
    value: str  # as the dump has it, JSON: '"compile_error"'
    compile_ids: list[str]  # the compiles that ran with it

    @property
    def assignment(self) -> str:
        """"torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = 'compile_error'", as the program would set it."""
        try:
            value = orjson.loads(self.value)
        except orjson.JSONDecodeError:
            value = self.value
        return f"{self.setting} = {value!r}"

    @property
    def off(self) -> str:
        """The setting at its default, as the program would set it: False for a switch, else None."""
        return f"{self.setting} = {False if self.value == 'true' else None}"

    def to_json(self) -> dict[str, Any]:
        return {"setting": self.setting, "value": self.value, "compile_ids": self.compile_ids}


def testing_only_settings(trace: Trace) -> list[TorchTestSetting]:
    """The _TESTING_ONLY settings that were on (not None, not False) in any compile's config dumps, in the order the
    compiles ran, each with its compiles."""
    found: dict[tuple[str, str], TorchTestSetting] = {}
    seen: dict[str, list[tuple[str, str]]] = {}  # a dump's text -> what is on in it (compiles repeat one dump)
    for entry in trace.sorted_compiles():
        metrics = entry.metrics or {}
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
    return list(found.values())


def environment(trace: Trace) -> Environment:
    env = Environment()
    runnable = None
    for entry in trace.compiles.values():
        for artifact in entry.artifacts:
            if env.torch is None and artifact.name == "torch_version" and artifact.payload is not None:
                try:
                    doc = orjson.loads(trace.payload_text(artifact.payload))
                except orjson.JSONDecodeError:
                    doc = None
                if isinstance(doc, dict) and doc.get("pytorch_version"):
                    env.torch = str(doc["pytorch_version"])
            elif runnable is None and artifact.name == _RUNNABLE and artifact.payload is not None:
                runnable = artifact
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
    return env


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
