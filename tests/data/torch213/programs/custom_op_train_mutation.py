"""A custom op that writes into its argument undeclared, called in a training step (CPU, inductor): the compile is a
training one, AOTAutograd splits it into a forward graph and a backward graph, and Inductor compiles each to its own
output code, the forward's logged first, then the backward's.

mylib::scale adds x * factor into buf (buf.add_, line 19) and declares mutates_args=(), so torch.compile takes it
for functional. step ([0/0]) reads buf (buf * 1, line 29) before calling scale (line 30), then multiplies both by a
weight that requires grad and sums them (line 31): Inductor fuses the read into the kernel after the call (the
forward's output code), which reads buf already written. The backward's output code calls no custom op.
The program prints the loss and the weight's grad, eager and compiled, from the same inputs: they differ.
Run: TORCH_TRACE=/tmp/t python custom_op_train_mutation.py
"""
import torch

torch.manual_seed(0)


@torch.library.custom_op("mylib::scale", mutates_args=())
def scale(x: torch.Tensor, buf: torch.Tensor, factor: float) -> torch.Tensor:
    buf.add_(x * factor)
    return x * factor


@scale.register_fake
def _(x, buf, factor):
    return torch.empty_like(x)


def step(w, x, buf):
    before = buf * 1
    scaled = scale(x, buf, 2.0)
    return ((before + scaled) * w).sum()


w = torch.randn(8, requires_grad=True)
x, buf = torch.randn(8), torch.randn(8)
buf_eager, buf_compiled = buf.clone(), buf.clone()
loss_eager = step(w, x, buf_eager)
loss_eager.backward()
grad_eager = w.grad.clone()
w.grad = None
loss_compiled = torch.compile(step)(w, x, buf_compiled)
loss_compiled.backward()
print(f"step: eager loss {loss_eager.item():.4f} compiled {loss_compiled.item():.4f}; "
      f"grad max abs diff {(w.grad - grad_eager).abs().max().item():.3g}; "
      f"buf afterwards differs by {(buf_compiled - buf_eager).abs().max().item():.3g}", flush=True)
