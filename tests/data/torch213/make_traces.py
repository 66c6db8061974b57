#!/usr/bin/env python3
"""Regenerate the TORCH_TRACE fixture logs in logs/ from the programs in programs/.

How to run (from anywhere; paths are relative to this file):

    python3 tests/data/torch213/make_traces.py              # all scenarios
    python3 tests/data/torch213/make_traces.py recompiles   # only some
    python3 tests/data/torch213/make_traces.py --list       # list scenarios

Requirements: torch==2.13.0 (CPU build) and g++ (inductor's CPU backend
compiles C++).  A full run takes about two minutes on 2 cores.

For every scenario the program runs in a fresh subprocess with
  TORCH_TRACE=<fresh temp dir>          (TORCH_DTRACE for export_draft)
  TORCHINDUCTOR_CACHE_DIR=<fresh temp dir>
(cache_cold and cache_warm share one cache dir: cold runs first, warm second),
and the single log file the run writes (dedicated_log_torch_trace_*.log) is
copied to logs/<scenario>.log.  Inherited TORCH_LOGS / TORCH_TRACE /
TORCH_DTRACE / TORCH_COMPILE_DEBUG / INDUCTOR_PROVENANCE are removed from the
child environment so the logs do not depend on the caller's shell.

The logs are real and therefore not reproducible byte for byte: they contain
timestamps, pids, absolute paths, hashes and durations of this machine.
"""
import argparse
import dataclasses
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "programs"
LOGS = HERE / "logs"


@dataclass
class Scenario:
    name: str  # output: logs/<name>.log
    program: str  # file in programs/
    expect_rc: int | None = 0  # expected exit status (None: any non-zero)
    trace_var: str = "TORCH_TRACE"  # or TORCH_DTRACE
    env: dict = field(default_factory=dict)
    cache_group: str | None = None  # scenarios sharing an inductor cache dir
    gzip: bool = False  # write logs/<name>.log.gz (big logs; the reader takes .gz as it is)
    # Keep every log the process wrote, each gzipped under the name torch gave it, in <name>/ beside logs/ (draft_export
    # writes a log of its own): not one log of logs/
    parts: bool = False
    # torch.profiler traces the program writes to $PROFILE_DIR (<p>.profile.json), kept as logs/<name>.<p>.profile.json.gz
    profiles: tuple[str, ...] = ()
    # Keep what the program printed (stdout and stderr) as logs/<name>.output.txt: where it prints eager's and the
    # compiled results, the evidence they differ
    keep_output: bool = False


# The environment `compilescope run` gives a program (runner.child_env): compilescope's hooks, provenance on.
RUN_ENV = {"PYTHONPATH": str(HERE.parents[2] / "src" / "compilescope" / "_child"), "COMPILESCOPE_BYTECODE_HOOK": "1",
           "INDUCTOR_PROVENANCE": "1"}

# RUN_ENV, with transformers importable from the site-packages HF_SITE names (it is no test dependency).
HF_ENV = {**RUN_ENV, "PYTHONPATH": os.pathsep.join([RUN_ENV["PYTHONPATH"], os.environ.get("HF_SITE", "")])}

