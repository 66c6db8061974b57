"""Why compiled results differ from eager's, as Inductor's graphs show it: its own random numbers, and low-precision
math kept in float32 between fused ops.

Random: with torch._inductor.config.fallback_random False (its default) Inductor's replace_random_pass swaps the
graph's random ops (dropout's bernoulli, rand, randn, randint) for prims.inductor_random / inductor_randint, seeded
once per call from torch's generator: under the same torch.manual_seed the compiled code draws other numbers than
eager. The post-grad graph (fx_sites.POST_GRAD: inductor_post_grad_graph, after_post_grad_graph on older torch) names each such node under the user's `# File:` line.

Precision: eager rounds every bf16/fp16 op's result to its dtype; Inductor fuses a chain of such ops into one kernel
and keeps float32 between them (torch._inductor.config.emulate_precision_casts False, its default), so where one
bf16/fp16 compute op of a graph feeds another the compiled results differ from eager's by that rounding (much more
where values cancel, as E[x*x] - E[x]**2 does). A cast down to bf16/fp16 that feeds such an op is dropped alike: the
fused kernel computes from the float32 value eager rounded. A lone op (a bias gradient's sum) rounds once, as eager's
does.
"""

from __future__ import annotations

from dataclasses import field
from collections.abc import Mapping
from typing import Any

from ..lazy_regex import lazy_compile
from ..model.ids import compilation_key
from ..model.records import dataclass
from ..model.trace import Trace
from .cached_lines import run_lines
from .fx_sites import POST_GRAD, fx_node_sites
from .user_locations import UserLocation

# `inductor_random_default: "f32[256, 512][512, 1]cpu" = torch.ops.prims.inductor_random.default([256, 512], ...)`
_NODE = lazy_compile(r'^\s+(?P<name>[A-Za-z_]\w{0,200})\s*:\s*"(?P<dtype>[a-z]{1,4}\d{0,3})\[[^"]{0,2000}"\s*=\s*'
                     r"torch\.ops\.(?P<ns>\w{1,50})\.(?P<op>\w{1,200})\.\w{1,100}\((?P<args>[^;]{0,4000})\)")
_NAME = lazy_compile(r"\b[A-Za-z_]\w{0,200}\b")
INDUCTOR_RANDOM_OPS = frozenset(("inductor_random", "inductor_randint"))
LOW_PRECISION = {"bf16": "bfloat16", "f16": "float16"}
# Ops that run as one kernel of their own (an extern call, as eager runs them), only change the dtype or only move
# values (repeat copies them): no rounding between fused ops to lose.
_NOT_FUSED = frozenset(("convert_element_type", "mm", "addmm", "bmm", "baddbmm", "convolution", "_convolution",
                        "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_efficient_attention",
                        "_scaled_dot_product_flash_attention", "view", "reshape", "permute", "expand", "clone",
                        "_to_copy", "t", "transpose", "unsqueeze", "squeeze", "repeat"))
# A collective (all_reduce_, wait_tensor, all_gather_into_tensor) runs as a kernel of its own on the value eager would
# hand it, already rounded to its dtype: it neither fuses nor rounds between fused ops. (The logs seen call
# _c10d_functional; torch registers the legacy c10d_functional and _c10d_functional_autograd's collectives too.)
_OWN_KERNEL_NAMESPACES = frozenset(("_c10d_functional", "c10d_functional", "_c10d_functional_autograd"))
_SETTING = lazy_compile(r'"(?P<key>fallback_random|emulate_precision_casts)": (?P<value>true|false)')

RANDOM_ADVICE = ("under the same torch.manual_seed the compiled code draws other random numbers than eager "
                 "(Inductor's own generator, as torch._inductor.config.fallback_random is False): dropout masks and "
                 "torch.rand values differ, so outputs differ from eager's by more than any tolerance. The compiled "
                 "call also moves torch's generator on by other draws than eager's (it takes its seeds with one "
                 "aten.randint call, Inductor's inductor_seeds, where eager's random ops draw their own), so the random "
                 "numbers the program draws after it (torch.rand, a shuffle) differ from eager's too. To compare "
                 "with eager, call model.eval() (no dropout) or set torch._inductor.config.fallback_random = True "
                 "(the compiled code then calls eager's random ops; slower)")
