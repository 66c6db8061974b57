"""A stand-in for transformers.cache_utils.DynamicCache: an object holding a keys tensor of n rows."""
import torch


class DynamicCache:
    def __init__(self, n):
        self.keys = torch.zeros(n, 4)
