"""The compiled function, calling pkg.ops's op by an absolute import (found from the script's folder)."""
import torch

from pkg.ops import scale


def shift_then_scale(x):
    shifted = x + 1
    scale(x, 2.0)  # (result unused: x is meant to be doubled in place)
    return shifted * x


def run():
    torch.manual_seed(0)
    x = torch.randn(8)
    eager = shift_then_scale(x.clone())
    compiled = torch.compile(shift_then_scale, backend="aot_eager")(x.clone())
    print(f"shift_then_scale: eager {eager.sum().item():.4f} compiled {compiled.sum().item():.4f} "
          f"max abs diff {(eager - compiled).abs().max().item():.3g}")