# (Which of eager and compiled is nearer a float32 run depends on the values, which the log does not hold: in
# wrong_results.py eager is the further off (1.81 from a float32 run, the fused math 0.04, emulated in eager), yet
# a lone cast at the end can make it the other way: the advice claims neither.)
PRECISION_ADVICE = ("Inductor fuses these ops and keeps float32 between them where eager rounds each result to {dtype}, "
                    "so compiled results differ from eager's by {dtype} rounding (far more where values cancel, as "
                    "a variance E[x*x] - E[x]**2 does). Both round differently from a float32 run, and the log does not "
                    "show which is nearer it: compare each with a float32 run at a {dtype} tolerance, or compute that part in float32; to reproduce eager's rounding, set "
                    "torch._inductor.config.emulate_precision_casts = True")


# (The generator: torch/_inductor/fx_passes/replace_random.py fuses the graph's seeds into one inductor_seeds, which
# ir.RandomSeeds runs as aten.randint.low_out on torch's default generator. Checked on CPU torch 2.13: after a compiled
# Dropout(0.1) on a [256, 512] tensor under manual_seed(1), torch.rand(3) gives what it gives after one int64 randint,
# not what it gives after eager's dropout; with fallback_random = True, what it gives after eager's.)
# What a source page says on each such line (the sections above say the rest)
RANDOM_LINE = ("draws its random numbers with Inductor's generator, not eager's: under the same seed they differ "
               "(torch._inductor.config.fallback_random = True calls eager's random ops)")
PRECISION_LINE = ("gives {dtype} results that eager rounds to {dtype} and the compiled kernel, fusing them, keeps in "
                  "float32 (torch._inductor.config.emulate_precision_casts = True rounds as eager does)")


@dataclass
class NumericsLine:
    """A line of the user's code whose ops, as Inductor compiled them, give other numbers than eager."""

    location: UserLocation
    compile_ids: list[str] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)  # the post-grad graph's ops of the line: "inductor_random", "mean"
    dtype: str | None = None  # "bfloat16": the low precision the line computes in (precision lines only)

    @property
    def why(self) -> str:
        """Why this line gives other numbers than eager, in a clause."""
        return RANDOM_LINE if self.dtype is None else PRECISION_LINE.format(dtype=self.dtype)

    def to_json(self) -> dict[str, Any]:
        return {"location": self.location.to_json(), "compile_ids": self.compile_ids, "ops": self.ops,
                "dtype": self.dtype}


@dataclass
class Numerics:
    """The lines whose compiled results differ from eager's: drawn by Inductor's generator, or computed in low
    precision with float32 kept between fused ops."""

    random: list[NumericsLine] = field(default_factory=list)
    precision: list[NumericsLine] = field(default_factory=list)
    # Compile ids whose logged Inductor config had fallback_random / emulate_precision_casts on
    fallback_random: list[str] = field(default_factory=list)
    emulate_precision_casts: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.random or self.precision)

    @property
    def random_note(self) -> str | None:
        return RANDOM_ADVICE[0].upper() + RANDOM_ADVICE[1:] + "." if self.random else None

    @property
    def precision_note(self) -> str | None:
        if not self.precision:
            return None
        dtypes = list(dict.fromkeys(line.dtype or "" for line in self.precision))
        return PRECISION_ADVICE.format(dtype="/".join(dtypes)) + "."

    def to_json(self) -> dict[str, Any]:
        return {"random": [line.to_json() for line in self.random],
                "precision": [line.to_json() for line in self.precision],
                "fallback_random": self.fallback_random, "emulate_precision_casts": self.emulate_precision_casts,
                "random_note": self.random_note, "precision_note": self.precision_note}


def _settings(metrics: Mapping[str, Any] | None) -> dict[str, bool]:
    dump = (metrics or {}).get("inductor_config")
    if not isinstance(dump, str):
        return {}
    return {m["key"]: m["value"] == "true" for m in _SETTING.finditer(dump)}


