"""`compilescope run -- env ... python prog.py`: what the command's `env` does keeps what tracing needs.

Its PYTHONPATH=, -u PYTHONPATH or -i dropped the folder whose sitecustomize.py installs the bytecode hook (the report
silently lacked the transformed code); its -i dropped TORCH_TRACE (no log, no reason said); its TORCH_TRACE=elsewhere
moved the log where compilescope does not look. Each child here is real: it prints the environment it got.
"""

from __future__ import annotations

import json
import os
import shlex
import sys

import pytest

from compilescope.decompile.recorded import TRANSFORMED
from compilescope.runner import CHILD_DIR, Program, run_program

from .conftest import CHILD_TIMEOUT_S, FIXTURE_PROGRAMS, clean_env, compilescope

PY = sys.executable
WRITES_A_LOG = os.path.join(os.path.dirname(__file__), "programs", "writes_a_log.py")
# What the child sees: its PYTHONPATH's entries, the sitecustomize it loaded (compilescope's installs the hook), and the
# variables tracing needs, the user's own, and one the command sets.
SHOW_ENV = """
import json, os, sys
names = ("TORCH_TRACE", "TORCH_DTRACE", "INDUCTOR_PROVENANCE", "COMPILESCOPE_BYTECODE_HOOK", "TORCHINDUCTOR_CACHE_DIR", "USERS_OWN", "A")
site = sys.modules.get("sitecustomize")
print(json.dumps({"PYTHONPATH": os.environ.get("PYTHONPATH", "").split(os.pathsep),
                  "sitecustomize": os.path.dirname(getattr(site, "__file__", None) or ""),
                  **{name: os.environ.get(name) for name in names}}))
"""


def _seen(words: list[str], tmp_path, cache_dir: str | None = None) -> tuple[dict, str]:
    trace_dir = tmp_path / "traces"
    trace_dir.mkdir()
    output = tmp_path / "output.txt"
    result = run_program(Program([*words, PY, "-c", SHOW_ENV], False), str(trace_dir), output=str(output),
                         cache_dir=cache_dir, timeout=60)
    assert result.returncode == 0, output.read_text()
    return json.loads(output.read_text().splitlines()[-1]), str(trace_dir)


@pytest.mark.parametrize(("words", "pythonpath", "users_own", "a"), [
    (["env", "PYTHONPATH=lib"], [CHILD_DIR, "lib"], "kept", None),  # (the command's PYTHONPATH, after the hook's folder)
    (["env", "A=b", "PYTHONPATH=lib" + os.pathsep + "more"], [CHILD_DIR, "lib", "more"], "kept", "b"),
    (["env", "-u", "PYTHONPATH"], [CHILD_DIR], "kept", None),  # (the user's "theirs" gone, the hook's folder not)
    (["env", "--unset=PYTHONPATH", "A=b"], [CHILD_DIR], "kept", "b"),
    (["env", "-i"], [CHILD_DIR], None, None),  # (a clean environment for the program: the tracer's is given again)
    (["env", "-"], [CHILD_DIR], None, None),
    (["env", "-i", "A=b", "PYTHONPATH=lib"], [CHILD_DIR, "lib"], None, "b"),
    (["env", "--ignore-environment", "--", "A=b"], [CHILD_DIR], None, "b"),
    (["env", "A=b", "env", "-i", "PYTHONPATH="], [CHILD_DIR], None, None),  # (the second env clears the first's A)
    (["env", "-v", "-i"], [CHILD_DIR], None, None),  # (-v, --debug: env says what it does, on stderr)
    (["env", "--debug", "-u", "PYTHONPATH", "A=b"], [CHILD_DIR], "kept", "b"),
    (["env", "-C", os.sep, "-i"], [CHILD_DIR], None, None),  # (-C: the program elsewhere; the paths given are absolute)
    (["env", "--chdir=" + os.sep, "PYTHONPATH=lib"], [CHILD_DIR, "lib"], "kept", None),
])
def test_the_commands_env_keeps_what_tracing_needs(monkeypatch, tmp_path, words, pythonpath, users_own, a):
    monkeypatch.setenv("PYTHONPATH", "theirs")
    monkeypatch.setenv("USERS_OWN", "kept")
    for name in ("TORCH_TRACE", "TORCH_DTRACE", "A"):
        monkeypatch.delenv(name, raising=False)
    seen, trace_dir = _seen(words, tmp_path)
    assert seen["PYTHONPATH"] == pythonpath
    assert seen["sitecustomize"] == CHILD_DIR  # (the bytecode hook's loads)
    assert (seen["TORCH_TRACE"], seen["INDUCTOR_PROVENANCE"], seen["COMPILESCOPE_BYTECODE_HOOK"]) == (trace_dir, "1", "1")
    assert (seen["USERS_OWN"], seen["A"]) == (users_own, a)


