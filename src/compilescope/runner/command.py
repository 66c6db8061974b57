"""The child's environment (child_env), and the user's command line read for what would change it: an `env` before
the command (its -i, -u, -C, NAME=VALUE: env_prefix, check_env_prefix), a simple `sh -c`/`bash -lc` string
(shell_command), a login shell the run cannot reach (unreached_login_shell); run_argv keeps what tracing needs
through them."""

from __future__ import annotations

import os
import shlex
from collections.abc import Collection
from dataclasses import dataclass

from ..errors import CompilescopeError


PER_RANK_CACHE_ENV = "COMPILESCOPE_PER_RANK_CACHE"  # (read by _child/sitecustomize.py, which imports nothing of ours)
# The folder whose sitecustomize.py installs the bytecode hook in the child: first on its PYTHONPATH.
CHILD_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_child")  # (compilescope/_child)
# What the child's environment must say for the run to be traced as compilescope reads it (an `env` before the
# command that sets or unsets one is refused: check_env_prefix); PYTHONPATH and the cache are merged in instead.
TRACING_VARIABLES = ("TORCH_TRACE", "TORCH_DTRACE", "INDUCTOR_PROVENANCE", "COMPILESCOPE_BYTECODE_HOOK")
_CACHE_VARIABLES = ("TORCHINDUCTOR_CACHE_DIR", PER_RANK_CACHE_ENV)


