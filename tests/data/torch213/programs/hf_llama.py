"""A Hugging Face transformers user compiles a tiny Llama on CPU: forward on two prompt lengths, then generate().

The model is built from a LlamaConfig (2 layers, hidden 64, vocab 256, random weights: no download). The user
compiles the model and calls it on prompts of 5 and 9 tokens, then compiles model.forward, as transformers' docs
show, and calls model.generate(prompt, max_new_tokens=8) on a 6-token prompt. One frame is compiled:
transformers' own decorator around LlamaForCausalLM.forward, reached from the user's lines. Backend aot_eager:
with inductor the same guards fail (checked by hand), but its kernels make the log ~500 KB gzipped.
With HF_VARIANT=fixed the user compiles with dynamic=True, calls the model with keyword arguments as generate() does,
and gives generate() a static cache (cache_implementation="static").

Reproduce: torch 2.13.0+cpu, transformers 5.24.0 with huggingface_hub 2.4.0, tokenizers 0.23.3, safetensors 0.8.0
(pip install --no-deps, so that pip leaves torch alone), e.g.
    PYTHONPATH=<site-packages of transformers> TORCH_TRACE=/tmp/t python hf_llama.py
"""
import os

import torch
from transformers import LlamaConfig, LlamaForCausalLM

FIXED = os.environ.get("HF_VARIANT") == "fixed"
DYNAMIC = True if FIXED else None

torch.manual_seed(0)
config = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
model = LlamaForCausalLM(config).eval()

compiled = torch.compile(model, backend="aot_eager", dynamic=DYNAMIC)
with torch.no_grad():
    for seq_len in (5, 9):
        ids = torch.randint(0, 256, (1, seq_len))
        logits = compiled(input_ids=ids).logits if FIXED else compiled(ids).logits

    model.forward = torch.compile(model.forward, backend="aot_eager", dynamic=DYNAMIC)
    prompt = torch.randint(0, 256, (1, 6))
    if FIXED:
        out = model.generate(prompt, max_new_tokens=8, do_sample=False, cache_implementation="static")
    else:
        out = model.generate(prompt, max_new_tokens=8, do_sample=False)
print(out.shape)