SCENARIOS = [
    Scenario("graph_breaks", "graph_breaks.py"),
    Scenario("source_view", "source_view.py"),
    Scenario("lambda_break", "lambda_break.py", gzip=True),
    Scenario("resume_backend_error", "resume_backend_error.py", expect_rc=None, gzip=True),
    # As `compilescope run` starts programs: its bytecode hook adds the transformed code of every frame.
    Scenario("transformed_code", "source_view.py", env={
        "PYTHONPATH": str(HERE.parents[2] / "src" / "compilescope" / "_child"), "COMPILESCOPE_BYTECODE_HOOK": "1"}),
    # As `compilescope run` starts programs too: the warnings torch prints to stderr are recorded in the log
    # (the variant "fixed" leaves two of the three out, for `compilescope diff`).
    Scenario("torch_warnings", "torch_warnings.py", gzip=True, env=RUN_ENV),
    Scenario("torch_warnings_fixed", "torch_warnings.py", gzip=True, env={**RUN_ENV, "WARNINGS_VARIANT": "fixed"}),
    Scenario("recompiles", "recompiles.py"),
    # A number that changes once is made a symbol (automatic dynamic): one recompile, then none.
    Scenario("automatic_dynamic", "automatic_dynamic.py", gzip=True),
    # The optimizer step compiled with an LR scheduler, as `compilescope run` records it: a Python-float learning
    # rate recompiles Adam.step, and torch's optimizer breaks its own graphs.
    Scenario("compiled_optimizer", "compiled_optimizer.py", gzip=True, env=RUN_ENV),
    # The same recipe with a long cosine schedule: the second learning rate differs from the first past the 8th digit.
    Scenario("cosine_lr", "cosine_lr.py", gzip=True),
    # A custom op segfaults while the compiled code runs: the process dies, and run records faulthandler's stack.
    Scenario("native_crash", "native_crash.py", expect_rc=None, gzip=True, env=RUN_ENV),
    # A backend asserts while torch compiles the second function: the uncaught exception ends the program (status 1),
    # and run records it (the excepthook compilescope chains).
    Scenario("uncaught_exception", "uncaught_exception.py", expect_rc=1, gzip=True, env=RUN_ENV),
    # Inductor's C++ kernel aborts in an OpenMP thread: faulthandler names no current thread.
    Scenario("kernel_abort", "kernel_abort.py", expect_rc=None, gzip=True, env=RUN_ENV),
    # Compiled autograd captures a second backward graph; torch logs why only with its verbose log on.
    Scenario("compiled_autograd", "compiled_autograd.py", gzip=True),
    Scenario("compiled_autograd_verbose", "compiled_autograd.py", gzip=True,
             env={"TORCH_LOGS": "compiled_autograd_verbose"}),
    Scenario("empty_graph", "empty_graph.py"),
    Scenario("dynamic_shapes", "dynamic_shapes.py"),
    # torch.no_grad's decorator around a function: the compiled frame is torch's wrapper, its args[0] a tensor.
    Scenario("nograd_wrapped", "nograd_wrapped.py", gzip=True),
    # Two functions under torch.no_grad: one frame of torch's wrapper for both, only one's compiles with user stacks.
    Scenario("two_wrapped", "two_wrapped.py", gzip=True),
    Scenario("training", "training.py"),
    Scenario("compile_error_fallback", "compile_error_fallback.py"),
    Scenario("compile_error_raises", "compile_error_raises.py", expect_rc=None),
    # A fullgraph=True failure the program catches, then the same function compiled again: not a recompile.
    Scenario("caught_fullgraph", "caught_fullgraph.py", gzip=True),
    Scenario("compile_error_lowering", "compile_error_lowering.py"),
    Scenario("provenance", "provenance.py", env={"INDUCTOR_PROVENANCE": "1"}),
    # Kernel stack traces that run through inlined helper calls (the source pages mark the calling lines).
    Scenario("inlined_helpers", "inlined_helpers.py", gzip=True, env={"INDUCTOR_PROVENANCE": "1"}),
    Scenario("same_cause", "same_cause.py"),
    # A custom autograd.Function (its AOTAutograd cache lookups bypassed) and a global list the compiled step appends
    # to (a length guard that fails on every call, up to the recompile limit).
    Scenario("train_step_pitfalls", "train_step_pitfalls.py", gzip=True),
    Scenario("train_step_pitfalls_no_hits", "train_step_pitfalls.py", gzip=True, env={"PITFALLS_VARIANT": "no_hits"}),
    # loss.item() breaks the graph; the float it returned is the resume function's ___stack0, made dynamic on a recompile.
    Scenario("item_break", "item_break.py", gzip=True),
    Scenario("item_break_steady", "item_break.py", gzip=True, env={"ITEM_VARIANT": "steady"}),
    # A break in a resume function, on a line no graph captures (print), as `compilescope run` records it.
    Scenario("resume_print_break", "resume_print_break.py", gzip=True, env=RUN_ENV),
    # A torch module (a frame of torch's code) compiled with a user backend that raises.
    Scenario("module_backend_error", "module_backend_error.py", gzip=True),
    # A training loop recorded once per torch version (its 2.14 twin: ../torch214/make_traces.py), for diffing an upgrade.
    Scenario("upgrade_train", "upgrade_train.py", gzip=True),
    # A compiled model slower than eager on CPU, profiled eagerly and compiled (steady state, but a new batch size
    # and a branch taken for the first time recompile inside the compiled profile).
    Scenario("cpu_slower_than_eager", "cpu_slower_than_eager.py", gzip=True, env=RUN_ENV,
             profiles=("eager", "compiled")),
    # backend="aot_eager" profiled: compiled regions ran, their ops ATen ops, no Inductor kernel to name.
    Scenario("profile_eager_backend", "profile_eager_backend.py", gzip=True, env=RUN_ENV, profiles=("compiled",)),
    Scenario("profile_eager_backend_mixed", "profile_eager_backend.py", gzip=True,
             env={**RUN_ENV, "PROFILE_VARIANT": "mixed"}, profiles=("compiled",)),
    Scenario("export", "export.py"),
    Scenario("export_draft", "export_draft.py", trace_var="TORCH_DTRACE"),
    # A custom op whose fake kernel disagrees with its real one (dtype), named `count.dims`: a name ending in "s".
    Scenario("export_mismatched_fake", "export_mismatched_fake.py", trace_var="TORCH_DTRACE", gzip=True),
    # A Dim range and a dynamic batch the model's code violates, a data-dependent branch (strict and non-strict
    # export fail), draft_export; _fixed: torch's suggested fixes applied (for `compilescope diff`).
    Scenario("export_constraints", "export_constraints.py", gzip=True),
    Scenario("export_constraints_fixed", "export_constraints.py", gzip=True, env={"EXPORT_VARIANT": "fixed"}),
    # The same under TORCH_DTRACE: export's guard_added / guard_on_data_dependent_error (draft_export's own trace file,
    # the smaller of the two, is not kept).
    Scenario("export_constraints_dtrace", "export_constraints.py", trace_var="TORCH_DTRACE", gzip=True),
    # The same again, both of its logs kept: the process's main log and draft_export's own.
    Scenario("export_dtrace_parts", "export_constraints.py", trace_var="TORCH_DTRACE", parts=True),
    # Three strict exports in one program (two fail): each logs its compilation_metrics with no compile id.
    Scenario("export_strict_several", "export_strict_several.py", gzip=True),
    # Same program twice, same TORCHINDUCTOR_CACHE_DIR, separate processes.
    Scenario("cache_cold", "cache_cold_warm.py", cache_group="cache"),
    Scenario("cache_warm", "cache_cold_warm.py", cache_group="cache"),
    # A slow compile, cold then warm (one cache dir): where the time goes, what recompiles cost, what the cache saved.
    Scenario("slow_compile_cold", "slow_compile.py", gzip=True, cache_group="slow_compile"),
    Scenario("slow_compile_warm", "slow_compile.py", gzip=True, cache_group="slow_compile"),
    # `compilescope diff` pairs: one program, one change per variant (programs/diff_pair.py).
    Scenario("diff_base", "diff_pair.py", gzip=True, env={"DIFF_VARIANT": "base"}),
    Scenario("diff_base_again", "diff_pair.py", gzip=True, env={"DIFF_VARIANT": "base"}),
    Scenario("diff_break", "diff_pair.py", gzip=True, env={"DIFF_VARIANT": "break"}),
    Scenario("diff_dynamic", "diff_pair.py", gzip=True, env={"DIFF_VARIANT": "dynamic"}),
    Scenario("diff_config", "diff_pair.py", gzip=True, env={"DIFF_VARIANT": "config"}),
    Scenario("diff_fail", "diff_pair.py", gzip=True, env={"DIFF_VARIANT": "fail"}),
    # An inference service whose requests vary (sizes, a Python bool, grad mode), recompiling late in the run up to
    # recompile_limit; _fixed: padded to a bucket, batch dim marked dynamic, one grad mode (for `compilescope diff`).
    Scenario("serve_varying", "serve_varying.py", gzip=True, env=RUN_ENV),
    Scenario("serve_varying_fixed", "serve_varying.py", gzip=True, env={**RUN_ENV, "SERVE_VARIANT": "fixed"}),
    # A Hugging Face transformers user compiles a tiny Llama and calls generate(), as `compilescope run` records it;
    # _fixed: dynamic=True, keyword calls, a static cache. transformers is installed apart (see the program): HF_SITE
    # names its site-packages.
    Scenario("hf_llama", "hf_llama.py", gzip=True, env=HF_ENV),
    Scenario("hf_llama_fixed", "hf_llama.py", gzip=True, env={**HF_ENV, "HF_VARIANT": "fixed"}),
    # Compiling per call: torch.compile in the loop, a new instance and a new lambda per call, a counter attribute
    # incremented in forward (the recompile limit), torch._dynamo.reset() in a loop; `_fixed` compiles once.
    Scenario("compile_per_call", "compile_per_call.py", gzip=True, env=RUN_ENV),
    Scenario("compile_per_call_fixed", "compile_per_call.py", gzip=True, env={**RUN_ENV, "CALL_VARIANT": "fixed"}),
    # A recompile after torch._dynamo.reset(): its reason's "0/0:" is torch's numbering, counted from 0 again.
    Scenario("reset_recompile", "reset_recompile.py", gzip=True),
    # A line captured in 12 graphs (a recompile per call, the limit raised to 16): more than a page's list names.
    Scenario("many_graphs", "many_graphs.py", gzip=True),
    # A model branching on tensor values (fresh-eyes review): its graph breaks, its torch.cond/torch._check rewrite, and
    # the errors met on the way (fullgraph=True, a guard on an unbacked value, torch.cond branches that disagree).
    Scenario("data_dependent", "data_dependent.py", gzip=True, env=RUN_ENV),
    Scenario("data_dependent_rewritten", "data_dependent.py", gzip=True, env={**RUN_ENV, "COND_VARIANT": "rewritten"}),
    Scenario("data_dependent_pitfalls", "data_dependent.py", gzip=True, env={**RUN_ENV, "COND_VARIANT": "pitfalls"}),
    # A training step with activation checkpointing (each block) and autocast; _reentrant passes use_reentrant=True.
    Scenario("checkpoint_autocast", "checkpoint_autocast.py", gzip=True, env=RUN_ENV),
    Scenario("checkpoint_autocast_reentrant", "checkpoint_autocast.py", gzip=True,
             env={**RUN_ENV, "CKPT_VARIANT": "reentrant"}),
    # A print inside the checkpointed blocks, called in a loop: Dynamo gives up the whole forward.
    Scenario("checkpoint_autocast_print", "checkpoint_autocast.py", gzip=True, env={**RUN_ENV, "CKPT_VARIANT": "print"}),
    # The same print, the blocks checkpointed without a loop: Dynamo breaks at each checkpoint call and runs it eagerly.
    Scenario("checkpoint_autocast_print_unrolled", "checkpoint_autocast.py", gzip=True,
             env={**RUN_ENV, "CKPT_VARIANT": "print_unrolled"}),
    # Deploying with set_stance, disabled helpers and a mega-cache warm start: the warm run loads the artifacts the
    # cold one saved (their cache group's directory), into an empty inductor cache of its own.
    Scenario("stance_deploy", "stance_deploy.py", gzip=True, env=RUN_ENV, cache_group="stance_deploy"),
    Scenario("stance_deploy_warm", "stance_deploy.py", gzip=True, env={**RUN_ENV, "STANCE_VARIANT": "warm"},
             cache_group="stance_deploy"),
    Scenario("stance_deploy_fixed", "stance_deploy.py", gzip=True, env={**RUN_ENV, "STANCE_VARIANT": "fixed"}),
    # A model of identical blocks compiled whole, then per block (regional compilation), cold then warm (one cache dir).
    Scenario("regional_whole", "regional_compile.py", gzip=True, env=RUN_ENV),
    Scenario("regional_blocks", "regional_compile.py", gzip=True, cache_group="regional",
             env={**RUN_ENV, "REGIONAL_VARIANT": "regional"}),
    Scenario("regional_blocks_warm", "regional_compile.py", gzip=True, cache_group="regional",
             env={**RUN_ENV, "REGIONAL_VARIANT": "regional"}),
    # The whole model with dynamic=True: Dynamo restarts the compile (floats it made symbols, then specialized).
    Scenario("regional_dynamic", "regional_compile.py", gzip=True, env={**RUN_ENV, "REGIONAL_VARIANT": "dynamic"}),
    # A scientific-computing user: torch.func transforms (one with a graph break inside) and NumPy code (np.random, NumPy
    # arrays as inputs in two dtypes), a loop over a Python list of floats; _fixed: each of those changed.
    Scenario("func_numpy", "func_numpy.py", gzip=True, env=RUN_ENV),
    Scenario("func_numpy_fixed", "func_numpy.py", gzip=True, env={**RUN_ENV, "FUNC_VARIANT": "fixed"}),
    # A fine-tuning loop that changes its compiled model between steps: a forward hook registered after the first call
    # (appending to a global list), eval()/train() for validation, a backbone unfrozen, a Python float attribute set per
    # step; _fixed: the hook registered before compiling, writing a key its dict already has, the float a buffer
    # (eval/train and the unfreeze kept).
    Scenario("module_state", "module_state.py", gzip=True, env=RUN_ENV),
    Scenario("module_state_fixed", "module_state.py", gzip=True, env={**RUN_ENV, "MODULE_VARIANT": "fixed"}),
    # The fix but for the dict, empty until the hook's first compiled call writes its key: one recompile for that key.
    Scenario("module_state_late_key", "module_state.py", gzip=True, env={**RUN_ENV, "MODULE_VARIANT": "late_key"}),
    # A model changed after its first compiled call, nothing else between: a forward hook registered on its own Block
    # class's submodule (_hook), the submodule replaced by a fresh Block (_swap); _fixed: the hook registered before
    # compiling, the new weights loaded in place. Each then validates once under eval() and no_grad().
    Scenario("module_swap_hook", "module_swap.py", gzip=True, env={**RUN_ENV, "MODSWAP_VARIANT": "hook"}),
    Scenario("module_swap", "module_swap.py", gzip=True, env={**RUN_ENV, "MODSWAP_VARIANT": "swap"}),
    Scenario("module_swap_fixed", "module_swap.py", gzip=True, env={**RUN_ENV, "MODSWAP_VARIANT": "fixed"}),
    # Modes and requires_grad set by assignment, switched from a trainer class (self.model.eval()): the lines marked.
    Scenario("module_mode_set", "module_mode_set.py", gzip=True, env=RUN_ENV),
    # Modes and requires_grad set through a loop's variable (over modules(), children(), a tuple of parameters), with
    # more modules switched in one step than state_lines looks at, and a second compiled function quoting this file.
    Scenario("module_mode_loops", "module_mode_loops.py", gzip=True, env=RUN_ENV),
    # A tensor and a KV cache behind dict keys with ", " in them (`L['d'][(1, 2)]`, `L['c']['a, b']`), each recompiling;
    # transformers' DynamicCache is a stand-in from programs/odd_sources_site.
    Scenario("odd_sources", "odd_sources.py", gzip=True, env={
        **RUN_ENV, "PYTHONPATH": os.pathsep.join([str(HERE / "programs" / "odd_sources_site"), RUN_ENV["PYTHONPATH"]])}),
    # Modes and requires_grad set through nested loops, the inner loop over the outer loop's variable
    # (`for m in model.head.modules(): for c in m.children(): c.eval()`), beside an assignment switching another module.
    Scenario("module_mode_nested", "module_mode_nested.py", gzip=True, env=RUN_ENV),
    # Modes and requires_grad set through loops over a list or tuple bound to a name once (`frozen = [model.backbone,
    # model.neck]`; `for m in frozen: for p in m.parameters(): p.requires_grad = False`; `for m in quiet: m.eval()`).
    Scenario("module_mode_named", "module_mode_named.py", gzip=True, env=RUN_ENV),
    # An exported model compiled with AOTInductor (aoti_compile_and_package), loaded and run at batches 4 and 8: with a
    # Dim for the batch, and (_static) without one, a package of batch 4 whose unchecked input of 8 returns 4 rows.
    Scenario("aoti_deploy", "aoti_deploy.py", gzip=True, env=RUN_ENV),
    Scenario("aoti_deploy_static", "aoti_deploy.py", gzip=True, env={**RUN_ENV, "AOTI_VARIANT": "static"}),
    # A user's NumPy kernels as torch.library custom ops: one with no fake kernel, one with no autograd formula, and a
    # plain NumPy function Dynamo cannot trace; _fixed: register_fake, register_autograd, the function wrapped as an op.
    Scenario("custom_ops", "custom_ops.py", gzip=True, env=RUN_ENV),
    Scenario("custom_ops_fixed", "custom_ops.py", gzip=True, env={**RUN_ENV, "CUSTOM_OP_VARIANT": "fixed"}),
    # Compiled results that differ from eager's: dropout drawn by Inductor's generator, bf16 fused in float32;
    # _fixed: fallback_random = True and float32.
    Scenario("wrong_results", "wrong_results.py", gzip=True, env=RUN_ENV),
    Scenario("wrong_results_fixed", "wrong_results.py", gzip=True, env={**RUN_ENV, "WRONG_VARIANT": "fixed"}),
    # CPU inference with freezing: mode="max-autotune" benchmarks C++ GEMM templates against ATen's kernel for each
    # linear (each candidate compiled by g++ inside its search); _default: the same model in the default mode.
    Scenario("cpu_autotune", "cpu_autotune.py", gzip=True, env=RUN_ENV),
    Scenario("cpu_autotune_default", "cpu_autotune.py", gzip=True, env={**RUN_ENV, "AUTOTUNE_VARIANT": "default"}),
    # Everyday Python in a compiled function (logging, warnings, random, time, a contextmanager timer, a closure's
    # list): graph breaks, a frame Dynamo skipped for a break inside a `with`, guards; `_fixed` moves them out.
    Scenario("python_features", "python_features.py", gzip=True, env=RUN_ENV),
    Scenario("python_features_fixed", "python_features.py", gzip=True, env={**RUN_ENV, "PYFEAT_VARIANT": "fixed"}),
    # A user's tensor subclasses: a __torch_function__ subclass whose str attribute is guarded (a recompile per unit),
    # a wrapper subclass parameter with no __tensor_flatten__ (forward skipped); _meta: flattened with its scale as
    # metadata (a recompile when it changes); _fixed: one unit, the scale an inner tensor.
    Scenario("tensor_subclasses", "tensor_subclasses.py", gzip=True, env=RUN_ENV),
    Scenario("tensor_subclasses_meta", "tensor_subclasses.py", gzip=True, env={**RUN_ENV, "SUBCLASS_VARIANT": "meta"}),
    Scenario("tensor_subclasses_fixed", "tensor_subclasses.py", gzip=True,
             env={**RUN_ENV, "SUBCLASS_VARIANT": "fixed"}),
    # A mixed-precision training step compiled whole (autocast float16, GradScaler("cpu"), backward, SGD step,
    # zero_grad); _clip adds unscale_, clip_grad_norm_ and a print of loss.item() (without compilescope's hooks, to
    # keep the log small); _fixed compiles only the model, as the docs suggest.
    Scenario("amp_train_step", "amp_train_step.py", gzip=True, env=RUN_ENV),
    Scenario("amp_train_step_clip", "amp_train_step.py", gzip=True, env={"AMP_VARIANT": "clip"}),
    Scenario("amp_train_step_fixed", "amp_train_step.py", gzip=True, env={**RUN_ENV, "AMP_VARIANT": "fixed"}),
    # torch.compile of an nn.Linear subclass keeping nn.Linear's forward: torch's wrap_inline `inner` is the frame,
    # recompiled for a new batch size; _fixed marks the batch dynamic before the first call.
    Scenario("compiled_linear", "compiled_linear.py", gzip=True),
    Scenario("compiled_linear_fixed", "compiled_linear.py", gzip=True, env={"LINEAR_VARIANT": "fixed"}),
    # Custom ops that write into their argument but declare mutates_args=(): compiled results differ from eager's (a
    # read of the input moved after the call, a call whose result is unused dropped); _fixed declares or avoids it.
    Scenario("custom_op_mutation", "custom_op_mutation.py", gzip=True, env=RUN_ENV, cache_group="custom_op_mutation"),
    Scenario("custom_op_mutation_fixed", "custom_op_mutation.py", gzip=True, env={**RUN_ENV, "MUTOP_VARIANT": "fixed"}),
    # The fix run with the cache the run before it filled: torch serves the graphs compiled before the fix.
    # The stage `compilescope diagnose` runs with backend="aot_eager" (torch.compile reads TORCH_BISECT_BACKEND)
    Scenario("custom_op_mutation_aot_eager", "custom_op_mutation.py", gzip=True,
             env={**RUN_ENV, "TORCH_BISECT_BACKEND": "aot_eager"}),
    Scenario("custom_op_mutation_stale", "custom_op_mutation.py", gzip=True, env={**RUN_ENV, "MUTOP_VARIANT": "fixed"},
             cache_group="custom_op_mutation"),
    # The same mistake with ops defined by a schema string (Library("mylib", "DEF").define): no `(a!)` on the argument
    # the implementation writes into; _fixed marks it `Tensor(a!) buf`.
    Scenario("custom_op_define_mutation", "custom_op_define_mutation.py", gzip=True, env=RUN_ENV, keep_output=True),
    Scenario("custom_op_define_mutation_fixed", "custom_op_define_mutation.py", gzip=True,
             env={**RUN_ENV, "LIBOP_VARIANT": "fixed"}, keep_output=True),
    # The mistake with ops called as an overload (torch.ops.mylib.shift.into), beside an overload that declares its write
    Scenario("custom_op_overload_mutation", "custom_op_overload_mutation.py", gzip=True, env=RUN_ENV, keep_output=True),
    # The mistake in an overload the program calls through the packet (torch.ops.mylib.scale(x, 2.0, out=buf)), which
    # torch resolves to scale.out by its arguments: Dynamo's graph names the packet, AOTAutograd's the overload
    Scenario("custom_op_packet_overload", "custom_op_packet_overload.py", gzip=True, env=RUN_ENV, keep_output=True),
    # An overload called by name, then through its packet (scale.out both): which of the output code's two scale.out
    # calls is the packet's is their order within the overload, not their order among all of the op's calls
    Scenario("custom_op_overload_then_packet", "custom_op_overload_then_packet.py", gzip=True, env=RUN_ENV,
             keep_output=True),
    # The mistake in a training compile: the forward's output code (logged before the backward's) calls the op
    Scenario("custom_op_train_mutation", "custom_op_train_mutation.py", gzip=True, env=RUN_ENV, keep_output=True),
    # The mistake of custom_op_mutation in a program laid out as a package: the compiled function in pkg/model.py
    # imports its op from pkg/ops.py absolutely (`from pkg.ops import scale`), found from the script's folder.
    Scenario("op_in_package", "op_in_package/main.py", gzip=True, keep_output=True),
    # A library's model (mylib, in programs/library_args_site/lib/python3.11/site-packages: a path of installed code)
    # called with the user's tensors positionally (_positional), to a forward that passes one on to a loss breaking
    # the graph (_target), and over two lines (_multiline): where each tensor whose size recompiles comes from.
    *[Scenario(f"library_args_{v}", "library_args.py", gzip=True, env={
        "PYTHONPATH": str(HERE / "programs" / "library_args_site" / "lib" / "python3.11" / "site-packages"),
        "ARGS_VARIANT": v})
      for v in ("positional", "target", "multiline")],
    # Calls of mylib's models whose line does not settle which argument is which: inside another call (_wrapped), an
    # unbound forward passed self by hand (_unbound), two library callers of loss3 (_twocallers), a line nested past
    # Python's recursion limit (_deep).
    *[Scenario(f"library_calls_{v}", "library_calls.py", gzip=True, env={
        "PYTHONPATH": str(HERE / "programs" / "library_args_site" / "lib" / "python3.11" / "site-packages"),
        "CALLS_VARIANT": v})
      for v in ("wrapped", "unbound", "twocallers", "deep")],
    # Tensors mylib's models pass on to a function compiled apart: by keyword, as an item of forward's **kwargs
    # (_kwargs), and one the user's call passes twice, `cm(t, t)` (_same).
    *[Scenario(f"library_passed_{v}", "library_passed.py", gzip=True, env={
        "PYTHONPATH": str(HERE / "programs" / "library_args_site" / "lib" / "python3.11" / "site-packages"),
        "PASSED_VARIANT": v})
      for v in ("kwargs", "same")],
    # mylib's NetSwap, whose forward swaps its arguments before passing them on, called `cm(t, x)` with the user's
    # own x as its target (_swap), twice on one line (_twice), and through functools.partial(cm, t) (_partial): whose
    # tensor forward's x is.
    *[Scenario(f"library_passed_{v}", "library_swap.py", gzip=True, env={
        "PYTHONPATH": str(HERE / "programs" / "library_args_site" / "lib" / "python3.11" / "site-packages"),
        "SWAP_VARIANT": v})
      for v in ("swap", "twice", "partial")],
    # mylib's Net3 called with a dict spread as keywords, `cm(**batch)`: forward's x is batch["x"], not the user's x.
    Scenario("library_passed_splat", "library_splat.py", gzip=True, env={
        "PYTHONPATH": str(HERE / "programs" / "library_args_site" / "lib" / "python3.11" / "site-packages")}),
    # The user's module compiled around Net3, calling self.model(target, a): Net3's target is the user's a.
    Scenario("library_passed_outer", "library_outer.py", gzip=True, env={
        "PYTHONPATH": str(HERE / "programs" / "library_args_site" / "lib" / "python3.11" / "site-packages")}),
    # two_wrapped's functions where a tensor's first use reads it by another name: a parameter reassigned (_shadow,
    # _shadow_size), an item of *ys (_star).
    *[Scenario(f"wrapped_reassigned_{v}", "wrapped_reassigned.py", gzip=True, env={"WRAPPED_VARIANT": v})
      for v in ("shadow", "shadow_size", "star")],
    # mylib's models where the log alone could name the wrong tensor of the user's: a staticmethod forward whose first
    # parameter is unused (_static, with loss_star's *args), a call passing a tuple spread whose line names no x though
    # the user's x is another tensor (_rebound), two sizes that change (_several), and a *args tuple a library's forward
    # passes its target into (_star).
    *[Scenario(f"library_names_{v}", "library_names.py", gzip=True, env={
        "PYTHONPATH": str(HERE / "programs" / "library_args_site" / "lib" / "python3.11" / "site-packages"),
        "NAMES_VARIANT": v})
      for v in ("static", "rebound", "several", "star")],
    # mylib's NetWrapped, a forward decorated by a wrapper that passes the call's **kwargs to another module's forward
    # (self.inner.forward), not to the function it decorates: Inner's input_ids is the user's ids, its frame not
    # NetWrapped's forward.
    Scenario("library_names_wrapped", "library_wrapped.py", gzip=True, env={
        "PYTHONPATH": str(HERE / "programs" / "library_args_site" / "lib" / "python3.11" / "site-packages")}),
    # mylib's Net3 called with a 67-character name (_ident) and with an expression and a name whose sizes both change
    # (_mixed): a name said whole, an expression's size and advice readable.
    *[Scenario(f"library_long_{v}", "library_long.py", gzip=True, env={
        "PYTHONPATH": str(HERE / "programs" / "library_args_site" / "lib" / "python3.11" / "site-packages"),
        "LONG_VARIANT": v})
      for v in ("ident", "mixed")],
    # One model cast with m.double() between two calls: a dtype recompile of self's parameters.
    Scenario("one_model_cast", "one_model_cast.py", gzip=True),
    # A parameter of f used after f's graph break: the resume function is passed f's own tensor, which
    # mark_dynamic reaches (_marked: marked before each call, each frame compiles once).
    Scenario("resume_param", "resume_param.py", gzip=True),
    Scenario("resume_param_marked", "resume_param.py", gzip=True, env={"RESUME_VARIANT": "marked"}),
    # A parameter used after a graph break whose two dimensions both change: one tensor, named once.
    Scenario("resume_two_dims", "resume_two_dims.py", gzip=True),
]