def test_a_fresh_cache_wins_over_the_commands(monkeypatch, tmp_path):
    """--fresh-cache (and diagnose's runs that need one) asks for a cache of the run's own: the command's is replaced,
    as the inherited one is; where compilescope sets none, the command does with its own as it says."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "inherited")
    fresh = str(tmp_path / "fresh")
    for words, cache_dir, expected in ((["env", "TORCHINDUCTOR_CACHE_DIR=mine"], fresh, fresh),
                                       (["env", "-u", "TORCHINDUCTOR_CACHE_DIR"], fresh, fresh),
                                       (["env", "-i"], fresh, fresh),
                                       (["env", "A=b"], None, "inherited"),
                                       (["env", "TORCHINDUCTOR_CACHE_DIR=mine"], None, "mine"),
                                       (["env", "-u", "TORCHINDUCTOR_CACHE_DIR"], None, None),
                                       (["env", "-i"], None, None)):
        run = tmp_path / str(len(list(tmp_path.iterdir())))
        run.mkdir()
        assert _seen(words, run, cache_dir)[0]["TORCHINDUCTOR_CACHE_DIR"] == expected


@pytest.mark.parametrize(("command", "words", "said"), [
    ("run", ["env", "TORCH_TRACE=elsewhere"], "`env TORCH_TRACE=elsewhere` sets TORCH_TRACE"),
    ("run", ["env", "-u", "TORCH_TRACE"], "`env -u TORCH_TRACE` unsets TORCH_TRACE"),
    ("run", ["env", "-i", "INDUCTOR_PROVENANCE=0"], "`env INDUCTOR_PROVENANCE=0` sets INDUCTOR_PROVENANCE"),
    ("run", ["env", "A=b", "env", "-uCOMPILESCOPE_BYTECODE_HOOK"], "unsets COMPILESCOPE_BYTECODE_HOOK"),
    ("run", ["env", "--unset=TORCH_TRACE"], "`env --unset=TORCH_TRACE` unsets TORCH_TRACE"),  # (as the user wrote it)
    ("run", ["env", "-v", "--unset", "TORCH_TRACE"], "`env --unset TORCH_TRACE` unsets TORCH_TRACE"),
    ("diagnose", ["env", "TORCH_TRACE=elsewhere"], "sets TORCH_TRACE"),
    ("diagnose", ["env", "TORCH_BISECT_BACKEND=inductor"], "sets TORCH_BISECT_BACKEND"),  # (each stage forces its own)
])
def test_a_command_that_moves_or_drops_the_trace_is_refused_before_it_runs(tmp_path, command, words, said):
    """Refused rather than overridden: the command asks for it in so many words, and obeyed the report is empty."""
    ran = tmp_path / "ran"
    proc = compilescope(command, "--no-browser", "-o", tmp_path / "out", "--", *words, PY, "-c",
                        f"open({str(ran)!r}, 'w').close()", cwd=tmp_path, timeout=120)
    assert proc.returncode != 0
    [line] = proc.stderr.strip().splitlines()
    assert said in line and "remove it from the command" in line
    assert not ran.exists() and not (tmp_path / "compilescope_traces").exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize(("command", "words", "option"), [
    ("run", ["env", "-v", "-S", "-i A=b"], "-S"),  # (its words split: what they do to the environment, not known here)
    ("run", ["env", "--block-signal", "-i"], "--block-signal"),
    ("run", ["env", "-iu", "TORCH_TRACE"], "-iu"),  # (letters joined)
    ("diagnose", ["env", "-S", "-i A=b"], "-S"),
])
def test_an_env_option_compilescope_cannot_follow_is_refused_before_it_runs(tmp_path, command, words, option):
    """Such an env was run as written: `env -v -i` cleared TORCH_TRACE and the user was told the program wrote no
    log because it compiled nothing or never imported torch. Now one line names the option, and nothing runs."""
    ran = tmp_path / "ran"
    proc = compilescope(command, "--no-browser", "-o", tmp_path / "out", "--", *words, PY, "-c",
                        f"open({str(ran)!r}, 'w').close()", cwd=tmp_path, timeout=120)
    assert proc.returncode != 0
    [line] = proc.stderr.strip().splitlines()
    assert f"`env {option}` is an option of env compilescope cannot follow" in line and "remove it" in line
    assert not ran.exists() and not (tmp_path / "compilescope_traces").exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize(("command", "words", "option"), [
    ("run", ["env", "-0", "-i"], "-0"),
    ("run", ["env", "A=b", "env", "--null"], "--null"),
    ("diagnose", ["env", "-0"], "-0"),
    ("run", ["env", "-0v"], "-0v"),  # (letters joined: said as -0, not as an option compilescope cannot follow)
    ("run", ["env", "A=b", "env", "-i0"], "-i0"),
])
def test_an_env_that_would_refuse_the_command_is_refused_saying_so(tmp_path, command, words, option):
    """-0 (--null) only says how env prints the environment when it runs no command; GNU env refuses it before one
    (status 125, nothing runs). It was refused here as an option compilescope cannot follow, which it is not: the line
    now says what it is."""
    ran = tmp_path / "ran"
    proc = compilescope(command, "--no-browser", "-o", tmp_path / "out", "--", *words, PY, "-c",
                        f"open({str(ran)!r}, 'w').close()", cwd=tmp_path, timeout=120)
    assert proc.returncode != 0
    [line] = proc.stderr.strip().splitlines()
    assert f"`env {option}` only says how env prints the environment, and env refuses it before a command" in line
    assert not ran.exists() and not (tmp_path / "compilescope_traces").exists() and not (tmp_path / "out").exists()


def test_diagnose_refuses_an_env_that_runs_the_program_elsewhere(tmp_path):
    """diagnose reads the program's file and runs it from folders of its own: env's -C it cannot follow, so it says
    so before the first stage (run follows it: test_the_commands_env_keeps_what_tracing_needs)."""
    (tmp_path / "sub").mkdir()
    ran = tmp_path / "ran"
    proc = compilescope("diagnose", "-o", tmp_path / "out", "--", "env", "-C", "sub", PY, "-c",
                        f"open({str(ran)!r}, 'w').close()", cwd=tmp_path, timeout=120)
    assert proc.returncode != 0
    [line] = proc.stderr.strip().splitlines()
    assert "runs it in sub (-C), which diagnose cannot follow" in line
    # (and why, in the same line)
    assert "runs its accuracy and minifier stages from folders of its own" in line and "without -C" in line
    assert not ran.exists() and not (tmp_path / "out").exists()


@pytest.mark.torch
def test_env_i_with_its_own_pythonpath_records_the_transformed_code(tmp_path):
    """`run -- env -i PYTHONPATH=lib python prog.py`, end to end with torch: the log is written where run looks, with
    the code Dynamo ran that the bytecode hook records."""
    (tmp_path / "lib").mkdir()
    proc = compilescope("run", "--no-browser", "--timeout", CHILD_TIMEOUT_S, "--trace-dir", tmp_path / "traces", "-o",
                        tmp_path / "report", "--", "env", "-i", "PYTHONPATH=lib", PY, FIXTURE_PROGRAMS / "graph_breaks.py",
                        cwd=tmp_path, env=clean_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "after branch" in proc.stdout
    [log] = (tmp_path / "traces").glob("*.log")
    assert f'"name": "{TRANSFORMED}"' in log.read_text()



def test_a_pythonpath_compilescope_adds_keeps_the_hooks_folder_first(tmp_path):
    """diagnose's runs away from the working folder give the program it on PYTHONPATH (extra_env): that replaced the
    whole PYTHONPATH child_env made, the hook's folder with it, so those runs recorded no transformed code."""
    (tmp_path / "traces").mkdir()
    output = tmp_path / "output.txt"
    result = run_program(Program([PY, "-c", SHOW_ENV], True), str(tmp_path / "traces"), output=str(output),
                         extra_env={"PYTHONPATH": "lib"}, timeout=60)
    assert result.returncode == 0, output.read_text()
    seen = json.loads(output.read_text().splitlines()[-1])
    assert (seen["PYTHONPATH"], seen["sitecustomize"]) == ([CHILD_DIR, "lib"], CHILD_DIR)


