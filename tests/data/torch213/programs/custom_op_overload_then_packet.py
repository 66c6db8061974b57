"""An overload called by name, then through its packet: torch.ops.mylib.scale.out(x, 2.0, out=buf) and
torch.ops.mylib.scale(shifted, 2.0, out=buf), which torch resolves to scale.out by its arguments. The default
mylib::scale (schema line 27, impl line 32) writes nothing; mylib::scale.out (schema line 28, impl registered line 41)
adds x * factor into out (out.add_, line 37), and its schema does not mark out written (`Tensor out`, no `(a!)`), so
torch.compile takes it for functional.

out_then_packet ([0/0]) reads buf (buf * 1, line 47) before both calls, calls scale.out by name (line 48), reads buf
again into the packet call's input (shifted = buf + first, line 49), then calls the packet (line 50). Dynamo's graph
names the first call `mylib.scale.out` and the second the packet `mylib.scale`; AOTAutograd's and the output code name
both `mylib.scale.out`, in that order. The output code computes `shifted` between the two calls (the second needs it)
and `before` after both: `before` is moved past each call, `shifted` past neither.
line_then_out ([1/0]) calls the packet twice on one line (56), which torch resolves to the default and scale.out, then
scale.out by name (line 57): Dynamo's graph names line 57's call its first `mylib.scale.out`, but the output code's
first scale.out call is line 56's (AOTAutograd's graph runs scale.out once under line 56, once under line 57).
one_left_out ([2/0]) calls scale.out twice on one line (line 63), the first call's result unused: AOTAutograd leaves
it out and keeps the second, and the line alone does not say which of the two the output code's one call is.
The program prints what it computes, eager and compiled, from the same inputs.
Run: TORCH_TRACE=/tmp/t python custom_op_overload_then_packet.py
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


def out_then_packet(x, buf):
    before = buf * 1
    first = torch.ops.mylib.scale.out(x, 2.0, out=buf)
    shifted = buf + first
    second = torch.ops.mylib.scale(shifted, 2.0, out=buf)
    return before + first + second


def line_then_out(x, buf):
    before = buf * 1
    both = torch.ops.mylib.scale(x, 3.0) + torch.ops.mylib.scale(x, 2.0, out=buf)
    last = torch.ops.mylib.scale.out(both, 2.0, out=buf)
    return before + both + last


def one_left_out(x, buf):
    before = buf * 1
    kept = [torch.ops.mylib.scale.out(x, 3.0, out=buf), torch.ops.mylib.scale.out(x, 2.0, out=buf)][1]
    return before + kept


for fn in (out_then_packet, line_then_out, one_left_out):
    x, buf = torch.randn(8), torch.randn(8)
    with torch.no_grad():
        buf_eager, buf_compiled = buf.clone(), buf.clone()
        expected = fn(x, buf_eager)
        got = torch.compile(fn)(x, buf_compiled)
    print(f"{fn.__name__}: eager {expected.sum().item():.4f} compiled {got.sum().item():.4f} "
          f"max abs diff {(got - expected).abs().max().item():.3g}; "
          f"buf afterwards differs by {(buf_compiled - buf_eager).abs().max().item():.3g}", flush=True)
