#!/usr/bin/env bash
# Records the CUDA fixtures in logs/ on a machine with a GPU, torch (2.11 here) and compilescope importable:
#     bash tests/data/cuda_torch211/record.sh WORK_DIR [SCENARIO ...]   (default: every scenario)
# Each scenario runs in a fresh process with a fresh Inductor cache; WORK_DIR/<scenario>/ gets its trace
# directory, its report and what compilescope printed (run.txt). A scenario that fails does not stop the others.
set -u
here=$(cd "$(dirname "$0")" && pwd)
work=${1:?usage: record.sh WORK_DIR [SCENARIO ...]}
shift
wanted=" $* "
mkdir -p "$work"
python3 -c 'import sys, torch; print(sys.version.split()[0], torch.__version__, torch.version.git_version, torch.cuda.get_device_name())' \
    > "$work/versions.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$work/versions.txt" 2>&1

scenario() {  # name, seconds allowed, then the command
    local name=$1 limit=$2; shift 2
    [ "$wanted" = "  " ] || [[ "$wanted" == *" $name "* ]] || return 0
    mkdir -p "$work/$name"
    local t0=$SECONDS
    ( cd "$here/programs" && timeout "$limit" "$@" ) > "$work/$name/run.txt" 2>&1
    echo "$name: exit $? in $((SECONDS - t0)) s" | tee -a "$work/status.txt"
}

# `compilescope run`: TORCH_TRACE, provenance, the bytecode hook, a fresh cache, then the report.
for prog in train_break_recompile cudagraph_skips; do
    scenario "$prog" 150 python3 -m compilescope run --no-browser --fresh-cache --trace-dir "$work/$prog/trace" \
        -o "$work/$prog/report" "$prog.py"
done
# PyTorch's compiled-optimizer recipe with an LR scheduler: a float lr recompiles Adam.step, a tensor lr does not.
scenario compiled_optimizer 180 python3 -m compilescope run --no-browser --fresh-cache \
    --trace-dir "$work/compiled_optimizer/trace" -o "$work/compiled_optimizer/report" compiled_optimizer.py
scenario compiled_optimizer_tensor_lr 180 env OPT_LR=tensor python3 -m compilescope run --no-browser --fresh-cache \
    --trace-dir "$work/compiled_optimizer_tensor_lr/trace" -o "$work/compiled_optimizer_tensor_lr/report" \
    compiled_optimizer.py
# Two DDP ranks on the one GPU under torchrun, started by `compilescope run`: a rank log each, and rank 1 recompiles.
scenario ddp_uneven_batch 240 python3 -m compilescope run --no-browser --fresh-cache \
    --trace-dir "$work/ddp_uneven_batch/trace" -o "$work/ddp_uneven_batch/report" \
    -- torchrun --nproc-per-node 2 --master-addr 127.0.0.1 --master-port 29517 ddp_uneven_batch.py
# Hugging Face transformers' GPT-2 (site-packages code), forward compiled, three prompt lengths, then generate().
scenario hf_gpt2_generate 240 python3 -m compilescope run --no-browser --fresh-cache \
    --trace-dir "$work/hf_gpt2_generate/trace" -o "$work/hf_gpt2_generate/report" hf_gpt2_generate.py
# transformers' docs recipe for fast generation: a static KV cache, the forward compiled in reduce-overhead mode.
scenario hf_gpt2_static_cache 240 python3 -m compilescope run --no-browser --fresh-cache \
    --trace-dir "$work/hf_gpt2_static_cache/trace" -o "$work/hf_gpt2_static_cache/report" hf_gpt2_static_cache.py
# transformers' GPT-2 eager and compiled, a steady-state profile recorded by the program itself.
scenario hf_gpt2_profile 240 python3 -m compilescope run --no-browser --fresh-cache \
    --trace-dir "$work/hf_gpt2_profile/trace" -o "$work/hf_gpt2_profile/report" \
    hf_gpt2_profile.py "$work/hf_gpt2_profile/trace/profile.json"
# A steady-state profile of reduce-overhead (CUDA graph replays) and eager, recorded by the program itself.
scenario profile_cudagraphs 150 python3 -m compilescope run --no-browser --fresh-cache \
    --trace-dir "$work/profile_cudagraphs/trace" -o "$work/profile_cudagraphs/report" \
    profile_cudagraphs.py "$work/profile_cudagraphs/trace/profile.json"
# A steady-state profile of the default mode on a small model: launch-bound.
scenario profile_launch_bound 150 python3 -m compilescope run --no-browser --fresh-cache \
    --trace-dir "$work/profile_launch_bound/trace" -o "$work/profile_launch_bound/report" \
    profile_launch_bound.py "$work/profile_launch_bound/trace/profile.json"
