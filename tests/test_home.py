"""Nothing is written at import time or outside the output directory; the CLI's template cache is keyed and owned."""

from __future__ import annotations

import io
import marshal
import os
import pickle
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from jinja2.bccache import bc_magic

from compilescope.cli import compiled_cache, template_cache
from compilescope.render.html import env as html_env

from .conftest import REPO, peer, run_cli, torch213

pytestmark = pytest.mark.usefixtures("empty_home")


@pytest.fixture
def empty_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(html_env.ENV, "bytecode_cache", None)
    return home


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_importing_everything_writes_nothing(empty_home, tmp_path):
    code = ("import compilescope, compilescope.cli, compilescope.render.html, compilescope.api, compilescope.log_job;"
            "from compilescope.cli import report, batch, multirank, summary")
    env = {**os.environ, "HOME": str(empty_home), "COMPILESCOPE_TEMPLATE_CACHE": ""}
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path, env=env)
    assert _files(empty_home) == []


def test_a_process_importing_the_fixtures_leaves_nothing_in_the_temp_dir(empty_home, tmp_path):
    """A process the suite starts that imports tests/conftest.py (a spawned pool or dask worker unpickling a test's
    function) ends with os._exit, which runs no atexit handler: whatever it made in the temp dir would stay there."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "HOME": str(empty_home), "TMPDIR": str(temp)}
    subprocess.run([sys.executable, "-c", "import os, tests.conftest; os._exit(0)"], check=True, cwd=REPO, env=env)
    assert _files(temp) == []
    assert _files(empty_home) == []


def test_representative_commands_leave_home_empty(empty_home, tmp_path):
    log = torch213("graph_breaks.log")
    assert run_cli(log, "-o", tmp_path / "one", "--no-browser") == 0
    assert run_cli(log, torch213("recompiles.log"), "-o", tmp_path / "batch", "--no-browser", "-j", "1") == 0
    assert run_cli(peer("multi_rank_logs"), "-o", tmp_path / "ranks", "--no-browser", "-j", "1") == 0
    assert run_cli("summary", log) == 0
    assert run_cli("summary", "--json", log) == 0
    import compilescope

    compilescope.report(log, out=tmp_path / "api")
    with compilescope.load(log):
        pass
    assert _files(empty_home) == []


def test_the_cli_keeps_compiled_templates_only_where_it_was_told(empty_home, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("COMPILESCOPE_TEMPLATE_CACHE", str(cache))
    html_env.ENV.cache.clear()  # compiled already in this process: not read from the cache at all
    assert run_cli(torch213("graph_breaks.log"), "-o", tmp_path / "out", "--no-browser") == 0
    directory, records = sorted(cache.iterdir(), key=lambda p: p.name, reverse=True)
    assert directory.name == f"templates-{html_env.template_cache_key()}"
    assert any(directory.iterdir())  # compiled templates
    assert oct(directory.stat().st_mode & 0o777) == oct(0o700)
    assert records.name == f"records-{sys.implementation.cache_tag}.bin"  # the records' __init__ templates
    assert oct(records.stat().st_mode & 0o777) == oct(0o600)
    assert _files(empty_home) == []


def test_each_command_in_a_fresh_process_keeps_its_caches_with_the_html_environment_imported_late(empty_home, tmp_path):
    """The CLI's template cache is turned on when the HTML environment is first imported (cache_dir's hook), after
    the command started: summary and check import no Jinja and keep only the records' templates; a report fills the
    template cache. In a fresh process each, as a user runs them (the suite's own process has imported everything)."""
    log = torch213("graph_breaks.log")
    cache = tmp_path / "cache"
    env = {**os.environ, "HOME": str(empty_home), "COMPILESCOPE_TEMPLATE_CACHE": str(cache)}

    def run(*args: object) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "compilescope", *map(str, args)], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)

    for command in (("summary", log), ("check", log)):
        done = run(*command)
        assert (done.returncode, done.stderr) == (0, ""), command
        assert [p.name for p in cache.iterdir()] == [f"records-{sys.implementation.cache_tag}.bin"]  # no Jinja
    done = run(log, "-o", tmp_path / "out", "--no-browser")
    assert (done.returncode, done.stderr) == (0, "")
    templates = cache / f"templates-{html_env.template_cache_key()}"
    assert any(templates.iterdir())
    assert run("summary", log).returncode == 0 and run(log, "-o", tmp_path / "again", "--no-browser").returncode == 0


def test_the_cache_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPILESCOPE_TEMPLATE_CACHE", "0")
    assert template_cache.enable_template_cache(str(tmp_path / "c")) is None
    assert not (tmp_path / "c").exists()


