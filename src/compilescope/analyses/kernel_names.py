"""What a library's GPU kernel is, from its name: "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_..._cublas" is a cuBLAS
float32 GEMM. A profile names the kernels the libraries launch by their mangled or generated names, which say the
library, the operation and the data type to a reader who knows the conventions; the report says them in words and
keeps the name (runtime rows keep it as their name, --json too).

Patterns, from the kernels of the real CUDA profiles in tests/data/cuda_torch211 and ../shared/traces/gpu-torch211
(cuBLAS's xmma and CUTLASS GEMMs, cuBLASLt's split-K reduction, PyTorch's memory-efficient attention) and the names
the libraries give their kernels (NCCL's ncclDevKernel_AllReduce_Sum_f32_RING_LL, cuDNN's implicit-GEMM
convolutions, FlashAttention's flash_fwd_kernel, cuBLAS's older ampere_sgemm_128x64_tn). A name matching none is
no library's as far as compilescope knows: None.
"""

from __future__ import annotations

import re

# cuBLAS's xmma kernels: sm80_xmma_gemm_<A B types>_<compute types>_<C type>_..._cublas; the middle pair says what
# the math ran in (tf32 where TF32 tensor cores are on).
_XMMA_GEMM = re.compile(r"^sm\d+_xmma_gemm_(?P<ab>[a-z0-9]+?)_(?P<compute>[a-z0-9]+?)_[a-z0-9]+_.*cublas")
# cuDNN's convolutions: implicit GEMMs named for the pass (fprop, dgrad, wgrad), or in the cudnn namespace.
_XMMA_CONV = re.compile(r"^(?:void )?(?:cudnn::|sm\d+_xmma_)(?:\w+::)*(?P<pass>fprop|dgrad|wgrad)")
_CUDNN = re.compile(r"^(?:void )?cudnn::")
_CUTLASS = re.compile(r"cutlass_(?P<arch>\d+)_(?P<kind>simt|tensorop|wmma)_(?P<type>[a-z]*?)(?P<shape>\d+)?gemm"
                      r"(?:_(?P<inputs>bf16|f16)_)?")
_OLD_CUBLAS = re.compile(r"^(?:maxwell|pascal|volta|turing|ampere|hopper)_(?:(?P<type>fp16|bf16|int8)_)?"
                         r"(?P<letter>[shdcz])?(?:\d+)?gemm")
_NCCL = re.compile(r"^(?:void )?nccl(?:Dev)?Kernel_(?P<op>[A-Za-z]+)")
_SPLIT_K = re.compile(r"^(?:void )?cublasLt::splitKreduce")
_MEM_EFFICIENT = re.compile(r"^(?:void )?fmha_cutlass(?P<pass>[FB])_")
_FLASH = re.compile(r"^(?:void )?(?:pytorch_flash::|flash::)?flash_(?P<pass>fwd|bwd)")

_TYPES = {"f32": "float32", "tf32": "TF32", "f16": "float16", "bf16": "bfloat16", "f64": "float64", "i8": "int8",
          "s": "float32", "h": "float16", "d": "float64", "c": "complex64", "z": "complex128", "fp16": "float16",
          "int8": "int8"}
_CONV_PASS = {"fprop": "forward", "dgrad": "backward (input gradient)", "wgrad": "backward (weight gradient)"}


def _xmma_type(ab: str, compute: str) -> str | None:
    """"f32f32", "tf32f32" -> the type the multiply ran in: the compute pair's first, else the inputs'."""
    for part in (compute, ab):
        found = re.match(r"(tf32|bf16|f16|f32|f64|i8)", part)
        if found:
            return _TYPES[found[1]]
    return None


def library_kernel(name: str) -> str | None:
    """"cuBLAS float32 GEMM": what a library's kernel is, in words, from its name (None: no library's known)."""
    if m := _XMMA_CONV.match(name):
        return f"cuDNN convolution, {_CONV_PASS[m['pass']]}"
    if _CUDNN.match(name):
        return "cuDNN kernel"
    if m := _XMMA_GEMM.match(name):
        dtype = _xmma_type(m["ab"], m["compute"])
        split = ", split-K" if "split_k" in name else ""
        return f"cuBLAS {dtype + ' ' if dtype else ''}GEMM{split}"
    if _SPLIT_K.match(name):
        return "cuBLAS split-K reduction (sums a split GEMM's parts)"
    if m := _MEM_EFFICIENT.match(name):
        return f"memory-efficient attention (SDPA), {'forward' if m['pass'] == 'F' else 'backward'}"
    if m := _FLASH.match(name):
        return f"FlashAttention (SDPA), {'forward' if m['pass'] == 'fwd' else 'backward'}"
    if m := _CUTLASS.search(name):
        # simt: CUDA cores; tensorop: tensor cores. The letter is the accumulator's type: an "s" (float32) tensor-core
        # GEMM takes 16-bit inputs where the name says so (s16816gemm_bf16_...), and float32 in as TF32 in the 1688
        # shape from sm80 on (s1688gemm_...); others with no input type said are left untyped.
        if m["inputs"]:
            dtype = _TYPES[m["inputs"]]
        elif m["kind"] == "tensorop" and m["type"] == "s":
            dtype = "TF32" if m["shape"] == "1688" and int(m["arch"]) >= 80 else None  # (no TF32 before Ampere)
        else:
            dtype = _TYPES.get(m["type"])
        cores = " on tensor cores" if m["kind"] != "simt" else ""
        return f"CUTLASS {dtype + ' ' if dtype else ''}GEMM{cores}"
    if m := _NCCL.match(name):
        return f"NCCL {m['op']}"
    if m := _OLD_CUBLAS.match(name):
        dtype = _TYPES.get(m["type"] or m["letter"] or "")
        return f"cuBLAS {dtype + ' ' if dtype else ''}GEMM"
    return None


__all__ = ["library_kernel"]
