"""Where diagnose looks for the seed a program sets in a module it imports: the module its own Python imports, found
with the command's environment and interpreter flags, and, through `from module import *`, only the names that module
binds. Each case is also run for real (no torch needed): what the program's Python imports is what diagnose names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from compilescope.diagnose import _program_seed
from compilescope.runner import program

PY = sys.executable
# Each helpers.py seeds at another line: the line tells which file diagnose read.
SEEDING_HELPERS = "import random\n{pad}\n\ndef reset(value):\n    random.seed(value)\n"
PROGRAM = "import helpers\nfrom helpers import reset\n\nreset(0)\nprint(helpers.__file__)\nprint(__file__)\n"
SEED_LINES = {"lib": 6, ".": 8, "other": 10}  # helpers.py's folder -> its seeding line


def _tree(tmp_path: Path) -> None:
    """app/prog.py (and lib/libapp/prog.py) imports helpers, which is not beside it: one is in lib, one in the working
    folder, one in other (compilescope's own PYTHONPATH in these tests, which the program's run may not get)."""
    for folder, line in SEED_LINES.items():
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / "helpers.py").write_text(SEEDING_HELPERS.format(pad="\n" * (line - 5)))
    for app in ("app", "lib/libapp"):
        (tmp_path / app).mkdir()
        (tmp_path / app / "prog.py").write_text(PROGRAM)


def _imported_by_python(argv: list[str], cwd: Path) -> tuple[str, int] | None:
    """The helpers.py the command's Python imports (the program prints it), from the program's folder, and its seeding
    line; None where it finds none."""
    run = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=60)
    if run.returncode != 0:
        assert "No module named 'helpers'" in run.stderr, run.stderr
        return None
    helpers, prog = (os.path.realpath(line) for line in run.stdout.splitlines())
    folder = os.path.relpath(os.path.dirname(helpers), os.path.realpath(cwd))
    return os.path.relpath(helpers, os.path.dirname(prog)), SEED_LINES[folder]


@pytest.mark.parametrize("words", [
    ["env", "PYTHONPATH=lib", PY, "app/prog.py"],  # (PYTHONPATH set by the command, not compilescope's)
    ["env", "A=b", "PYTHONPATH=lib", PY, "app/prog.py"],
    ["env", "-i", "PYTHONPATH=lib", PY, "app/prog.py"],
    ["env", "-u", "PYTHONPATH", PY, "app/prog.py"],  # (none at all: not found)
    ["env", "--", "PYTHONPATH=lib", PY, "app/prog.py"],
    ["env", "PYTHONPATH=lib", PY, "-m", "libapp.prog"],  # (its file found on that path, then helpers in the working folder)
    ["env", "PYTHONPATH=lib" + os.pathsep + ".", PY, "-P", "-m", "app.prog"],  # (-P: no working folder first)
    ["env", "PYTHONSAFEPATH=1", "PYTHONPATH=lib" + os.pathsep + ".", PY, "-m", "app.prog"],
    ["env", "PYTHONSAFEPATH=1", "PYTHONPATH=lib" + os.pathsep + ".", PY, "-E", "app/prog.py"],  # (-E ignores both)
    ["env", "PYTHONPATH=lib", PY, "-I", "app/prog.py"],  # (-I: no PYTHONPATH)
    ["env", "PYTHONPATH=lib", PY, "-uE", "app/prog.py"],  # (flags joined)
    ["env", "PYTHONPATH=lib", PY, "-W", "ignore", "-X", "utf8", "app/prog.py"],
])
def test_imports_are_found_where_the_programs_python_finds_them(monkeypatch, tmp_path, words):
    """`diagnose -- env PYTHONPATH=lib python ...` read compilescope's own PYTHONPATH, not the one the command sets,
    and took no interpreter flag into account (-I, -E, -P, PYTHONSAFEPATH): it named a helpers.py the program never
    imports, or none where it does."""
    _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", "other")  # (compilescope's; a stage's run inherits it unless the command says)
    monkeypatch.delenv("PYTHONSAFEPATH", raising=False)
    imported = _imported_by_python(words, tmp_path)
    seed = _program_seed(program(words, is_command=True), str(tmp_path))
    assert seed is not None
    assert ((seed.module, seed.line) if seed.call else None) == imported


STAR_HELPERS = "import random\n{head}\n\ndef {name}(value):\n    print('helpers seeds')\n    random.seed(value)\n"
CALLS_RESET = "from helpers import *\n\nreset(0)\n"
OWN_RESET = "from helpers import *\n\n\ndef reset(value):\n    return value\n\n\nreset(0)\n"


def test_a_bare_call_is_a_star_imported_modules_only_where_the_module_binds_it(tmp_path):
    """With `from helpers import *`, any bare call was taken for helpers': a program's own reset(), or one helpers
    does not export (its __all__ leaves it out, or it is private), was said to seed in helpers.py. Python, running the
    program, says whether helpers' reset runs (it prints so; the others end in NameError or call the program's); one
    it exports (a public function, or listed in __all__) still seeds."""
    public = STAR_HELPERS.format(head="", name="reset")
    for helpers, prog, seeds in (
        (public, OWN_RESET, False),  # (the program's own reset is called)
        (STAR_HELPERS.format(head="__all__ = ['other']\nother = 1", name="reset"), CALLS_RESET, False),  # (not in its __all__)
        (STAR_HELPERS.format(head="", name="_reset"), CALLS_RESET.replace("reset", "_reset"), False),  # (private)
        (public, CALLS_RESET, True),
        (STAR_HELPERS.format(head="__all__ = ['other']\n__all__ += ('reset',)\nother = 1", name="reset"), CALLS_RESET, True),
    ):
        (tmp_path / "helpers.py").write_text(helpers)
        (tmp_path / "prog.py").write_text(prog)
        ran = subprocess.run([PY, "prog.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert ("helpers seeds" in ran.stdout) is seeds, ran.stderr
        assert ran.returncode == 0 or "NameError: name '_reset'" in ran.stderr or "NameError: name 'reset'" in ran.stderr
        seed = _program_seed(program([PY, "prog.py"], is_command=True), str(tmp_path))
        assert seed is not None
        assert (seed.module, seed.call) == (("helpers.py", "random.seed") if seeds else (None, None)), (helpers, prog)


@pytest.mark.parametrize("helpers", [
    "__all__ = [name for name in dir() if name.startswith('re')]\n" + STAR_HELPERS.format(head="", name="reset"),
    "__all__ = ['other']\n__all__.append('reset')\n" + STAR_HELPERS.format(head="", name="reset"),
    "#" * (4 << 20) + "\n" + STAR_HELPERS.format(head="", name="reset"),  # (beyond what diagnose reads of a module)
    STAR_HELPERS.format(head="", name="reset") + "def broken(:\n",  # (no Python: its names cannot be read)
])
def test_a_star_imported_module_whose_names_cannot_be_read_leaves_the_seed_unknown(tmp_path, helpers):
    """Where diagnose cannot read which names helpers binds (a computed __all__, or one added to by a call; a file
    too big; no Python), whether the program's reset() is helpers' is not known: the seed is unknown (as for a file it
    cannot read), not "no seed set in prog.py"."""
    (tmp_path / "helpers.py").write_text(helpers)
    (tmp_path / "prog.py").write_text(CALLS_RESET)
    assert _program_seed(program([PY, "prog.py"], is_command=True), str(tmp_path)) is None


COMPUTED_ALL = STAR_HELPERS.format(head="", name="reset") + "__all__ = [name for name in dir() if name.startswith('re')]\n"
SEEDS_AT_IMPORT = "import random\n\nrandom.seed(0)\n"


@pytest.mark.parametrize("prog", [
    "from helpers import *\nimport utils\n\nreset(0)\n",
    "import utils\nfrom helpers import *\n\nreset(0)\n",
])
def test_a_module_that_seeds_for_certain_is_found_past_one_whose_names_cannot_be_read(tmp_path, prog):
    """The search stopped at the first star-imported module whose names cannot be read (helpers' computed __all__),
    even where another module the program imports seeds for certain (utils, at import): the seed was unknown with
    helpers imported first and found with utils first. Python, running it, seeds in utils either way."""
    (tmp_path / "helpers.py").write_text(COMPUTED_ALL)
    (tmp_path / "utils.py").write_text(SEEDS_AT_IMPORT)
    (tmp_path / "prog.py").write_text(prog)
    assert subprocess.run([PY, "prog.py"], cwd=tmp_path, capture_output=True, timeout=60).returncode == 0
    seed = _program_seed(program([PY, "prog.py"], is_command=True), str(tmp_path))
    assert seed is not None and (seed.module, seed.call, seed.line) == ("utils.py", "random.seed", 3)


def test_a_builtins_call_is_no_name_a_star_import_binds(tmp_path):
    """print(), len(), range() are Python's, not names `from helpers import *` may bind: helpers' unreadable names
    (a computed __all__) leave nothing unknown where the program calls only those, and no module seeds."""
    (tmp_path / "helpers.py").write_text(COMPUTED_ALL.replace("random.seed(value)", "pass"))
    (tmp_path / "prog.py").write_text("from helpers import *\n\nprint(len(range(3)))\n")
    assert subprocess.run([PY, "prog.py"], cwd=tmp_path, capture_output=True, timeout=60).returncode == 0
    seed = _program_seed(program([PY, "prog.py"], is_command=True), str(tmp_path))
    assert seed is not None and (seed.module, seed.call) == (None, None)