def _shell_seen(command: str, tmp_path, shell: tuple[str, ...] = ("sh", "-c")) -> dict:
    """What the program of `run -- sh -c COMMAND` (shell: its words before COMMAND) saw (SHOW_ENV, as show_env.py in
    tmp_path, its working folder)."""
    (tmp_path / "show_env.py").write_text(SHOW_ENV)
    (tmp_path / "traces").mkdir()
    output = tmp_path / "output.txt"
    result = run_program(Program([*shell, command], False), str(tmp_path / "traces"), output=str(output),
                         timeout=60, cwd=str(tmp_path))
    assert result.returncode == 0, output.read_text()
    return json.loads(output.read_text().splitlines()[-1])


@pytest.mark.parametrize("command", [
    f"env -i A=b {shlex.quote(PY)} show_env.py",
    f"env -u PYTHONPATH env A=b {shlex.quote(PY)} show_env.py extra 'quoted word'",  # (two envs: each read)
], ids=["env -i", "two envs"])  # (not the words: they hold this venv's absolute path)
def test_the_env_of_a_simple_sh_c_command_keeps_what_tracing_needs(monkeypatch, tmp_path, command):
    """`run -- sh -c "env -i python x.py"`: the env inside the shell's string was not seen, and its -i dropped what
    tracing needs (no log, no reason said). A string that is one simple command is read (shlex) and rewritten."""
    monkeypatch.setenv("PYTHONPATH", "theirs")
    for name in ("TORCH_TRACE", "TORCH_DTRACE", "A"):
        monkeypatch.delenv(name, raising=False)
    seen = _shell_seen(command, tmp_path)
    assert (seen["PYTHONPATH"], seen["sitecustomize"], seen["A"]) == ([CHILD_DIR], CHILD_DIR, "b")
    assert (seen["TORCH_TRACE"], seen["COMPILESCOPE_BYTECODE_HOOK"]) == (str(tmp_path / "traces"), "1")


