"""Custom ops defined the older way, with a schema string (torch.library.Library(...).define), whose implementation
writes into an argument the schema does not mark written (CPU, inductor): a silent wrong result.

  mylib::scale_into (schema line 25, impl line 29) adds x into buf in place (buf.add_(x), line 31), returns x * 2;
  mylib::clamp_into (schema line 26, impl line 40) clips buf in place (buf.clamp_(-limit, limit), line 36).
Neither schema writes `Tensor(a!) buf`, so torch.compile takes both ops for functional:
  add_then_read reads buf (buf * 1, line 46) before calling scale_into; Inductor computes that read after the call;
  clamp_then_read ignores clamp_into's result; AOTAutograd drops the call as dead code, and the clip with it.
The program prints what each computes, eager and compiled, from the same inputs.
LIBOP_VARIANT=fixed: both schemas say `Tensor(a!) buf`: compiled matches eager.
Run: TORCH_TRACE=/tmp/t python custom_op_define_mutation.py
"""
import os

import torch

FIXED = os.environ.get("LIBOP_VARIANT") == "fixed"
torch.manual_seed(0)

lib = torch.library.Library("mylib", "DEF")
if FIXED:
    lib.define("scale_into(Tensor x, Tensor(a!) buf) -> Tensor")
    lib.define("clamp_into(Tensor(a!) buf, float limit) -> Tensor")
else:
    lib.define("scale_into(Tensor x, Tensor buf) -> Tensor")
    lib.define("clamp_into(Tensor buf, float limit) -> Tensor")


@torch.library.impl(lib, "scale_into", "CompositeExplicitAutograd")
def scale_into(x, buf):
    buf.add_(x)
    return x * 2


def clamp_into(buf, limit):
    buf.clamp_(-limit, limit)
    return buf.clone()


lib.impl("clamp_into", clamp_into, "CPU")
torch.library.register_fake("mylib::scale_into", lambda x, buf: torch.empty_like(x), lib=lib)
torch.library.register_fake("mylib::clamp_into", lambda buf, limit: torch.empty_like(buf), lib=lib)


def add_then_read(x, buf):
    before = buf * 1
    doubled = torch.ops.mylib.scale_into(x, buf)
    return before + doubled


def clamp_then_read(x, buf):
    torch.ops.mylib.clamp_into(buf, 0.5)
    return buf + x


for fn in (add_then_read, clamp_then_read):
    x, buf = torch.randn(8), torch.randn(8)
    with torch.no_grad():
        buf_eager, buf_compiled = buf.clone(), buf.clone()
        expected = fn(x, buf_eager)
        got = torch.compile(fn)(x, buf_compiled)
    print(f"{fn.__name__}: eager {expected.sum().item():.4f} compiled {got.sum().item():.4f} "
          f"max abs diff {(got - expected).abs().max().item():.3g}; "
          f"buf afterwards differs by {(buf_compiled - buf_eager).abs().max().item():.3g}", flush=True)
