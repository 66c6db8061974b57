"""Scenario: automatic dynamic shapes, shape guards, specialization, mark_dynamic.

Run standalone:  TORCH_TRACE=/tmp/trace python programs/dynamic_shapes.py

backend="aot_eager" (AOT autograd graphs, no inductor codegen) to keep the log
small.

Function `f` is called with x of shape (n, 3) for n = 2, 3, 4, 5
(default config: automatic_dynamic_shapes=True):
  - n=2: static compile 0/0
  - n=3: size mismatch -> recompile 0/1 with dim 0 dynamic (create_symbol s..);
         `x.shape[0] == 5` is False -> guard Ne(s.., 5) (guard_added_fast)
  - n=4: served by 0/1
  - n=5: guard Ne(s.., 5) fails -> recompile 0/2; now `x.shape[0] == 5` is True,
         so the symbol is specialized to 5 (symbolic_shape_specialization).

Function `g` receives tensors with `torch._dynamo.mark_dynamic(x, 0)` so it is
compiled dynamic from the first call (compile 1/0), and the second call with
another size reuses it.  The reshape(-1, 2) adds a divisibility guard.
"""
import torch


def f(x):
    if x.shape[0] == 5:  # shape-dependent branch -> guard / specialization
        return x - 1
    return x * 2 + x.shape[0]


def g(x):
    return (x + 1).reshape(-1, 2).sum(1)


def main():
    cf = torch.compile(f, backend="aot_eager")
    for n in (2, 3, 4, 5):
        x = torch.ones(n, 3)
        torch.testing.assert_close(cf(x), f(x))

    cg = torch.compile(g, backend="aot_eager")
    x = torch.ones(6)
    torch._dynamo.mark_dynamic(x, 0)
    torch.testing.assert_close(cg(x), g(x))
    x2 = torch.ones(10)
    torch._dynamo.mark_dynamic(x2, 0)
    torch.testing.assert_close(cg(x2), g(x2))


if __name__ == "__main__":
    main()
