
import os
os.environ['TORCH_CUDA_ARCH_LIST'] = '9.0a'
os.environ['TORCHINDUCTOR_COMPILE_THREADS'] = '4'
os.environ['TRITON_BUG'] = 'compile_error'
os.environ['TORCH_COMPILE_DEBUG_DIR'] = '/tmp/compilescope_diagnose__17o527u/debug/minify_program'
os.environ['TORCHINDUCTOR_CACHE_DIR'] = '/tmp/compilescope_diagnose__17o527u/inductor_cache/minify_program'
os.environ['TORCHDYNAMO_REPRO_AFTER'] = 'aot'
os.environ['TORCHDYNAMO_REPRO_LEVEL'] = '2'
os.environ['TRITON_CACHE_DIR'] = '/tmp/compilescope_diagnose__17o527u/inductor_cache/minify_program/triton/0'

import torch
from torch import tensor, device
import torch.fx as fx
from torch._dynamo.testing import rand_strided
from math import inf
import torch._inductor.inductor_prims



import torch._dynamo.config
import torch._inductor.config
import torch._functorch.config
import torch.fx.experimental._config

torch._inductor.config.deterministic = False
torch._inductor.config.generate_intermediate_hooks = True
torch._inductor.config.triton.store_cubin = False
torch._inductor.config.triton.inject_relu_bug_TESTING_ONLY = 'compile_error'
torch._inductor.config.test_configs.runtime_triton_dtype_assert = False
torch._functorch.config.functionalize_rng_ops = False
torch._functorch.config.fake_tensor_allow_unsafe_data_ptr_access = True
torch._functorch.config.unlift_effect_tokens = True
torch._functorch.config.selective_decompose = False



isolate_fails_code_str = None





if "__compile_source__" in globals():
    import inspect as __after_aot_inspect
    import linecache as __after_aot_linecache
    __after_aot_filename = __after_aot_inspect.currentframe().f_code.co_filename
    __after_aot_linecache.cache[__after_aot_filename] = (
        len(__compile_source__),
        None,
        __compile_source__.splitlines(True),
        __after_aot_filename,
    )
# torch version: 2.11.0+cu130
# torch cuda version: 13.0
# torch git version: 70d99e998b4955e0049d13a98d77ae1b14db1f45


# CUDA Info: 
# nvcc: NVIDIA (R) Cuda compiler driver 
# Copyright (c) 2005-2025 NVIDIA Corporation 
# Built on Wed_Aug_20_01:58:59_PM_PDT_2025 
# Cuda compilation tools, release 13.0, V13.0.88 
# Build cuda_13.0.r13.0/compiler.36424714_0 

# GPU Hardware Info: 
# NVIDIA H100 80GB HBM3 : 1 

torch._higher_order_ops.triton_kernel_wrap.kernel_side_table.reset_table()

from torch.nn import *
class Repro(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()



    def forward(self, mm):
        relu = torch.ops.aten.relu.default(mm);  mm = None
        return (relu,)

def load_args(reader):
    buf0 = reader.storage('a9e03c872b75800028450c47dfc7fdd617bc0787', 16384, device=device(type='cuda', index=0))
    reader.tensor(buf0, (64, 64), is_leaf=True)  # mm
load_args._version = 0
mod = Repro()
if __name__ == '__main__':
    from torch._dynamo.repro.after_aot import run_repro
    with torch.no_grad():
        run_repro(mod, load_args, accuracy=False, command='run', save_dir='/tmp/compilescope_diagnose__17o527u/debug/minify_program/torch_compile_debug/run_2026_11_27_12_57_39_850527-pid_1761/minifier/checkpoints', tracing_mode='real', check_str=None)
        # To run it separately, do 
        # mod, args = run_repro(mod, load_args, accuracy=False, command='get_args', save_dir='/tmp/compilescope_diagnose__17o527u/debug/minify_program/torch_compile_debug/run_2026_11_27_12_57_39_850527-pid_1761/minifier/checkpoints', tracing_mode='real', check_str=None)
        # mod(*args)