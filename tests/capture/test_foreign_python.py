"""`compilescope diagnose -- python x.py` (and `run`) where that python has no torch: the venv is not activated.

A one-line error before anything runs, naming both interpreters and the fix; not a diagnosis of "not a compile problem".
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest

from .conftest import clean_env, compilescope

pytestmark = pytest.mark.torch  # compilescope's own Python has torch; the other one must not


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> str:
    """A Python without torch: a venv of the test interpreter's base, without pip or system site-packages."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    assert subprocess.run([python, "-c", "import torch"], capture_output=True).returncode == 1
    return str(python)


@pytest.mark.parametrize("command", ["diagnose", "run"])
def test_python_on_path_without_torch_is_refused_before_running(command, bare_python, tmp_path):
    script = tmp_path / "train.py"
    script.write_text("open('ran', 'w').close()\nimport torch\n")
    env = clean_env(PATH=os.path.dirname(bare_python) + os.pathsep + os.environ.get("PATH", ""))
    proc = compilescope(command, "--no-browser", "-o", tmp_path / "out", "--", "python", script, "--lr", "3",  # PATH on purpose
                        cwd=tmp_path, env=env)
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    suggested = shlex.join(["compilescope", command, "--no-browser", "-o", str(tmp_path / "out"), str(script), "--lr", "3"])
    assert line == (
        f"compilescope: error: python ({bare_python}) cannot import torch: it is not the Python compilescope runs in "
        f"({sys.executable}); let compilescope's Python run the program: {suggested} "
        "(or activate the environment compilescope is installed in)"
    )
    assert not (tmp_path / "ran").exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize("program, suggested", [
    (["-c", "import sys; sys.exit(3)"], ["--", sys.executable, "-c", "import sys; sys.exit(3)"]),  # run has no -c
    (["-u", "exits_3.py"], ["--", sys.executable, "-u", "exits_3.py"]),  # nor interpreter flags
    (["-m", "exits_3"], ["-m", "exits_3"]),
])
def test_the_command_suggested_instead_runs_as_printed(program, suggested, bare_python, tmp_path):
    (tmp_path / "exits_3.py").write_text("import sys\nsys.exit(3)\n")
    env = clean_env(PATH=os.path.dirname(bare_python) + os.pathsep + os.environ.get("PATH", ""))
    proc = compilescope("run", "--no-browser", "--", "python", *program, cwd=tmp_path, env=env)  # PATH on purpose
    assert proc.returncode == 2
    printed = proc.stderr.split("let compilescope's Python run the program: ")[1].split(" (or activate")[0]
    assert printed == shlex.join(["compilescope", "run", "--no-browser", *suggested])
    again = compilescope(*shlex.split(printed)[1:], cwd=tmp_path, env=env)
    assert "cannot import torch" not in again.stderr
    assert again.returncode == 3, again.stderr  # the program ran, with compilescope's Python, and its status came back


def test_a_python_with_torch_is_not_refused(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import sys\nsys.exit(0)\n")
    proc = compilescope("run", "--no-browser", "-o", tmp_path / "out", "--", sys.executable, script, cwd=tmp_path)
    assert "cannot import torch" not in proc.stderr
    assert "wrote no TORCH_TRACE log" in proc.stderr  # it ran (and compiled nothing)