@pytest.mark.parametrize(("shell", "command"), [
    (("sh", "-ec"), f"env -i A=b {shlex.quote(PY)} show_env.py"),  # (option letters that change nothing read)
    (("bash", "-lc"), f"env -i A=b {shlex.quote(PY)} show_env.py"),
    (("sh", "-c", "--"), f"env -i A=b {shlex.quote(PY)} show_env.py"),
    (("sh", "-c"), f"exec env -i A=b {shlex.quote(PY)} show_env.py"),
    (("sh", "-e", "-c"), f"env -i A=b {shlex.quote(PY)} show_env.py"),  # (the same letters apart)
    (("bash", "-c", "-x"), f"env -i A=b {shlex.quote(PY)} show_env.py"),
], ids=["sh -ec", "bash -lc", "sh -c --", "exec env", "sh -e -c", "bash -c -x"])
def test_the_env_of_a_shell_string_given_otherwise_keeps_what_tracing_needs(monkeypatch, tmp_path, shell, command):
    """`sh -ec`, `bash -lc`, `sh -c -- STRING`, `exec env` in the string and `sh -e -c` were run as written: env -i
    dropped what tracing needs. They are read as `sh -c STRING` is. (HOME: a login shell's profile files, none.)"""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", "theirs")
    for name in ("TORCH_TRACE", "TORCH_DTRACE", "A"):
        monkeypatch.delenv(name, raising=False)
    seen = _shell_seen(command, tmp_path, shell)
    assert (seen["PYTHONPATH"], seen["sitecustomize"], seen["A"]) == ([CHILD_DIR], CHILD_DIR, "b")
    assert seen["TORCH_TRACE"] == str(tmp_path / "traces")


