"""`compilescope check LOG [rules] [--baseline LOG] [--junit FILE]`: a compile-health gate for CI.

Exit status: 0 every rule holds; 1 some rule is violated (one line each on stdout);
2 bad input. A run that crashed fails no-crash whatever was asked; one that crashed in torch's loader of the
AOTInductor package it had built fails no-aoti-load-crash instead, which --allow-aoti-load-crash lets pass (a CI job
gating the build: the package was built whole, and the build's rules answer on it). Without any rule, --no-failures is checked (a failed compile is never healthy), and --no-export-issues
where the log holds a torch.export (an export that could not soundly produce a graph is a failed one).
"""

from __future__ import annotations

import argparse
import sys

import orjson

from ..analyses.check import SCHEMA_VERSION as CHECK_SCHEMA_VERSION, Rules, evaluate, no_run_time
from ..analyses.divergence import analyze_ranks
from ..analyses.rank_summary import RankSummary
from ..errors import CompilescopeError
from ..location import absolute
from .diff import add_threshold_arguments, read_side, time_threshold
from .usage import require_at_least, require_with


class CheckCommand:
    """Check a run against compile-health rules (and against a baseline run); exit 1 with one line per violated rule."""

    name = "check"

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.epilog = ("Recompiles count every graph compiled again, compiled autograd's backward graphs included. "
                         "Graph breaks, recompiles and failures in Python's own library (which torch may call from "
                         "compiled code) are not counted: nothing in your code changes them, and the results say how "
                         "many there were. A log that could not be read in full fails (rule whole-log), and so does a run "
                         "that crashed, where `compilescope run` recorded the crash (rule no-crash), whatever rules "
                         "were asked for; a crash in torch's loader (aoti_load_package) after the run built its "
                         "AOTInductor package fails rule no-aoti-load-crash instead, unless --allow-aoti-load-crash. "
                         "Without any rule, --no-failures is checked, and --no-export-issues where the log holds a "
                         "torch.export.")
        parser.add_argument("log", help="the run to check: a log, a directory, or a directory of rank logs")
        parser.add_argument("--max-graph-breaks", type=int, metavar="N", help="fail with more than N distinct graph breaks (calls of a "
                            "torch.compiler.disable'd function run eagerly on purpose, and torch's own breaks, such as "
                            "the torch._dynamo.graph_break() in an optimizer's step, are there on purpose: neither is "
                            "counted, and the result says how many)")
        parser.add_argument("--max-recompiles", type=int, metavar="N", help="fail with more than N recompiles")
        parser.add_argument("--max-avoidable-recompiles", type=int, metavar="N",
                            help="fail with more than N recompiles that the report calls avoidable: not counted are "
                                 "those to a module mode (.eval()/.train()), a parameter's requires_grad (a layer "
                                 "frozen or unfrozen) or the requires_grad of a tensor one line passes (x = block(x): "
                                 "the first call's input needs no grad, the next ones' do) that no compiled version "
                                 "had, which compile once per setting, nor those the log cannot tell (a compile "
                                 "with no guard tree to compare settings with); "
                                 "counted is every other (a Python number or a hook that changed, a list that grew, "
                                 "a return to a setting already compiled that failed on something else)")
        parser.add_argument("--no-late-hooks", action="store_true",
                            help="fail if a hook (forward, pre-forward, backward) was registered on a module after its "
                                 "function was compiled: torch does not recompile for it, so the calls the earlier "
                                 "compile served ran without the hook (wrong results, no error). Not a recompile "
                                 "rule: the recompile that shows it may be expected (an eval()). The log shows such "
                                 "a hook only where a later recompile's guards count it: one registered with no "
                                 "recompile after it leaves nothing in the log")
        parser.add_argument("--no-failures", action="store_true", help="fail if any compile failed")
        parser.add_argument("--no-export-issues", action="store_true",
                            help="fail if draft export found an issue: it could not soundly produce a graph, and its "
                                 "program holds only under what export assumed (the export page lists each)")
        parser.add_argument("--no-static-aoti-packages", action="store_true",
                            help="fail if an AOTInductor package (aoti_compile_and_package) accepts inputs of one "
                                 "shape only: exported with no Dim (torch.export's dynamic_shapes), every size is its "
                                 "example's, and a batch of another size runs unchecked unless "
                                 "AOTI_RUNTIME_CHECK_INPUTS=1 is set where it runs (wrong results, no error)")
        parser.add_argument("--allow-aoti-load-crash", action="store_true",
                            help="pass rule no-aoti-load-crash (and say so) where the run built its AOTInductor package "
                                 "and then crashed inside torch's loader (aoti_load_package), so that the build's "
                                 "rules decide, such as --no-static-aoti-packages or --max-compile-seconds: a CI job "
                                 "that gates the build, not the load. A crash while compiling, or anywhere else, "
                                 "still fails no-crash")
        parser.add_argument("--max-compile-seconds", type=float, metavar="S", help="fail if compiling took more than S seconds")
        parser.add_argument("--max-autotune-seconds", type=float, metavar="S",
                            help="fail if autotuning took more than S seconds: benchmarking to choose code "
                                 "(mode=\"max-autotune\"'s searches, with the candidates they compiled; kernels' launch "
                                 "configs), part of the compile time; the message names the slowest search")
        parser.add_argument("--no-cudagraph-skips", action="store_true",
                            help="fail if any compile ran without CUDA graphs (mode=\"reduce-overhead\"): skipped by Inductor, "
                                 "or set up and never recorded")
        parser.add_argument("--no-inductor-random", action="store_true",
                            help="fail if compiled code draws random numbers with Inductor's generator "
                                 "(torch._inductor.config.fallback_random off: dropout, torch.rand): its results cannot "
                                 "match eager's under the same seed")
        parser.add_argument("--no-custom-op-mutations", action="store_true",
                            help="fail if compiled code calls a custom op whose body (the program's source) writes into "
                                 "an argument its mutates_args (or its schema's Tensor(a!)) does not name: torch takes it "
                                 "for functional, so compiled results can differ from eager's. A triton_op whose write "
                                 "the log shows AOTAutograd found itself (its kernel's pointer in tensors_to_clone) "
                                 "computed eager's results, and is not counted")
        parser.add_argument("--user-kernel", action="append", default=[], metavar="NAME",
                            help="fail unless the compiled code holds your own Triton kernel NAME (its @triton.jit "
                                 "function's name; repeat for several): Dynamo traced its launch into a graph, so "
                                 "Inductor compiled it with the ops around it. A graph break at the launch runs it "
                                 "eagerly instead. A pass names the compiles holding it and whether its sizes were symbolic")
        parser.add_argument("--no-warnings", action="store_true",
                            help="fail if torch printed any warning (recorded by `compilescope run` or capture(), or read "
                                 "from the run's stderr saved as output.txt beside its log), or raised an error the "
                                 "program caught that they recorded (a recompile set_stance(\"fail_on_recompile\") "
                                 "refused)")
        parser.add_argument("--no-rank-divergence", action="store_true",
                            help="with a directory of rank logs: fail if the ranks compiled differently (a compile id "
                                 "only some ranks have, a compile that failed or broke on some ranks only, other "
                                 "collectives or tensor shapes): a rank that runs what others never reach waits for "
                                 "them, the classic distributed hang. Cache hits and warnings that differ do not count")
        parser.add_argument("--no-new-warnings", action="store_true",
                            help="with --baseline: fail if torch printed a warning that the baseline's run did not")
        parser.add_argument("--baseline", metavar="LOG", help="fail on regressions against this run: a new graph break, "
                            "more recompiles, a new failure, a new draft export issue (where a side holds a torch.export), a "
                            "compile CUDA graphs now skip, a hook registered after compiling (where a side has one: calls of the "
                            "earlier compile ran without it), more compile time where "
                            "`compilescope diff` calls it a change (--time-threshold, --time-ratio: the same options and "
                            "defaults as diff's)")
        # The threshold `diff` has (given without --baseline, they are refused), and the older spellings of it, which
        # stay for the scripts that use them: each is refused together with its newer spelling.
        seconds, ratio = add_threshold_arguments(parser, "with --baseline: ")
        seconds.add_argument("--time-min-seconds", type=float, metavar="S", help="older spelling of --time-threshold S (not with it)")
        ratio.add_argument("--time-margin", type=float, metavar="F",
                           help="older spelling of --time-ratio 1+F: compile time may grow by this fraction (not with "
                                "--time-ratio)")
        parser.add_argument("--max-run-time-ratio", type=float, metavar="R",
                            help="with --baseline: fail when a compiled graph's GPU time per call is more than R times "
                                 "the baseline's, read from each run's torch.profiler trace (per compile id its kernels' "
                                 "time per call; where each profile ran one graph, the GPU time per call of it, idle "
                                 "included). The profiles are the ones beside the logs (<name>.profile.json[.gz], "
                                 "capture()'s profile.json.gz) or --profile and --baseline-profile; a side without one "
                                 "is refused")
        parser.add_argument("--profile", metavar="PROFILE.json",
                            help="with --max-run-time-ratio: the run's profile (default: the one beside its log)")
        parser.add_argument("--baseline-profile", metavar="PROFILE.json",
                            help="with --max-run-time-ratio: the baseline's profile (default: the one beside its log)")
        parser.add_argument("--junit", metavar="FILE", help="write the results as JUnit XML (one test case per rule)")
        parser.add_argument("--json", action="store_true", help="print the results as JSON (docs/check-schema.md)")

    def run(self, args: argparse.Namespace) -> int:
        for name in ("max_graph_breaks", "max_recompiles", "max_avoidable_recompiles", "max_compile_seconds",
                     "max_autotune_seconds", "time_margin", "time_min_seconds"):
            require_at_least(f"--{name.replace('_', '-')}", getattr(args, name), 0)
        require_at_least("--max-run-time-ratio", args.max_run_time_ratio, 1)
        baseline_only = {"--no-new-warnings": args.no_new_warnings,
                         "--max-run-time-ratio": args.max_run_time_ratio is not None}
        for name in ("time_threshold", "time_ratio", "time_min_seconds", "time_margin"):
            baseline_only[f"--{name.replace('_', '-')}"] = getattr(args, name) is not None
        for option, given in baseline_only.items():
            require_with(option, given, "--baseline LOG", bool(args.baseline), "compares with a baseline")
        for option, given in (("--profile", args.profile), ("--baseline-profile", args.baseline_profile)):
            require_with(option, given is not None, "--max-run-time-ratio R", args.max_run_time_ratio is not None,
                         "is read for the run-time gate")
        if args.time_min_seconds is not None:
            args.time_threshold = args.time_min_seconds
        if args.time_margin is not None:
            args.time_ratio = 1.0 + args.time_margin
        rules = Rules(max_graph_breaks=args.max_graph_breaks, max_recompiles=args.max_recompiles,
                      max_avoidable_recompiles=args.max_avoidable_recompiles, no_late_hooks=args.no_late_hooks,
                      no_failures=args.no_failures, no_export_issues=args.no_export_issues,
                      no_static_aoti_packages=args.no_static_aoti_packages,
                      allow_aoti_load_crash=args.allow_aoti_load_crash,
                      max_compile_seconds=args.max_compile_seconds, max_autotune_seconds=args.max_autotune_seconds,
                      no_cudagraph_skips=args.no_cudagraph_skips, no_inductor_random=args.no_inductor_random,
                      no_custom_op_mutations=args.no_custom_op_mutations,
                      no_warnings=args.no_warnings, user_kernels=args.user_kernel,
                      no_new_warnings=args.no_new_warnings, no_rank_divergence=args.no_rank_divergence,
                      compile_time=time_threshold(args), max_run_time_ratio=args.max_run_time_ratio)
        no_rule = not (args.no_failures or args.no_late_hooks or args.no_export_issues or args.no_static_aoti_packages
                       or args.baseline or args.no_cudagraph_skips or args.no_inductor_random
                       or args.no_custom_op_mutations or args.no_warnings
                       or args.no_rank_divergence or args.user_kernel) and all(
            v is None for v in (args.max_graph_breaks, args.max_recompiles, args.max_avoidable_recompiles,
                                args.max_compile_seconds, args.max_autotune_seconds))
        if no_rule:
            rules.no_failures = True
        # A rank that cannot be read is reported (rule whole-log fails) and the others are checked.
        not_read: dict[int, str] = {}
        baseline_not_read: dict[int, str] = {}
        # (profiles are read only for the run-time gate: reading one costs as much as a log)
        timed = args.max_run_time_ratio is not None
        baseline = read_side(args.baseline, covers="check", side="baseline", not_read=baseline_not_read,
                             profile=args.baseline_profile, profile_beside_log=timed, profile_gated=timed
                             ) if args.baseline else None
        summaries: list[RankSummary] | None = [] if args.no_rank_divergence else None
        runs = read_side(args.log, covers="check", side="run" if args.baseline else "", not_read=not_read,
                         summaries=summaries, profile=args.profile, profile_beside_log=timed, profile_gated=timed)
        if timed and baseline is not None:
            for side, facts, other in (("the baseline", baseline, None), ("the run", runs, baseline)):
                if (why := no_run_time(facts, other)) is not None:
                    raise CompilescopeError(f"--max-run-time-ratio: {side} {why}")
        # How the ranks differ, as the report's "Between ranks" finds it (one analysis, read by the gate too).
        divergences = analyze_ranks(summaries).divergences if summaries and len(summaries) > 1 else None
        if no_rule:  # a draft export's issue is its failure, checked as a failed compile is, where there is an export
            rules.no_export_issues = any(facts.export_issues is not None for facts in runs.values())
        results = evaluate(runs, rules, baseline, not_read, baseline_not_read, divergences)
        if args.junit:
            from ..render.junit import junit_xml

            self._write(args.junit, junit_xml(results, absolute(args.log)))
        failed = [r for r in results if not r.passed]
        if args.json:
            doc = {"schema_version": CHECK_SCHEMA_VERSION, "log": absolute(args.log),
                   "baseline": absolute(args.baseline) if args.baseline else None,
                   "passed": not failed, "rules": [r.to_json() for r in results]}
            sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
        else:
            # Each failed rule, and what a passing one saw that is worth a line (compile time up within the noise).
            for r in results:
                if not r.passed:
                    print(r.message)
                elif r.noteworthy:
                    print(f"{r.name} passed: {r.message}")
            if not failed:
                # (by name: `check LOG` alone asks for no-failures only, which "1 rule passed" did not say)
                print(f"compilescope check: {len(results)} rule{'' if len(results) == 1 else 's'} passed "
                      f"({', '.join(r.name for r in results)})")
        return 1 if failed else 0

    @staticmethod
    def _write(path: str, content: bytes) -> None:
        try:
            with open(path, "wb") as f:
                f.write(content)
        except OSError as exc:
            raise CompilescopeError(f"cannot write {path}: {exc.strerror or exc}") from None
