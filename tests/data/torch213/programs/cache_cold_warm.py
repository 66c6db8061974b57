"""Scenario: inductor caches, cold vs warm.

Run the SAME program twice, in two separate processes, with the same
TORCHINDUCTOR_CACHE_DIR and a different TORCH_TRACE dir each time:

    export TORCHINDUCTOR_CACHE_DIR=$(mktemp -d)
    TORCH_TRACE=/tmp/trace_cold python programs/cache_cold_warm.py   # cold
    TORCH_TRACE=/tmp/trace_warm python programs/cache_cold_warm.py   # warm

The cold run's log has `fx_graph_cache_miss` and `aotautograd_cache_miss`
artifacts (and compiles C++); the warm run's log has `fx_graph_cache_hit` and
`aotautograd_cache_hit` instead and does not invoke g++.
(make_traces.py does exactly this and writes logs/cache_cold.log and
logs/cache_warm.log.)
"""
import torch


def f(x):
    return torch.relu(x) + 1


def main():
    cf = torch.compile(f)
    x = torch.randn(8)
    torch.testing.assert_close(cf(x), f(x))


if __name__ == "__main__":
    main()