PROFILE = "export TORCH_TRACE=elsewhere PYTHONPATH=/prof A=prof\n"


@pytest.mark.parametrize("shell", [("bash", "-lc"), ("bash", "-l", "-c"), ("bash", "--login", "-c"), ("sh", "-lc"),
                                   ("dash", "-lc")], ids=" ".join)
@pytest.mark.parametrize("command", [f"{shlex.quote(PY)} show_env.py", f"{shlex.quote(PY)} show_env.py \"$A\""],
                         ids=["read", "unread"])
@pytest.mark.parametrize("profile", [PROFILE, f"export TORCH_DTRACE={os.devnull}-elsewhere\n{PROFILE}"],
                         ids=["TORCH_TRACE", "TORCH_DTRACE"])
def test_a_login_shells_profile_moves_no_log(monkeypatch, tmp_path, shell, command, profile):
    """A login shell (`bash -lc`) reads the profile before its string: one that exports TORCH_TRACE or PYTHONPATH
    moved the log where compilescope does not look and dropped the bytecode hook's folder, unseen. The string, read
    or not (a $ in it), now starts by exporting them again; the profile's PYTHONPATH stays after the hook's folder, and
    what else it exports stays. A TORCH_DTRACE it exports (torch's wins over TORCH_TRACE) is unset where the run's
    environment has none: it moved the log still."""
    home = tmp_path / "home"
    home.mkdir()
    for name in (".bash_profile", ".profile"):
        (home / name).write_text(profile)
    monkeypatch.setenv("HOME", str(home))
    for name in ("TORCH_TRACE", "TORCH_DTRACE", "A", "PYTHONPATH"):
        monkeypatch.delenv(name, raising=False)
    seen = _shell_seen(command, tmp_path, shell)
    assert (seen["TORCH_TRACE"], seen["TORCH_DTRACE"], seen["COMPILESCOPE_BYTECODE_HOOK"]) == (
        str(tmp_path / "traces"), None, "1")
    assert (seen["PYTHONPATH"], seen["sitecustomize"], seen["A"]) == ([CHILD_DIR, "/prof"], CHILD_DIR, "prof")


@pytest.mark.parametrize("shell", [("sh", "-lc"), ("dash", "-elc"), ("bash", "-lc"), ("bash", "-elc")], ids=" ".join)
@pytest.mark.parametrize("dtrace", [None, "ours"])
def test_a_profile_that_makes_torch_dtrace_readonly_does_not_stop_the_program(monkeypatch, tmp_path, shell, dtrace):
    """A login shell's string starts by unsetting TORCH_DTRACE (or exporting the run's): where the profile made it
    readonly, that error of a special builtin ended sh (dash, status 2) and `bash -e` before the program ran. It runs
    now, with the run's TORCH_TRACE and the hook's folder; the profile's readonly TORCH_DTRACE stays (its log goes
    there: nothing the run can change)."""
    home = tmp_path / "home"
    home.mkdir()
    for name in (".bash_profile", ".profile"):
        (home / name).write_text(f"export TORCH_DTRACE={os.devnull}-elsewhere\nreadonly TORCH_DTRACE\n")
    monkeypatch.setenv("HOME", str(home))
    for name in ("TORCH_TRACE", "TORCH_DTRACE", "PYTHONPATH"):
        monkeypatch.delenv(name, raising=False)
    if dtrace is not None:
        monkeypatch.setenv("TORCH_DTRACE", dtrace)
    seen = _shell_seen(f"{shlex.quote(PY)} show_env.py", tmp_path, shell)
    assert (seen["TORCH_TRACE"], seen["TORCH_DTRACE"], seen["sitecustomize"]) == (
        str(tmp_path / "traces"), f"{os.devnull}-elsewhere", CHILD_DIR)