def test_the_cache_key_follows_settings_and_sources(monkeypatch):
    key = html_env.template_cache_key()
    assert html_env.template_cache_key() == key
    real_stat = os.stat

    def edited(path, *args, **kwargs):  # index.html as it is after an edit (a new modification time)
        st = real_stat(path, *args, **kwargs)
        if str(path).endswith("index.html"):
            return SimpleNamespace(st_size=st.st_size, st_mtime_ns=st.st_mtime_ns + 1)
        return st

    monkeypatch.setattr(html_env.os, "stat", edited)
    assert html_env.template_cache_key() != key  # an edited template starts a new key
    monkeypatch.setattr(html_env.os, "stat", real_stat)
    monkeypatch.setitem(html_env.ENV_SETTINGS, "autoescape", False)
    assert html_env.template_cache_key() != key  # autoescape off must never load autoescaped bytecode, nor the reverse


def test_a_cache_others_may_write_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPILESCOPE_TEMPLATE_CACHE", "")
    base = tmp_path / "shared"
    directory = base / f"templates-{html_env.template_cache_key()}"
    directory.mkdir(parents=True)
    directory.chmod(0o777)
    assert template_cache.enable_template_cache(str(base)) is None
    directory.chmod(0o700)
    assert template_cache.enable_template_cache(str(base)) == str(directory)
    # an entry someone else could have written is not loaded
    monkeypatch.setattr(html_env.ENV, "cache", None)
    html_env.ENV.get_template("index.html")
    [entry] = [p for p in directory.iterdir()]
    compiled = []  # a template whose entry is not loaded is compiled again
    original = html_env.ENV.compile
    monkeypatch.setattr(html_env.ENV, "compile", lambda *a, **k: compiled.append(a[1]) or original(*a, **k))
    html_env.ENV.get_template("index.html")
    assert compiled == []  # this user's own entry is loaded
    entry.chmod(0o666)
    html_env.ENV.get_template("index.html")
    assert compiled == ["index.html"]
    # nor one reached through a link (the file checked must be the file read)
    entry.chmod(0o600)
    target = tmp_path / "elsewhere"
    entry.rename(target)
    entry.symlink_to(target)
    html_env.ENV.get_template("index.html")
    assert compiled == ["index.html"] * 2


