"""A user's own tensor subclasses through torch.compile (inductor).

UnitTensor: a torch.Tensor subclass whose __torch_function__ tags every output with the unit of its inputs (a str).
ScaledTensor: a wrapper subclass (__torch_dispatch__) holding an inner tensor `_data` and a scale, used as the weight
of ScaledLinear (an nn.Parameter); its dispatch computes with `_data * _scale`.

SUBCLASS_VARIANT unset ("as_written"):
  calibrate(x) is called with a UnitTensor in "cm", then one in "mm": Dynamo traces __torch_function__ and guards on
  x.unit == 'cm' (the attribute it read), so the "mm" call recompiles.
  ScaledTensor has no __tensor_flatten__: at `x @ self.weight` Dynamo cannot trace the weight, ScaledLinear.forward
  is skipped (runs eagerly) and Dynamo compiles ScaledTensor.__torch_dispatch__ on its own instead.
SUBCLASS_VARIANT=meta: ScaledTensor implements __tensor_flatten__ / __tensor_unflatten__ with the scale (a float) as
  metadata: forward compiles, AOTAutograd desugars the weight into its inner tensor; the scale is changed from 0.5
  to 0.25 between calls, which recompiles (the metadata is guarded).
SUBCLASS_VARIANT=fixed: the "mm" reading is converted to "cm" before calibrate (one unit, one compile), and the
  scale is a 0-dim inner tensor (flattened beside _data), changed in place: no recompile.
"""
import os

import torch
import torch.nn as nn
from torch.utils._pytree import tree_map

VARIANT = os.environ.get("SUBCLASS_VARIANT", "as_written")
torch.manual_seed(0)


class UnitTensor(torch.Tensor):
    unit: str

    @staticmethod
    def __new__(cls, data, unit):
        t = torch.Tensor._make_subclass(cls, data)
        t.unit = unit
        return t

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        unit = next(a.unit for a in args if isinstance(a, UnitTensor))
        out = super().__torch_function__(func, types, args, kwargs)
        if isinstance(out, UnitTensor):
            out.unit = unit
        return out


class ScaledTensor(torch.Tensor):
    @staticmethod
    def __new__(cls, data, scale):
        return torch.Tensor._make_wrapper_subclass(cls, data.shape, dtype=data.dtype, requires_grad=False)

    def __init__(self, data, scale):
        self._data = data
        self._scale = scale

    def __repr__(self):
        return f"ScaledTensor({self._data}, scale={self._scale})"

    if VARIANT == "meta":
        def __tensor_flatten__(self):
            return ["_data"], {"scale": self._scale}

        @staticmethod
        def __tensor_unflatten__(inner, meta, outer_size, outer_stride):
            return ScaledTensor(inner["_data"], meta["scale"])
    elif VARIANT == "fixed":
        def __tensor_flatten__(self):
            return ["_data", "_scale"], None

        @staticmethod
        def __tensor_unflatten__(inner, meta, outer_size, outer_stride):
            return ScaledTensor(inner["_data"], inner["_scale"])

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.ops.aten.detach.default:  # nn.Parameter detaches: keep the subclass
            return ScaledTensor(args[0]._data.detach(), args[0]._scale)
        unwrap = lambda a: a._data * a._scale if isinstance(a, ScaledTensor) else a  # noqa: E731
        return func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs))


class ScaledLinear(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.weight = nn.Parameter(ScaledTensor(torch.randn(8, 8), scale), requires_grad=False)

    def forward(self, x):
        return torch.relu(x @ self.weight)


@torch.compile
def calibrate(x):
    return x * 2 + 1


def main():
    readings = [UnitTensor(torch.randn(4), "cm"), UnitTensor(torch.randn(4), "mm")]
    if VARIANT == "fixed":
        readings[1] = UnitTensor(readings[1].as_subclass(torch.Tensor) / 10, "cm")
    for x in readings:
        y = calibrate(x)
        print(type(y).__name__, y.unit)

    lin = ScaledLinear(torch.tensor(0.5) if VARIANT == "fixed" else 0.5)
    compiled = torch.compile(lin)
    print(compiled(torch.randn(2, 8)).shape)
    if VARIANT == "fixed":
        lin.weight._scale.fill_(0.25)
    else:
        lin.weight._scale = 0.25
    print(compiled(torch.randn(2, 8)).shape)


main()