@pytest.mark.parametrize(("shell", "suggested"), [
    (("bash", "-l", "s.sh"), "`bash -lc \"COMMAND\"`, which compilescope follows, or without -l/-i (`bash -c`"),
    (("bash", "-l", "--", "s.sh"), "`bash -lc \"COMMAND\"`, which compilescope follows, or"),
    (("bash", "-o", "pipefail", "-lc", "sh s.sh"),
     "`bash -lc \"COMMAND\"`, which compilescope follows (with `-o pipefail` set inside COMMAND instead), or"),
    (("bash", "-lic", "sh s.sh"), "`bash -lc \"COMMAND\"`, which compilescope follows, or"),
    (("sh", "-l", "s.sh"), "`sh -lc \"COMMAND\"`, which compilescope follows, or without -l/-i (`sh -c`, `sh script.sh`)"),
    (("bash", "--rcfile", "home/.bashrc", "-i", "s.sh"), "`bash -lc \"COMMAND\"`, which compilescope follows, or"),
], ids=lambda value: " ".join(value) if isinstance(value, tuple) else "")
def test_a_login_shell_the_run_cannot_reach_is_named_when_no_log_came(tmp_path, shell, suggested):
    """A login or interactive shell whose string the run does not rewrite (a script, `-o pipefail -lc`, `-lic`) reads
    a profile that may move the log: the run said only that the program wrote no log. It says now that the shell's
    profile may have moved it, and how to run the shell so that it does not."""
    from pathlib import Path

    home = tmp_path / "home"
    home.mkdir()
    for name in (".bash_profile", ".profile", ".bashrc"):
        (home / name).write_text(f"export TORCH_TRACE={tmp_path / 'elsewhere'}\n")
    (tmp_path / "elsewhere").mkdir()
    log = Path(__file__).parent.parent / "data" / "torch213" / "logs" / "cache_warm.log"
    (tmp_path / "s.sh").write_text(f"{shlex.quote(PY)} {shlex.quote(str(WRITES_A_LOG))} {shlex.quote(str(log))} "
                                   f"{shlex.quote(str(tmp_path / 'ran'))}\n")
    proc = compilescope("run", "--no-browser", "--trace-dir", tmp_path / "traces", "--", *shell, cwd=tmp_path,
                        env=clean_env(HOME=str(home)), timeout=120)
    assert (tmp_path / "ran").exists() and list((tmp_path / "elsewhere").iterdir()), proc.stderr
    [line] = [line for line in proc.stderr.splitlines() if "wrote no TORCH_TRACE log" in line]
    assert "login or interactive shell" in line and "its profile may have moved the log" in line, line
    assert suggested in line, line  # (the shell the user ran, its other options kept)



@pytest.mark.parametrize(("argv", "unreached"), [
    (["bash", "-l", "s.sh"], True), (["env", "A=b", "bash", "-lic", "x"], True), (["sh", "-i"], True),
    (["bash", "--login", "s.sh"], True), (["bash", "-o", "pipefail", "-lc", "x"], True),
    (["bash", "-lc", "x"], False), (["bash", "-l", "-c", "x"], False), (["bash", "s.sh"], False),
    (["bash", "-c", "x"], False), (["bash", "-o", "pipefail", "-c", "x"], False), (["python", "-i"], False),
    (["dash", "-l", "s.sh"], True), (["dash", "-lc", "x"], False),  # (dash's -lc string is rewritten, as sh's)
    (["zsh", "-lc", "x"], True), (["zsh", "--login", "s.sh"], True), (["ksh", "-i"], True), (["mksh", "-l", "s.sh"], True),
    (["zsh", "-c", "x"], False), (["ksh", "s.sh"], False),
    # bash's long options: --noprofile, --norc (no startup file read), --rcfile/--init-file FILE (one read)
    (["bash", "--noprofile", "-l", "s.sh"], False), (["bash", "--norc", "-i"], False),
    (["bash", "--noprofile", "-li"], False), (["bash", "--norc", "-l", "s.sh"], True),
    (["bash", "--noprofile", "-i"], True), (["bash", "--rcfile", "f", "-i"], True), (["bash", "--init-file", "f", "-i"], True),
    (["bash", "--rcfile", "f", "s.sh"], False),
], ids=lambda value: " ".join(value) if isinstance(value, list) else str(value))
def test_which_login_shells_the_run_cannot_reach(argv, unreached):
    """Only a login or interactive shell whose string is not rewritten, and that reads a startup file, gets the hint
    (a `-lc` string is rewritten; `bash --noprofile -l` reads no profile)."""
    from compilescope.runner import unreached_login_shell

    assert bool(unreached_login_shell(argv)) is unreached