def test_a_cache_entry_that_is_cut_or_stale_is_compiled_again(tmp_path, monkeypatch, capsys):
    """The entry is read as Jinja reads it (its magic, its template's checksum, then the code), from the file's bytes:
    an intact entry is used as it is; any other is compiled again, never an error."""
    monkeypatch.setenv("COMPILESCOPE_TEMPLATE_CACHE", "")
    directory = template_cache.enable_template_cache(str(tmp_path / "cache"))
    assert directory is not None
    monkeypatch.setattr(html_env.ENV, "cache", None)
    page = html_env.ENV.get_template("guards.html").render(c=None, guards=[], guard_tree=None, root="../")
    cache = html_env.ENV.bytecode_cache
    source, filename, _ = html_env.ENV.loader.get_source(html_env.ENV, "guards.html")
    entry = cache._get_cache_filename(cache.get_bucket(html_env.ENV, "guards.html", filename, source))
    with open(entry, "rb") as f:
        whole = f.read()
    head = io.BytesIO(whole)
    head.seek(len(bc_magic))
    checksum = pickle.load(head)
    code_at = head.tell()
    assert whole[len(bc_magic):code_at] == pickle.dumps(checksum, 2)  # the head Jinja writes, matched byte for byte
    compiled = []
    original = html_env.ENV.compile
    monkeypatch.setattr(html_env.ENV, "compile", lambda *a, **k: compiled.append(a[1]) or original(*a, **k))
    assert html_env.ENV.get_template("guards.html").render(c=None, guards=[], guard_tree=None, root="../") == page
    assert compiled == []
    damaged = {
        "cut in its code": whole[:code_at + (len(whole) - code_at) // 2],
        "stale (another source's checksum)": whole.replace(checksum.encode(), b"0" * len(checksum), 1),
        "no pickle where the checksum goes": whole[:len(bc_magic)] + b"\xff" * 8 + whole[code_at:],
        "another Jinja's magic": b"j2" + whole[2:len(bc_magic)].replace(whole[2:3], b"\x00", 1) + whole[len(bc_magic):],
        "empty": b"",
        # what follows the magic is never unpickled: these three crashed the report or ran code before
        "a pickle of a module that does not exist": whole[:len(bc_magic)] + b"cno_such_module_xyz\nx\n.",
        "a pickle that calls print": whole[:len(bc_magic)] + b"cbuiltins\nprint\n(S'PWNED'\ntR." + whole[code_at:],
        "the right checksum, then no code object": whole[:code_at] + marshal.dumps(5),
    }
    for what, data in damaged.items():
        with open(entry, "wb") as f:
            f.write(data)
        compiled.clear()
        assert html_env.ENV.get_template("guards.html").render(c=None, guards=[], guard_tree=None, root="../") == page, what
        assert compiled == ["guards.html"], what
    assert "PWNED" not in capsys.readouterr().out


def test_a_cache_that_cannot_be_written_never_fails_a_report(empty_home, tmp_path, monkeypatch):
    """The cache directory was writable when checked, then a write fails (a full disk, a quota): the report is
    written all the same, only without keeping its compiled templates."""
    import errno

    import jinja2.bccache

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setenv("COMPILESCOPE_TEMPLATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(jinja2.bccache.tempfile, "NamedTemporaryFile", full_disk)
    html_env.ENV.cache.clear()  # compiled already in this process: compiled (and kept) again
    assert run_cli(torch213("graph_breaks.log"), "-o", tmp_path / "out", "--no-browser") == 0
    assert (tmp_path / "out" / "index.html").is_file()
    [directory] = (tmp_path / "cache").glob("templates-*")
    assert list(directory.iterdir()) == []


def test_a_new_cache_key_removes_this_users_caches_unused_for_a_day(tmp_path, monkeypatch):
    """Each change of templates or version starts a new templates-<key> directory: the old ones (about 2 MB each)
    go once nobody wrote them for a day. A recent one (another version still in use) stays, and so does
    anything else: other names, and links (never followed, so their targets stay too)."""
    monkeypatch.setenv("COMPILESCOPE_TEMPLATE_CACHE", "")
    base = tmp_path / "cache"
    day_ago = os.stat(tmp_path).st_mtime - template_cache.STALE_TEMPLATE_CACHE_S - 60
    old, recent, other = base / "templates-0000000000000000", base / "templates-1111111111111111", base / "keep-me"
    target = tmp_path / "target"
    for directory in (old, recent, other, target):
        directory.mkdir(parents=True)
        (directory / "entry").write_bytes(b"x")
    link = base / "templates-2222222222222222"
    link.symlink_to(target)
    for directory in (old, other, target):
        os.utime(directory, (day_ago, day_ago))
    os.utime(link, (day_ago, day_ago), follow_symlinks=False)

    directory = template_cache.enable_template_cache(str(base))
    assert sorted(p.name for p in base.iterdir()) == sorted([os.path.basename(directory), recent.name, other.name,
                                                             link.name])
    assert (target / "entry").is_file()
    # the key's directory exists now: later runs prune nothing
    old.mkdir()
    os.utime(old, (day_ago, day_ago))
    assert template_cache.enable_template_cache(str(base)) == directory
    assert old.is_dir()


def test_pruning_that_fails_never_fails_a_report(tmp_path, monkeypatch):
    import shutil

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setenv("COMPILESCOPE_TEMPLATE_CACHE", "")
    old = tmp_path / "cache" / "templates-0000000000000000"
    old.mkdir(parents=True)
    os.utime(old, (0, 0))
    monkeypatch.setattr(shutil, "rmtree", refused)
    directory = template_cache.enable_template_cache(str(tmp_path / "cache"))
    assert directory is not None and os.path.isdir(directory)
    assert old.is_dir()


def _records_compiled_by_a_report(log, out, cache) -> int:
    """How many records' __init__ templates a CLI report in a new interpreter compiled (not read from the cache)."""
    code = ("import sys; from compilescope.cli import main; from compilescope.model import records; "
            f"rc = main([{str(log)!r}, '-o', {str(out)!r}, '--no-browser', '--overwrite']); "
            "print(rc, len(records._COMPILED), records.compiled_in_this_process)")
    env = {**os.environ, "COMPILESCOPE_TEMPLATE_CACHE": str(cache)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    rc, templates, compiled = map(int, proc.stdout.split()[-3:])
    assert rc == 0 and templates > 20
    return compiled


def test_the_cli_keeps_the_records_init_templates_and_the_next_run_reads_them(tmp_path):
    """model/records compiles one __init__ template per shape of class (~25M instructions of a small report's
    start-up): the first CLI run keeps them (owner-only), the next one reads them and compiles none."""
    log, cache = torch213("compile_error_lowering.log"), tmp_path / "cache"
    assert _records_compiled_by_a_report(log, tmp_path / "one", cache) > 20
    [kept] = cache.glob("records-*.bin")
    assert oct(kept.stat().st_mode & 0o777) == oct(0o600)
    assert _records_compiled_by_a_report(log, tmp_path / "two", cache) == 0
    assert (tmp_path / "one" / "index.html").read_bytes() == (tmp_path / "two" / "index.html").read_bytes()


def test_a_records_template_file_that_is_not_this_users_own_or_broken_is_not_read(tmp_path, monkeypatch):
    from compilescope.model import records

    path = tmp_path / "records.bin"
    monkeypatch.setattr(records, "_compiled_here", list(records._COMPILED))  # (as if all compiled here)
    compiled_cache.keep_record_templates(str(path))
    good = path.read_bytes()

    def read() -> int:
        monkeypatch.setattr(records, "_COMPILED", {})
        records.read_kept_templates(str(path))
        return len(records._COMPILED)

    assert read() > 20
    path.chmod(0o666)  # others may write it
    assert read() == 0
    path.chmod(0o600)
    target = tmp_path / "elsewhere"  # through a link
    path.rename(target)
    path.symlink_to(target)
    assert read() == 0
    path.unlink()
    for broken in (good[:-100], b"", good.replace(b"compilescope records", b"compilescope rekords"), good[:30] + b"x" * 99):
        path.write_bytes(broken)
        path.chmod(0o600)
        assert read() == 0, broken[:40]
