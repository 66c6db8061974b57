"""CUDA scenario, run as `compilescope run -- python hf_gpt2_generate.py`: a small GPT-2 of Hugging Face transformers
(built from its config: no download), its forward compiled as the transformers docs show, run on prompts of three
lengths, then used by generate() with its KV cache. The model's code lives in site-packages, not in this file."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402


def main():
    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=1000, n_positions=256)
    model = GPT2LMHeadModel(config).cuda().eval()
    model.forward = torch.compile(model.forward)
    with torch.no_grad():
        for length in (16, 24, 32):  # three prompt lengths: the second recompiles with a dynamic length
            ids = torch.randint(0, 1000, (2, length), device="cuda")
            print("length", length, "logits", float(model(input_ids=ids).logits.float().abs().mean()))
        try:
            out = model.generate(torch.randint(0, 1000, (1, 8), device="cuda"), max_new_tokens=8, do_sample=False,
                                 pad_token_id=0)
            print("generated", tuple(out.shape))
        except Exception as exc:  # noqa: BLE001 - what failed is part of the recording
            print("generate failed:", type(exc).__name__, str(exc).splitlines()[0][:200])
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
