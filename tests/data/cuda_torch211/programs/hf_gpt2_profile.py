"""CUDA scenario: a steady-state torch.profiler trace of transformers' GPT-2 eager and compiled (default mode), in one
profile (record_function ranges "eager" and "compiled"). Run as `compilescope run hf_gpt2_profile.py PROFILE.json`:
the log has the compile, the profile only the runs. The model's code is in site-packages (modeling_gpt2.py)."""
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile, record_function  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402


def main(out):
    torch.manual_seed(0)
    torch.set_float32_matmul_precision("high")
    config = GPT2Config(n_layer=4, n_embd=256, n_head=4, vocab_size=2000, n_positions=256)
    model = GPT2LMHeadModel(config).cuda().eval()
    compiled = torch.compile(model)
    ids = torch.randint(0, 2000, (8, 128), device="cuda")
    with torch.no_grad():
        for _ in range(3):  # compile and warm up; warm eager up too (cuBLAS, the allocator)
            compiled(input_ids=ids)
            model(input_ids=ids)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            with record_function("eager"):
                for _ in range(10):
                    model(input_ids=ids)
                torch.cuda.synchronize()
            with record_function("compiled"):
                for _ in range(10):
                    compiled(input_ids=ids)
                torch.cuda.synchronize()
    prof.export_chrome_trace(out)
    print("profile", out)


if __name__ == "__main__":
    main(sys.argv[1])
