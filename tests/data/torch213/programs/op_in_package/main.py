"""A program laid out as a package (the script main.py beside pkg/): the compiled function lives in pkg/model.py,
which imports its custom op with an absolute import, `from pkg.ops import scale`. Python finds pkg.ops in the
script's folder (sys.path[0]), not beside pkg/model.py.

  projlib::scale (pkg/ops.py line 6) declares mutates_args=() but does x.mul_(factor) (line 8);
  shift_then_scale (pkg/model.py line 7, backend aot_eager) ignores its result, so AOTAutograd drops the call as
  dead code, and the write with it: compiled differs from eager.
The program prints what each computes, eager and compiled, from the same input.
Run: TORCH_TRACE=/tmp/t python op_in_package/main.py
"""
from pkg.model import run

run()
