"""runner._LogOwners looks at the trace directory every 0.1 s while a program runs. A new log it cannot place yet is
read again only once it has grown, and a log whose first record it has read is not read again: counted here as
reads of a real small log (tests/data/torch213 `cache_warm.log`) written into the directory in pieces, not timed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from compilescope import runner
from compilescope.ingest.discover import TORCH_LOG_NAME

LOG = Path(__file__).parent.parent / "data" / "torch213" / "logs" / "cache_warm.log"


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The logs whose head _LogOwners read (runner.first_pid's calls), in order."""
    read: list[str] = []
    first_pid = runner.first_pid

    def counted(log: str) -> int | None:
        read.append(os.path.basename(log))
        return first_pid(log)

    monkeypatch.setattr(runner, "first_pid", counted)
    return read


def test_a_log_is_read_once_per_size_until_placed(tmp_path: Path, reads: list[str]) -> None:
    data = LOG.read_bytes()
    first_record = data.index(b"\n") + 1
    # (a program that has ended: the log's pid, another process's, is never its descendant, so the log is never
    # told apart while it runs and every look meets it)
    program = subprocess.Popen([sys.executable, "-c", "pass"])
    program.wait()
    owners = runner._LogOwners(str(tmp_path), set(), program)
    name = f"{TORCH_LOG_NAME}_1234_0.log"
    log = tmp_path / name
    log.write_bytes(b"")
    for _ in range(3):
        owners.look()
    assert reads == [name]  # empty: read once, not again while it stays empty
    log.write_bytes(data[:20])  # part of the first record's prefix: no pid yet
    for _ in range(3):
        owners.look()
    assert reads == [name] * 2
    with open(log, "ab") as f:
        f.write(data[20:first_record + 100])  # the first record whole: its pid is there
    for _ in range(3):
        owners.look()
    assert reads == [name] * 3
    with open(log, "ab") as f:
        f.write(data[first_record + 100:])  # the rest: its first record's pid is known and is not read again
    for _ in range(3):
        owners.look()
    assert reads == [name] * 3
    # After the program: the pid read while it ran says whose the log is, without reading it again.
    assert owners.ours([str(log)]) == [str(log)]
    assert reads == [name] * 3