def child_env(trace_dir: str, cache_dir: str | None = None, base: dict[str, str] | None = None,
              extra: dict[str, str | None] | None = None) -> dict[str, str]:
    """extra: variables to set on top (None removes one), e.g. diagnose's forced backend; its PYTHONPATH comes after
    CHILD_DIR, as the inherited one does."""
    env = dict(os.environ if base is None else base)
    extra = dict(extra or {})
    if "PYTHONPATH" in extra:
        pythonpath = extra.pop("PYTHONPATH")
        env.pop("PYTHONPATH", None)
        env.update({} if pythonpath is None else {"PYTHONPATH": pythonpath})
    env["TORCH_TRACE"] = trace_dir
    if env.get("TORCH_DTRACE"):  # it would win over TORCH_TRACE: keep it, but write here too
        env["TORCH_DTRACE"] = trace_dir
    env["INDUCTOR_PROVENANCE"] = "1"
    # The child records the code Dynamo runs instead of each frame (bytecode_capture.py, via _child/sitecustomize.py).
    env["PYTHONPATH"] = _after_child_dir(env.get("PYTHONPATH"))
    env["COMPILESCOPE_BYTECODE_HOOK"] = "1"
    if cache_dir is not None:
        env["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
        # Each rank of a distributed job gets its own part of it (_child/sitecustomize.py): sharing one, rank 1
        # loads rank 0's graphs, and its log lacks their intermediate graphs and provenance.
        env[PER_RANK_CACHE_ENV] = cache_dir
    for key, value in extra.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def _after_child_dir(pythonpath: str | None) -> str:
    return os.pathsep.join([CHILD_DIR, *([pythonpath] if pythonpath else [])])


@dataclass(frozen=True)
class EnvWords:
    """One `env [OPTION]... [NAME=VALUE]...` before the command it runs (env_prefix)."""

    options: list[str]  # its words from `env` to the first NAME=VALUE (`--` included)
    assignments: list[str]  # its NAME=VALUE words
    clears: bool  # -i, -, --ignore-environment: the command starts from an empty environment
    unsets: list[tuple[str, str]]  # (the name its -u, --unset removes, the words as written: "-u X", "--unset=X")
    chdir: str | None = None  # -C, --chdir DIR: the command runs in DIR


# env's options that change nothing the run needs: they say what env does, on stderr
_ENV_HARMLESS = ("-v", "--debug")
# How env prints the environment when it runs no command (each line ended by NUL): with a command GNU env refuses it
# ("cannot specify --null (-0) with command", status 125), so nothing would run
_ENV_PRINTS_ONLY = ("-0", "--null")
# Shells whose `-c STRING` is read for an env in it, where STRING is one simple command (shell_command), and whose
# login string is rewritten (_exported_for_tracing): POSIX sh words, the same option letters (dash is Debian's sh)
_SHELLS = ("sh", "bash", "dash")
# Login shells whose profile the run does not reach at all (their strings are not read): said when no log came
# (unreached_login_shell), with the forms it follows
_OTHER_SHELLS = ("zsh", "ksh", "ksh93", "mksh")
# Option letters of the shell's `-c STRING`, joined to its c (`sh -ec`, `bash -lc`) or apart (`bash -l -c`): none changes
# how the string is split nor which command it runs. e: exit on error; u: unset variables an error; x, v: print what
# runs, on stderr; f: no globs (a string with a glob character is not read anyway); l (bash's --login too): a login
# shell, which reads the profile first: what it exports could move the log or drop the bytecode hook's folder, so the
# string of a login shell starts by exporting the tracing variables again (_exported_for_tracing). Not these: i
# (interactive: aliases, rc files), k (NAME=VALUE anywhere is an assignment), n (runs nothing), s, o, +options and the
# rest: the string is run as written, unread.
_SHELL_LETTERS = frozenset("euxvfl")
# What shlex does not split as the shell does (expansions, substitutions, escapes in double quotes, globs, comments, a
# line end between two commands): a string holding one anywhere, quoted or not, is run as written, unread
_SHELL_UNREAD = frozenset("$`\\*?[{~#\n")
_SHELL_BLANKS = " \t"  # (shlex's default adds \r and \n: the shell keeps a \r in the word; \n is _SHELL_UNREAD)


def _env_words(argv: list[str]) -> tuple[list[EnvWords], list[str]] | str:
    """env_prefix's `env`s and command, or the first option of an env it cannot follow ("-S", "-0", "-iu")."""
    found = []
    while argv and os.path.basename(argv[0]) == "env":
        i, clears, unsets, chdir = 1, False, [], None
        while i < len(argv):
            word = argv[i]
            if word in ("-i", "-", "--ignore-environment"):
                clears = True
            elif word in _ENV_HARMLESS:
                pass
            elif word in ("-u", "--unset", "-C", "--chdir") and i + 1 < len(argv):
                i += 1
                if word in ("-u", "--unset"):
                    unsets.append((argv[i], f"{word} {argv[i]}"))
                else:
                    chdir = argv[i]
            elif word.startswith(("--unset=", "-u")) and word not in ("-u", "--unset="):
                unsets.append((word.partition("=")[2] if word.startswith("--") else word[2:], word))
            elif word.startswith(("--chdir=", "-C")) and word not in ("-C", "--chdir="):
                chdir = word.partition("=")[2] if word.startswith("--") else word[2:]
            elif word == "--":
                i += 1
                break
            elif word.startswith("-"):
                return word
            else:
                break
            i += 1
        end = i
        while end < len(argv) and "=" in argv[end]:
            end += 1
        found.append(EnvWords(argv[:i], argv[i:end], clears, unsets, chdir))
        argv = argv[end:]
    return found, argv


def _shell_string_at(argv: list[str]) -> tuple[int, bool] | None:
    """Where argv, a shell's `-c STRING` (`sh -c`, `sh -c -- STRING`, `bash -lc`, `bash -l -c`: _SHELL_LETTERS), has
    its STRING, and whether the shell is a login shell (it reads the profile before the string)."""
    if len(argv) < 3 or os.path.basename(argv[0]) not in _SHELLS:
        return None
    letters, login, at = "", False, 1
    while at < len(argv) and argv[at][:1] in ("-", "+"):
        word = argv[at]
        at += 1
        if word == "--":
            break
        if word == "--login" and os.path.basename(argv[0]) == "bash":
            login = True
        elif word.startswith(("--", "+")) or word == "-":
            return None  # (another long option, an option turned off, `-` as the end of options: not read)
        else:
            letters += word[1:]
    if letters.count("c") != 1 or not set(letters.replace("c", "")) <= _SHELL_LETTERS or at >= len(argv):
        return None
    return at, login or "l" in letters


@dataclass(frozen=True)
class UnreachedShell:
    """A login or interactive shell the run cannot reach (unreached_login_shell)."""

    name: str  # as the user ran it: sh, bash, dash, zsh...
    rewritten: bool  # whether the run rewrites its `-lc STRING` (sh, bash, dash), the form to suggest
    other_options: list[str]  # its options that form does not take (`-o pipefail`): to be set inside STRING instead


# Letters of a shell's short options that `-lc STRING` keeps (_SHELL_LETTERS) or that say how it starts (i, c)
_LOGIN_FORM_LETTERS = frozenset("euxvflic")


def unreached_login_shell(argv: list[str]) -> UnreachedShell | None:
    """The login or interactive shell argv runs (after any `env`: `bash -l s.sh`, `bash -o pipefail -lc`, `bash -lic`,
    `zsh -lc`) whose string the run does not start by exporting the tracing variables again (_kept_for_tracing reaches
    sh/bash/dash `-lc STRING` alone), where it reads a startup file: the profile may move the log unseen. None where
    it reads none: bash's --noprofile (a login shell's profile), --norc (an interactive one's ~/.bashrc); its --rcfile
    and --init-file name the file instead (the next word)."""
    found = env_prefix(argv)
    command = argv if found is None else found[1]
    name = os.path.basename(command[0]) if command else ""
    if name not in (*_SHELLS, *_OTHER_SHELLS):
        return None
    shell = _shell_string_at(command)
    if shell is not None and shell[1]:
        return None  # (its string is rewritten)
    login = interactive = no_profile = no_rc = False
    other: list[str] = []
    at = 1
    while at < len(command) and command[at][:1] in ("-", "+") and command[at] not in ("-", "--"):
        word = command[at]
        at += 1
        if word == "--login":
            login = True
        elif name == "bash" and word in ("--noprofile", "--norc"):
            no_profile, no_rc = no_profile or word == "--noprofile", no_rc or word == "--norc"
        elif name == "bash" and word in ("--rcfile", "--init-file"):
            at += 1  # (its FILE: read instead of ~/.bashrc, a startup file still)
        elif word.startswith("--"):
            other.append(word)
        else:
            if word[0] == "-":
                login, interactive = login or "l" in word, interactive or "i" in word
            takes_name = word[-1] in "oO" and at < len(command)  # (-o NAME, -O NAME, +o NAME)
            if not set(word[1:]) <= _LOGIN_FORM_LETTERS:
                other.append(f"{word} {command[at]}" if takes_name else word)
            at += takes_name
    # (bash reads a login shell's profile, else an interactive one's ~/.bashrc: one of them)
    if not (login and not no_profile) and not (interactive and not login and not no_rc):
        return None
    return UnreachedShell(name, name in _SHELLS, other)


def shell_command(argv: list[str]) -> list[str] | None:
    """The words of the one simple command that `sh -c STRING` (or bash's, _shell_string_at) runs, as the shell splits
    them; None where argv is no such shell, or STRING holds more than one simple command (an operator: ; && | ( ), a
    redirection) or anything shlex does not read as the shell does (_SHELL_UNREAD): such a command is run as written,
    unread."""
    found = _shell_string_at(argv)
    if found is None or any(c in _SHELL_UNREAD for c in argv[found[0]]):
        return None
    lexer = shlex.shlex(argv[found[0]], posix=True, punctuation_chars=True)
    lexer.whitespace = _SHELL_BLANKS
    lexer.whitespace_split = True  # (words split at blanks and at operators only, as the shell does)
    try:
        words = list(lexer)
    except ValueError:  # (a quote not closed: the shell refuses it too)
        return None
    if not words or any(word and not word.strip(lexer.punctuation_chars) for word in words):
        return None  # (an operator, or a quoted word made of their characters alone: not told apart here)
    return words


def _all_env_words(argv: list[str]) -> list[EnvWords] | str:
    """Every `env` of argv (_env_words): those before its command and, where that command is a simple `sh -c`
    (shell_command), those of the command the shell runs, in turn; or the first option of one not understood here."""
    found: list[EnvWords] = []
    while True:
        words = _env_words(argv)
        if isinstance(words, str):
            return words
        found += words[0]
        inner = shell_command(words[1])
        if inner is None:
            return found
        argv = inner[_exec_words(inner):]


def _exec_words(words: list[str]) -> int:
    """How many of a shell command's words are a plain `exec` before the command it runs in the shell's stead (1 or
    0; `exec -a NAME`, bash's, and the like are not read)."""
    return 1 if len(words) > 1 and words[0] == "exec" and not words[1].startswith("-") else 0


def env_prefix(argv: list[str]) -> tuple[list[EnvWords], list[str]] | None:
    """The `env [-i] [-u NAME] [-C DIR] [-v] [NAME=VALUE]... COMMAND...` before the command argv runs, one for each env
    (`env A=b env -i ...`), and that command; ([], argv) where it is no env; None where an option of env is not
    understood here (-S, -0, a signal's, letters joined: check_env_prefix refuses the command)."""
    found = _env_words(argv)
    return None if isinstance(found, str) else found


def check_env_prefix(argv: list[str], names: Collection[str] = TRACING_VARIABLES, chdir: bool = True) -> None:
    """A CompilescopeError where an `env` before the program (env_prefix) sets or unsets one of names, variables
    compilescope sets for the run (TRACING_VARIABLES: torch would write no trace, or one elsewhere, or without what
    compilescope records), before anything runs. Refused, not overridden: the command asks for it in so many words.
    (Its -i is no such thing: the variables are given again after it, run_argv.) Refused too: an option of env not
    understood here (what it does to the environment is not known), and -C where chdir is False (diagnose, which reads
    and runs the program from folders of its own). The env of a simple `sh -c` command is checked too (shell_command)."""
    found = _all_env_words(argv)
    if isinstance(found, str) and (found in _ENV_PRINTS_ONLY or _joined_null(found)):
        raise CompilescopeError(f"the program's `env {found}` only says how env prints the environment, and env refuses "
                                "it before a command (it would run nothing); remove it from the command")
    if isinstance(found, str):
        raise CompilescopeError(f"the program's `env {found}` is an option of env compilescope cannot follow (it keeps "
                                "what tracing needs through env's -i, -u, -v, -C and NAME=VALUE only); remove it from "
                                "the command")
    for words in found:
        if words.chdir is not None and not chdir:
            raise CompilescopeError(f"the program's `env` runs it in {words.chdir} (-C), which diagnose cannot follow "
                                    "(it reads the program's file from the folder it is run in, and runs its accuracy "
                                    "and minifier stages from folders of its own, which -C would leave): run diagnose "
                                    "from that folder instead, without -C")
        for name, word, unsets in [*((name, word, True) for name, word in words.unsets),
                                   *((word.partition("=")[0], word, False) for word in words.assignments)]:
            if name in names:
                hint = " (--trace-dir says where the logs go)" if name in ("TORCH_TRACE", "TORCH_DTRACE") else ""
                raise CompilescopeError(f"the program's `env {word}` {'unsets' if unsets else 'sets'} "
                                        f"{name}, which compilescope sets itself to trace the program; remove it from "
                                        f"the command{hint}")


def _joined_null(word: str) -> bool:
    """word is env's short options joined (`-0v`, `-i0`) with -0 among them, before any that takes the rest as its
    value (-u, -C, -S, -a)."""
    if not word.startswith("-") or word.startswith("--"):
        return False
    for letter in word[1:]:
        if letter == "0":
            return True
        if letter in "uCSa":
            return False
    return False


def run_argv(argv: list[str], env: dict[str, str], names: Collection[str] = (), fresh_cache: bool = False) -> list[str]:
    """argv as the child runs it, with compilescope's variables (env: child_env's) kept where an `env` before the
    command would drop them: its PYTHONPATH=VALUE keeps CHILD_DIR first (the bytecode hook loads); its -i, or -u of
    PYTHONPATH or of the cache, has them given again after its options (a user who clears the environment clears it
    for the program, not for the tracer); its cache setting gives way to compilescope's (fresh_cache: env names one).
    names: the others compilescope sets, which the command may not touch (check_env_prefix). The env of a simple
    `sh -c` command is kept so too, in the shell's string (shell_command). argv itself where it has no env."""
    check_env_prefix(argv, [*TRACING_VARIABLES, *names])
    return _kept_for_tracing(argv, env, names, fresh_cache)


def _kept_for_tracing(argv: list[str], env: dict[str, str], names: Collection[str], fresh_cache: bool) -> list[str]:
    """run_argv of a command check_env_prefix accepted; a simple `sh -c` command's string (shell_command) rewritten
    in turn, where its env changes; a login shell's string (`bash -lc`), read or not, starts by exporting the tracing
    variables again."""
    found = env_prefix(argv)
    if not found:
        return argv
    command = found[1]
    shell = _shell_string_at(command)
    if shell is not None:
        at, login = shell
        string = command[at]
        inner = shell_command(command)
        if inner is not None:
            run = _exec_words(inner)
            kept_inner = inner[:run] + _kept_for_tracing(inner[run:], env, names, fresh_cache)
            string = string if kept_inner == inner else shlex.join(kept_inner)
        if login:
            string = _exported_for_tracing(env, names, fresh_cache) + string
        command = [*command[:at], string, *command[at + 1:]]
    if not found[0]:
        return command
    ours = {**_set_for_tracing(env, names, fresh_cache), "PYTHONPATH": CHILD_DIR}
    caches = _CACHE_VARIABLES if fresh_cache else ()
    kept = []
    for words in found[0]:
        assigned = {word.partition("=")[0] for word in words.assignments}  # (its own PYTHONPATH=, cache: kept below)
        again = {name: value for name, value in ours.items()
                 if (words.clears or name in {unset for unset, _ in words.unsets}) and name not in assigned}
        assignments = [f"{name}={value}" for name, value in again.items()]
        for word in words.assignments:
            name, _, value = word.partition("=")
            if name == "PYTHONPATH":
                word = f"PYTHONPATH={_after_child_dir(value)}"
            elif name in caches:
                word = f"{name}={env[name]}"
            assignments.append(word)
        kept += [*words.options, *assignments]
    return [*kept, *command]


def _set_for_tracing(env: dict[str, str], names: Collection[str], fresh_cache: bool) -> dict[str, str]:
    """The variables of env (child_env's) compilescope sets for tracing, but PYTHONPATH: the cache's where it is the
    run's own (fresh_cache; else the user's, inherited, is none of compilescope's); names: the others it sets."""
    caches = _CACHE_VARIABLES if fresh_cache else ()
    return {name: env[name] for name in (*TRACING_VARIABLES, *caches, *names) if name in env}


def _exported_for_tracing(env: dict[str, str], names: Collection[str], fresh_cache: bool) -> str:
    """The start of a login shell's string: the tracing variables exported again after its profile (which may have
    exported its own TORCH_TRACE or PYTHONPATH), CHILD_DIR first on the PYTHONPATH the profile left. A TORCH_DTRACE
    the profile exports is unset where the run has none (torch's TORCH_DTRACE wins over TORCH_TRACE: the log would go
    there); where the run has one, it is exported again as the run's. A profile that made TORCH_DTRACE readonly keeps
    it (the log goes there), but the program runs: an error of unset or export, special builtins, ends a POSIX shell
    (dash: status 2, the program never run) and -e ends bash; `command` takes away the first, `|| :` the second."""
    exported = _set_for_tracing(env, names, fresh_cache)
    dtrace = exported.pop("TORCH_DTRACE", None)
    words = [shlex.quote(f"{name}={value}") for name, value in exported.items()]
    first = "unset TORCH_DTRACE" if dtrace is None else f"export {shlex.quote(f'TORCH_DTRACE={dtrace}')}"
    return (f'command {first} 2>/dev/null || :; '
            f'export {" ".join(words)} PYTHONPATH={shlex.quote(CHILD_DIR)}${{PYTHONPATH:+:"$PYTHONPATH"}}; ')
