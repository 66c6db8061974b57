"""A scientific-computing user: torch.func transforms and NumPy code under torch.compile (eager backend).

FUNC_VARIANT unset ("as_written"):
  per_sample_grads: vmap(grad(functional_call(model, ...))) over a batch: captured whole.
  jacobian: jacrev of a function that calls .item() inside the transform: a graph break inside torch.func.
  np_features: np.sin / np.exp on x.numpy() (Dynamo traces NumPy through torch._numpy), and np.random.rand too.
  np_normalize: takes NumPy arrays; called with float32, then float64, then another shape: recompiles.
  horner: a loop over a Python list of float coefficients: the floats are constants of the graph; new coefficients
  recompile.
FUNC_VARIANT=fixed: energy scales by a constant (no .item()), torch.rand instead of np.random, one dtype for the arrays,
the coefficients a tensor.
"""
import os

import numpy as np
import torch
from torch.func import functional_call, grad, jacrev, vmap

FIXED = os.environ.get("FUNC_VARIANT", "as_written") == "fixed"
torch.manual_seed(0)
np.random.seed(0)
model = torch.nn.Linear(3, 1)
params = {k: v.detach() for k, v in model.named_parameters()}


def sample_loss(p, x, y):
    return ((functional_call(model, p, (x,)) - y) ** 2).sum()


@torch.compile(backend="eager")
def per_sample_grads(p, xs, ys):
    return vmap(grad(sample_loss), in_dims=(None, 0, 0))(p, xs, ys)


def energy(x):
    scale = 2.0 if FIXED else x.sum().item()
    return (x ** 3).sum() * scale


@torch.compile(backend="eager")
def jacobian(x):
    return jacrev(energy)(x)


@torch.compile(backend="eager")
def np_features(x):
    a = x.numpy()
    feats = np.sin(a) + np.exp(-a)
    noise = torch.rand(a.shape).numpy() if FIXED else np.random.rand(*a.shape)
    return torch.from_numpy(feats + 0.01 * noise)


@torch.compile(backend="eager")
def np_normalize(a):
    return (a - a.mean()) / (a.std() + 1e-6)


@torch.compile(backend="eager")
def horner(x, coeffs):
    acc = torch.zeros_like(x)
    for c in coeffs:
        acc = acc * x + c
    return acc


xs, ys = torch.randn(8, 3), torch.randn(8, 1)
per_sample_grads(params, xs, ys)
jacobian(torch.randn(4))
for _ in range(2):
    np_features(torch.randn(5))
np_normalize(np.random.rand(6).astype(np.float32))
np_normalize(np.random.rand(6).astype(np.float32 if FIXED else np.float64))
np_normalize(np.random.rand(6 if FIXED else 9).astype(np.float32))
x = torch.linspace(0, 1, 5)
for coeffs in ([1.0, -2.0, 0.5], [1.0, -2.0, 0.25], [3.0, 0.0, 1.0]):
    horner(x, torch.tensor(coeffs) if FIXED else coeffs)
print("done")
