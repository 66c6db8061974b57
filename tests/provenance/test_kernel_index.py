"""kernel_lines finds every name in one pass; it must agree with tlparse's rule, a scan per kernel."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compilescope.analyses.provenance import without_handle
from compilescope.analyses.provenance.line_mappings import _cpp_start, _not_starting, _python_start, kernel_lines


def scan_per_kernel(lines: list[str], kernels: list[str], language: str) -> dict[str, list[int]]:
    """The rule as tlparse states it: for each kernel, scan the lines (kernels x lines)."""
    python = language == "python"
    start = _python_start(lines) if python else _cpp_start(lines)
    result: dict[str, list[int]] = {}
    for kernel in kernels:
        pure = without_handle(kernel)
        found: list[int] = []
        if ":" in kernel:
            for i in range(start, len(lines)):
                line = lines[i]
                if python:
                    if kernel in line:
                        nxt = next((j for j in range(i + 1, len(lines)) if pure in lines[j]), None)
                        if nxt is not None:
                            found.append(nxt + 1)
                        break
                elif _not_starting(line, "def") and _not_starting(line, "static inline void") and kernel in line:
                    nxt = next((j for j in range(i + 1, len(lines)) if pure in lines[j] and "_xnumel = " not in lines[j]), None)
                    if nxt is not None:
                        found.append(nxt + 1)
                        break
        if not found:
            found = [i + 1 for i in range(start, len(lines)) if pure in lines[i]]
        if found:
            result[kernel] = found
    return result


# Names that are prefixes and substrings of each other (triton_poi_fused_add_1 is inside ..._10), debug handles,
# the wrapper's start markers and the comment shapes torch writes.
NAMES = ["k_1", "k_10", "k_1:3", "k_10:4", "a::k_1:2", "cpp_fused_0", "cpp_fused_0:1", "", ":", "k_1\nx"]
# Lines come from splitting on "\n", so none holds one.
PIECES = [n for n in NAMES if "\n" not in n] + ["def call(args):", "::run_impl(", "def ", "static inline void ", "_xnumel = ", "# Topologically Sorted Source Nodes",
                  " ", "(", ")", "x", "\r"]


@settings(max_examples=400, deadline=None)
@given(lines=st.lists(st.lists(st.sampled_from(PIECES), max_size=4).map("".join), max_size=12),
       kernels=st.lists(st.sampled_from(NAMES), max_size=6, unique=True),
       language=st.sampled_from(["python", "cpp"]))
def test_one_pass_index_equals_a_scan_per_kernel(lines, kernels, language):
    assert kernel_lines(lines, kernels, language) == scan_per_kernel(lines, kernels, language)


def test_a_kernel_name_inside_a_longer_one_is_found_where_tlparse_finds_it():
    lines = ["def call(args):", "    triton_poi_fused_add_10.run(buf0)", "    triton_poi_fused_add_1.run(buf1)"]
    assert kernel_lines(lines, ["triton_poi_fused_add_1", "triton_poi_fused_add_10"], "python") == {
        "triton_poi_fused_add_1": [2, 3], "triton_poi_fused_add_10": [2]}