SCRUB_ENV = [
    "TORCH_LOGS",
    "TORCH_LOGS_OUT",
    "TORCH_TRACE",
    "TORCH_DTRACE",
    "TORCH_COMPILE_DEBUG",
    "INDUCTOR_PROVENANCE",
    "TORCHINDUCTOR_CACHE_DIR",
    "TORCHINDUCTOR_FORCE_DISABLE_CACHES",
    "TORCHDYNAMO_VERBOSE",
    "TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS",
    "DIFF_VARIANT",
    "WARNINGS_VARIANT",
    "PITFALLS_VARIANT",
    "EXPORT_VARIANT",
    "PROFILE_DIR",
    "PROFILE_VARIANT",
    "SERVE_VARIANT",
    "HF_VARIANT",
    "COND_VARIANT",
    "WRONG_VARIANT",
    "CKPT_VARIANT",
    "STANCE_VARIANT",
    "STANCE_ARTIFACTS",
    "REGIONAL_VARIANT",
    "FUNC_VARIANT",
    "CUSTOM_OP_VARIANT",
    "MODULE_VARIANT",
    "SUBCLASS_VARIANT",
    "AMP_VARIANT",
    "LINEAR_VARIANT",
    "MUTOP_VARIANT",
    "LIBOP_VARIANT",
    "RESUME_VARIANT",
]