@pytest.mark.parametrize(("argv", "name", "rewritten", "other"), [
    (["sh", "-l", "s.sh"], "sh", True, []), (["/bin/dash", "-i"], "dash", True, []),
    (["bash", "-o", "pipefail", "-lc", "x"], "bash", True, ["-o pipefail"]),
    (["bash", "-e", "+o", "histexpand", "-O", "extglob", "--posix", "-l", "s.sh"], "bash", True,
     ["+o histexpand", "-O extglob", "--posix"]),
    (["bash", "--rcfile", "f", "--norc", "-li", "s.sh"], "bash", True, []), (["zsh", "-lc", "x"], "zsh", False, []),
], ids=lambda value: " ".join(value) if isinstance(value, list) else str(value))
def test_an_unreached_login_shell_is_named_with_the_options_its_suggested_form_lacks(argv, name, rewritten, other):
    """The hint suggested `bash -lc` for `sh -l` and dropped `-o pipefail`: the shell is named as the user ran it, with
    the options the `-lc` form the run follows does not take (to be set inside its string)."""
    from compilescope.runner import UnreachedShell, unreached_login_shell

    assert unreached_login_shell(argv) == UnreachedShell(name, rewritten, other)


def test_a_carriage_return_in_a_shell_string_stays_in_its_word(tmp_path):
    """shlex splits at a \r, the shell does not: the string rewritten lost it (`echo x\r` printed x)."""
    (tmp_path / "traces").mkdir()
    output = tmp_path / "output.txt"
    result = run_program(Program(["sh", "-c", "env -i /bin/echo x\r"], False), str(tmp_path / "traces"),
                         output=str(output), timeout=60)
    assert result.returncode == 0
    assert output.read_bytes() == b"x\r\n"


def test_an_sh_c_string_of_more_than_one_command_is_run_as_written(monkeypatch, tmp_path):
    """A string that is not one simple command (here two, with `;`) is not read: run as written, and not refused."""
    monkeypatch.delenv("TORCH_TRACE", raising=False)
    seen = _shell_seen(f"env -i {shlex.quote(PY)} show_env.py; true", tmp_path)
    assert seen["TORCH_TRACE"] is None and seen["sitecustomize"] != CHILD_DIR  # (env -i as the user wrote it)


@pytest.mark.parametrize(("command", "said"), [
    ("run", "`env TORCH_TRACE=elsewhere` sets TORCH_TRACE"),
    ("diagnose", "`env TORCH_TRACE=elsewhere` sets TORCH_TRACE"),
])
def test_an_sh_c_command_whose_env_moves_the_trace_is_refused_before_it_runs(tmp_path, command, said):
    """The env inside a simple `sh -c` string is checked as one before the command (it ran, its log elsewhere)."""
    ran = tmp_path / "ran"
    (tmp_path / "touch.py").write_text(f"open({str(ran)!r}, 'w').close()\n")
    proc = compilescope(command, "--no-browser", "-o", tmp_path / "out", "--", "sh", "-c",
                        f"env TORCH_TRACE=elsewhere {shlex.quote(PY)} touch.py", cwd=tmp_path, timeout=120)
    assert proc.returncode != 0
    [line] = proc.stderr.strip().splitlines()
    assert said in line and "remove it from the command" in line
    assert not ran.exists() and not (tmp_path / "compilescope_traces").exists() and not (tmp_path / "out").exists()