# compilescope.capture(profile=True) inside the program.
scenario capture_profile 150 python3 capture_profile.py "$work/capture_profile"
# A batch size and an int that change: each recompiles once, then runs dynamic (automatic dynamic).
scenario dynamic_batch 150 python3 -m compilescope run --no-browser --fresh-cache \
    --trace-dir "$work/dynamic_batch/trace" -o "$work/dynamic_batch/report" dynamic_batch.py
# The static-cache generation that dies of SIGSEGV, inside compilescope.capture(): the crash file beside the log.
scenario capture_crash 240 python3 capture_crash.py "$work/capture_crash/trace"
scenario capture_crash_report 60 python3 -m compilescope --no-browser -o "$work/capture_crash/report" \
    "$work/capture_crash/trace"
# The same under `python -X faulthandler`, already on when capture() starts: the crash file and stderr both get the stack.
scenario capture_crash_faulthandler_on 240 python3 -X faulthandler capture_crash.py "$work/capture_crash_faulthandler_on/trace"
# compilescope diagnose on Triton code broken on purpose: the backend stage fails, then a wrong result.
scenario diagnose_compile_error 240 env TRITON_BUG=compile_error python3 -m compilescope diagnose --minify --no-browser \
    --timeout 120 -o "$work/diagnose_compile_error/report" triton_bug.py
scenario diagnose_accuracy 150 env TRITON_BUG=accuracy python3 -m compilescope diagnose --accuracy --no-browser \
    --timeout 120 -o "$work/diagnose_accuracy/report" triton_bug.py
# The session-25 CPU journeys on the GPU (recorded 2026-11-27): AMP with GradScaler("cuda") compiled whole, with a
# clip and print, and as the recipe has it; bf16 and dropout that differ from eager; an AOTInductor package with a
# dynamic and a static batch; a user's own Triton kernel in compiled code, launched raw and as a triton_op.
for v in whole clip fixed; do
    scenario "amp_train_step_cuda_$v" 240 env AMP_VARIANT=$v python3 -m compilescope run --no-browser --fresh-cache \
        --trace-dir "$work/amp_train_step_cuda_$v/trace" -o "$work/amp_train_step_cuda_$v/report" amp_train_step_cuda.py
done
for v in as_written fixed; do
    scenario "wrong_results_cuda_$v" 180 env WRONG_VARIANT=$v python3 -m compilescope run --no-browser --fresh-cache \
        --trace-dir "$work/wrong_results_cuda_$v/trace" -o "$work/wrong_results_cuda_$v/report" wrong_results_cuda.py
done
for v in dynamic static; do
    scenario "aoti_deploy_cuda_$v" 300 env AOTI_VARIANT=$v python3 -m compilescope run --no-browser --fresh-cache \
        --trace-dir "$work/aoti_deploy_cuda_$v/trace" -o "$work/aoti_deploy_cuda_$v/report" aoti_deploy_cuda.py
done
for v in raw triton_op; do
    scenario "user_triton_kernel_$v" 180 env TRITON_VARIANT=$v python3 -m compilescope run --no-browser --fresh-cache \
        --trace-dir "$work/user_triton_kernel_$v/trace" -o "$work/user_triton_kernel_$v/report" user_triton_kernel.py
done
# compilescope diagnose on the wrong-results program (2026-11-27): as written, and fixed with --accuracy; the stages'
# outputs (outputs/<stage>.txt) are committed under logs/wrong_results_cuda_diagnose/{as_written,fixed}/.
scenario diagnose_wrong_results_cuda 240 python3 -m compilescope diagnose --no-browser --timeout 100 \
    -o "$work/diagnose_wrong_results_cuda/report" wrong_results_cuda.py
scenario diagnose_wrong_results_cuda_fixed 240 env WRONG_VARIANT=fixed python3 -m compilescope diagnose --accuracy \
    --no-browser --timeout 100 -o "$work/diagnose_wrong_results_cuda_fixed/report" wrong_results_cuda.py
# Custom ops that write into their argument but declare mutates_args=() (recorded 2026-11-27, the CUDA twin of
# torch213's custom_op_mutation): as written, and fixed (mutates_args={"x"}).
for v in as_written fixed; do
    scenario "custom_op_mutation_cuda_$v" 180 env MUTOP_VARIANT=$v python3 -m compilescope run --no-browser --fresh-cache \
        --trace-dir "$work/custom_op_mutation_cuda_$v/trace" -o "$work/custom_op_mutation_cuda_$v/report" \
        custom_op_mutation_cuda.py
done
# A triton_op whose Triton kernel stores into its input under mutates_args=(), and its fixed twin (mutates_args={"x"}):
# written 2026-11-27 without a GPU, not yet recorded.
for prog in triton_op_mutation triton_op_mutation_fixed; do
    scenario "$prog" 180 python3 -m compilescope run --no-browser --fresh-cache \
        --trace-dir "$work/$prog/trace" -o "$work/$prog/report" "$prog.py"
done
