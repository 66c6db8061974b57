"""CUDA scenario, run as `compilescope run -- python hf_gpt2_static_cache.py`: the recipe of transformers' docs for
fast generation, a static KV cache with the forward compiled in reduce-overhead mode (CUDA graphs) and
fullgraph=True, on a small GPT-2 built from its config (no download). Two prompts of different lengths, 8 new tokens
each. The model's code lives in site-packages, not in this file."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402


def main():
    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=1000, n_positions=256)
    model = GPT2LMHeadModel(config).cuda().eval()
    model.generation_config.cache_implementation = "static"
    model.forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)
    with torch.no_grad():
        for length in (8, 12):
            try:
                out = model.generate(torch.randint(0, 1000, (1, length), device="cuda"), max_new_tokens=8,
                                     do_sample=False, pad_token_id=0)
                print("prompt", length, "generated", tuple(out.shape))
            except Exception as exc:  # noqa: BLE001 - what failed is part of the recording
                print("generate failed:", type(exc).__name__, str(exc).splitlines()[0][:300])
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
