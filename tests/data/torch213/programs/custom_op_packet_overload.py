"""Custom ops called through the packet (torch.ops.mylib.scale(...)), which torch resolves to an overload by the
arguments given: the default mylib::scale (schema line 24, impl line 28) writes nothing; mylib::scale.out (schema
line 25, impl registered line 38) adds x * factor into out (out.add_, line 34), and its schema does not mark out
written (`Tensor out`, no `(a!)`), so torch.compile takes it for functional.

scale_into_then_read ([0/0]) calls the packet twice: `torch.ops.mylib.scale(x, 3.0)` (line 45), which torch resolves
to the default, and `torch.ops.mylib.scale(x, 2.0, out=buf)` (line 46), which it resolves to scale.out (the default
takes no `out`). It reads buf (buf * 1, line 44) before that call: Inductor may compute that read after it.
both_on_one_line ([1/0]) makes both calls on one line (51): the log's graphs place a node by its line only, so which
of that line's two calls ran which overload they do not say. out_unused ([2/0]) calls the packet with `out` (line 55)
and leaves its result unused: AOTAutograd drops the call (and its write), so no graph says which overload it was.
Dynamo's graphs name the packet for each call (`torch.ops.mylib.scale`); AOTAutograd's the overload each ran
(`mylib.scale.default`, `mylib.scale.out`).
The program prints what each computes, eager and compiled, from the same inputs.
Run: TORCH_TRACE=/tmp/t python custom_op_packet_overload.py
"""
import torch

torch.manual_seed(0)

# Each overload has its own schema and implementation; calling the packet, torch picks the overload whose schema the
# arguments fit
lib = torch.library.Library("mylib", "DEF")
lib.define("scale(Tensor x, float factor) -> Tensor")
lib.define("scale.out(Tensor x, float factor, *, Tensor out) -> Tensor")


@torch.library.impl(lib, "scale", "CompositeExplicitAutograd")
def scale(x, factor):
    return x * factor


def scale_out(x, factor, *, out):
    out.add_(x * factor)
    return x * 2


lib.impl("scale.out", scale_out, "CPU")
torch.library.register_fake("mylib::scale", lambda x, factor: torch.empty_like(x), lib=lib)
torch.library.register_fake("mylib::scale.out", lambda x, factor, *, out: torch.empty_like(x), lib=lib)


def scale_into_then_read(x, buf):
    before = buf * 1
    tripled = torch.ops.mylib.scale(x, 3.0)
    doubled = torch.ops.mylib.scale(x, 2.0, out=buf)
    return before + tripled + doubled


def both_on_one_line(x, buf):
    return buf * 1 + torch.ops.mylib.scale(x, 3.0) + torch.ops.mylib.scale(x, 2.0, out=buf)


def out_unused(x, buf):
    torch.ops.mylib.scale(x, 2.0, out=buf)
    return buf * 1


for fn in (scale_into_then_read, both_on_one_line, out_unused):
    x, buf = torch.randn(8), torch.randn(8)
    with torch.no_grad():
        buf_eager, buf_compiled = buf.clone(), buf.clone()
        expected = fn(x, buf_eager)
        got = torch.compile(fn)(x, buf_compiled)
    print(f"{fn.__name__}: eager {expected.sum().item():.4f} compiled {got.sum().item():.4f} "
          f"max abs diff {(got - expected).abs().max().item():.3g}; "
          f"buf afterwards differs by {(buf_compiled - buf_eager).abs().max().item():.3g}", flush=True)
