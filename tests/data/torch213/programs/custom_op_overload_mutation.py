"""Custom ops called as an overload (torch.ops.mylib.shift.into, torch.ops.mylib.scale.out), each defined by its own
schema string and implementation (CPU, inductor):

  mylib::shift.into (schema line 18, impl line 28) adds x into buf in place (buf.add_(x), line 30), returns x * 2;
  its schema does not mark buf written, so torch.compile takes it for functional: add_then_read reads buf
  (buf * 1, line 45) before the call, and Inductor computes that read after it;
  mylib::scale.out (schema line 20, impl registered line 38) writes x * factor into out (out.copy_, line 35), which
  its schema marks written (`Tensor(a!) out`): AOTAutograd wraps it in auto_functionalized, compiled matches eager.
The default overload mylib::scale (schema line 19, impl line 23) writes nothing.
The program prints what each computes, eager and compiled, from the same inputs.
Run: TORCH_TRACE=/tmp/t python custom_op_overload_mutation.py
"""
import torch

torch.manual_seed(0)

lib = torch.library.Library("mylib", "DEF")
lib.define("shift.into(Tensor x, Tensor buf) -> Tensor")
lib.define("scale(Tensor x, float factor) -> Tensor")
lib.define("scale.out(Tensor x, float factor, *, Tensor(a!) out) -> ()")


@torch.library.impl(lib, "scale", "CompositeExplicitAutograd")
def scale(x, factor):
    return x * factor


@torch.library.impl(lib, "shift.into", "CompositeExplicitAutograd")
def shift_into(x, buf):
    buf.add_(x)
    return x * 2


def scale_out(x, factor, *, out):
    out.copy_(x * factor)


lib.impl("scale.out", scale_out, "CPU")
torch.library.register_fake("mylib::shift.into", lambda x, buf: torch.empty_like(x), lib=lib)
torch.library.register_fake("mylib::scale", lambda x, factor: torch.empty_like(x), lib=lib)
torch.library.register_fake("mylib::scale.out", lambda x, factor, *, out: None, lib=lib)


def add_then_read(x, buf):
    before = buf * 1
    doubled = torch.ops.mylib.shift.into(x, buf)
    return before + doubled


def scale_then_read(x, buf):
    tripled = torch.ops.mylib.scale(x, 3.0)
    torch.ops.mylib.scale.out(x, 2.0, out=buf)
    return tripled + buf


for fn in (add_then_read, scale_then_read):
    x, buf = torch.randn(8), torch.randn(8)
    with torch.no_grad():
        buf_eager, buf_compiled = buf.clone(), buf.clone()
        expected = fn(x, buf_eager)
        got = torch.compile(fn)(x, buf_compiled)
    print(f"{fn.__name__}: eager {expected.sum().item():.4f} compiled {got.sum().item():.4f} "
          f"max abs diff {(got - expected).abs().max().item():.3g}; "
          f"buf afterwards differs by {(buf_compiled - buf_eager).abs().max().item():.3g}", flush=True)
