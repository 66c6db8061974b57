"""A stand-in for transformers, which the tests do not install: only the module path and class name the guard
trees of odd_sources.py name (transformers.cache_utils.DynamicCache)."""