def _add(lines: dict[tuple[str, int], NumericsLine], site: UserLocation, key: str, ops: list[str],
         dtype: str | None = None) -> None:
    line = lines.setdefault(site.key, NumericsLine(site, dtype=dtype))
    if key not in line.compile_ids:
        line.compile_ids.append(key)
    line.ops.extend(op for op in dict.fromkeys(ops) if op not in line.ops)


def numerics(trace: Trace) -> Numerics:
    out = Numerics()
    random: dict[tuple[str, int], NumericsLine] = {}
    precision: dict[tuple[str, int], NumericsLine] = {}
    for entry in trace.sorted_compiles():
        if entry.compile_id is None:
            continue
        key = compilation_key(entry.compile_id)
        settings = _settings(entry.metrics)
        if settings.get("fallback_random"):
            out.fallback_random.append(key)
        if settings.get("emulate_precision_casts"):
            out.emulate_precision_casts.append(key)
        low: list[tuple[UserLocation, str, str]] = []  # (site, op, dtype) of the low-precision ops fed by another
        # On a cache hit the post-grad graph is the cached one, of the lines of the run that compiled it
        lines = run_lines(trace, entry)
        for artifact in entry.artifacts:
            if artifact.name not in POST_GRAD or artifact.payload is None:
                continue
            text = trace.payload_text(artifact.payload)
            if not any(op in text for op in INDUCTOR_RANDOM_OPS) and not any(f'"{d}[' in text for d in LOW_PRECISION):
                continue  # (most graphs: no random op and no low-precision node to read the lines for)
            nodes = _nodes(text)
            # One low-precision op rounds once, as eager does; where one feeds another, fusion keeps float32 between
            chained = _chained(nodes)
            for site in fx_node_sites(text):
                line = lines.line(site.path, site.line, site.function, site.code) if lines else site.line
                loc = UserLocation(site.path, line, site.function, site.code)
                block = [(name, nodes[name]) for name in site.nodes if name in nodes]
                rand = [op for _, (_, op, _) in block if op in INDUCTOR_RANDOM_OPS]
                if rand:
                    _add(random, loc, key, rand)
                low.extend((loc, op, dtype) for name, (dtype, op, _) in block if name in chained)
        if not settings.get("emulate_precision_casts"):
            for loc, op, dtype in low:
                _add(precision, loc, key, [op], LOW_PRECISION[dtype])
    out.random = list(random.values())
    out.precision = sorted(precision.values(), key=lambda line: line.location.key)
    return out


def _nodes(text: str) -> dict[str, tuple[str, str, set[str]]]:
    """Each node of a post-grad graph dump that calls a torch op, with its dtype, op and the names in its arguments:
    {"sub": ("bf16", "sub", {"mean_1", "mul_1"})}."""
    return {m["name"]: (m["dtype"], m["op"], set(_NAME.findall(m["args"])))
            for m in map(_NODE.match, text.splitlines()) if m is not None and m["ns"] not in _OWN_KERNEL_NAMESPACES}


def _chained(nodes: dict[str, tuple[str, str, set[str]]]) -> set[str]:
    """The low-precision compute nodes that take another's result, and those whose result another takes; and the
    casts to low precision whose result such a node takes."""
    low = {name for name, (dtype, op, _) in nodes.items() if dtype in LOW_PRECISION and op not in _NOT_FUSED}
    # A cast down (`h = x.to(torch.bfloat16)`) fused with the op that takes it is dropped too: Inductor computes from
    # the wider value (Triton's `tmp0.to(tl.float32)` of a float32 input; C++ converts and uses the float), where eager
    # rounds it first.
    casts = {name for name, (dtype, op, _) in nodes.items() if dtype in LOW_PRECISION and op == "convert_element_type"}
    found: set[str] = set()
    for name in low:
        fed_by = nodes[name][2] & (low | casts)
        if fed_by:
            found |= fed_by | {name}
    return found
