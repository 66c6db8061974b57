"""A tensor and a KV cache reached through dict keys with ", " in them: Dynamo names them `L['d'][(1, 2)]` (a tuple
key) and `L['c']['a, b']` (a str key), sources with commas and spaces inside, in its guard trees' TENSOR_MATCH and
GuardManager lines. The tensor's size changes (a recompile that says where d[(1, 2)] is first used, line 14), then the
cache's (a size of transformers' KV cache). transformers is no dependency of the tests: odd_sources_site/ holds a
stand-in transformers.cache_utils.DynamicCache, put first on PYTHONPATH, which is what the guard trees name by
module and class.
"""
import torch
from transformers.cache_utils import DynamicCache


@torch.compile(backend="eager", dynamic=False)
def f(d, c):
    return d[(1, 2)].sum() + c["a, b"].keys.sum()


for n in (3, 5):
    f({(1, 2): torch.ones(n)}, {"a, b": DynamicCache(2)})
for n in (2, 6):
    f({(1, 2): torch.ones(3)}, {"a, b": DynamicCache(n)})