def run(sc: Scenario, cache_dirs: dict, tmp_root: Path, out_dir: Path = LOGS) -> Path:
    trace_dir = Path(tempfile.mkdtemp(prefix=f"trace_{sc.name}_", dir=tmp_root))
    if sc.cache_group is None:
        cache_dir = tempfile.mkdtemp(prefix=f"cache_{sc.name}_", dir=tmp_root)
    else:
        if sc.cache_group not in cache_dirs:
            cache_dirs[sc.cache_group] = tempfile.mkdtemp(
                prefix=f"cache_{sc.cache_group}_", dir=tmp_root
            )
        cache_dir = cache_dirs[sc.cache_group]

    env = {k: v for k, v in os.environ.items() if k not in SCRUB_ENV}
    env[sc.trace_var] = str(trace_dir)
    profile_dir = Path(tempfile.mkdtemp(prefix=f"profiles_{sc.name}_", dir=tmp_root))
    env["PROFILE_DIR"] = str(profile_dir)
    env["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
    env.update(sc.env)

    prog = PROGRAMS / sc.program
    print(f"[{sc.name}] {sc.trace_var}=... python {prog.relative_to(HERE)}", flush=True)
    proc = subprocess.run(
        [sys.executable, str(prog)],
        cwd=HERE,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    ok = proc.returncode != 0 if sc.expect_rc is None else proc.returncode == sc.expect_rc
    if not ok:
        sys.stdout.write(proc.stdout[-5000:])
        raise SystemExit(
            f"[{sc.name}] unexpected exit status {proc.returncode} "
            f"(expected {'non-zero' if sc.expect_rc is None else sc.expect_rc})"
        )

    logs = sorted(trace_dir.glob("*.log"))
    if not logs:
        raise SystemExit(f"[{sc.name}] no log written in {trace_dir}")
    if sc.env is RUN_ENV or sc.env.get("COMPILESCOPE_BYTECODE_HOOK"):
        # What `compilescope run` does once the program ended: a crash faulthandler wrote goes into its process's log.
        sys.path.insert(0, str(HERE.parents[2] / "src"))
        from compilescope.runner import attach_crash_reports

        attach_crash_reports(str(trace_dir), [str(p) for p in logs])
    if sc.parts:
        out = HERE / sc.name
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        for log in logs:
            with open(log, "rb") as src, gzip.GzipFile(out / f"{log.name}.gz", "wb", compresslevel=9, mtime=0) as dst:
                shutil.copyfileobj(src, dst)
        print(f"[{sc.name}] rc={proc.returncode} -> {out}: {', '.join(p.name for p in sorted(out.iterdir()))}", flush=True)
        return out
    if len(logs) > 1:
        # Not expected (one process, no compile-worker logs seen in 2.13);
        # keep the biggest and say so.
        logs.sort(key=lambda p: p.stat().st_size, reverse=True)
        print(f"[{sc.name}] WARNING: {len(logs)} logs, keeping {logs[0].name}")
    out = out_dir / f"{sc.name}.log{'.gz' if sc.gzip else ''}"
    if sc.gzip:
        with open(logs[0], "rb") as src, gzip.GzipFile(out, "wb", compresslevel=9, mtime=0) as dst:
            shutil.copyfileobj(src, dst)
    else:
        shutil.copyfile(logs[0], out)
    print(f"[{sc.name}] rc={proc.returncode} -> {out} "
          f"({out.stat().st_size} bytes)", flush=True)
    if sc.keep_output:
        (out_dir / f"{sc.name}.output.txt").write_text(proc.stdout)
    for name in sc.profiles:
        kept = out_dir / f"{sc.name}.{name}.profile.json.gz"
        with open(profile_dir / f"{name}.profile.json", "rb") as src, \
                gzip.GzipFile(kept, "wb", compresslevel=9, mtime=0) as dst:
            shutil.copyfileobj(src, dst)
        print(f"[{sc.name}] profile -> {kept} ({kept.stat().st_size} bytes)", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("scenarios", nargs="*", help="scenario names (default: all)")
    ap.add_argument("--list", action="store_true", help="list scenarios and exit")
    ap.add_argument("--keep-tmp", action="store_true",
                    help="keep the temp trace/cache dirs (printed at the end)")
    ap.add_argument("--out", type=Path, default=LOGS,
                    help="directory of the logs (default: logs/ here; the torch 2.14 fixtures use ../torch214/logs)")
    ap.add_argument("--gzip", action="store_true", help="write every log as .log.gz")
    args = ap.parse_args()

    if args.list:
        for sc in SCENARIOS:
            print(f"{sc.name:24s} programs/{sc.program}")
        return

    names = {sc.name for sc in SCENARIOS}
    unknown = set(args.scenarios) - names
    if unknown:
        raise SystemExit(f"unknown scenario(s): {sorted(unknown)}; see --list")
    wanted = [sc for sc in SCENARIOS if not args.scenarios or sc.name in args.scenarios]
    # cache_warm needs the cache that cache_cold fills: always run them together.
    if any(sc.cache_group for sc in wanted):
        groups = {sc.cache_group for sc in wanted if sc.cache_group}
        wanted = [sc for sc in SCENARIOS if sc in wanted or sc.cache_group in groups]

    if args.gzip:
        wanted = [dataclasses.replace(sc, gzip=True) for sc in wanted]
    args.out.mkdir(parents=True, exist_ok=True)
    tmp_root = Path(tempfile.mkdtemp(prefix="compilescope_traces_"))
    cache_dirs: dict = {}
    try:
        for sc in wanted:
            run(sc, cache_dirs, tmp_root, args.out)
    finally:
        if args.keep_tmp:
            print(f"temp dirs kept in {tmp_root}")
        else:
            shutil.rmtree(tmp_root, ignore_errors=True)
    total = sum(p.stat().st_size for p in args.out.glob("*.log*"))
    print(f"{args.out}: {total} bytes in all")


if __name__ == "__main__":
    main()
