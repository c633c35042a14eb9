"""hogwild.atomic: the one writer of checkpoints, models and labels (issue 16,
item 6: model files and labels were written in place, so a full disk or a crash
left them truncated; issue 28: two writers of one path deleted each other's
temporary files)."""
import os
import subprocess
import sys
import threading

import pytest

from hogwild import HogwildError
from hogwild.atomic import atomic_file


def test_a_failed_write_leaves_the_previous_file_and_no_temporary(tmp_path):
    path = tmp_path / "labels.txt"
    with atomic_file(path, "w") as f:
        f.write("0 1\n1 0\n")
    with pytest.raises(RuntimeError, match="disk full"):
        with atomic_file(path, "w") as f:
            f.write("0 0\n")
            raise RuntimeError("disk full")  # as if the writer died half-way
    assert path.read_text() == "0 1\n1 0\n"
    assert [p.name for p in tmp_path.iterdir()] == ["labels.txt"]


def test_a_killed_writers_temporary_is_removed_by_the_next_write(tmp_path):
    """Temporary files carry their writer's pid: a dead writer's goes, a live one's
    (another run writing the same path right now) stays."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    path = tmp_path / "model.npz"
    (tmp_path / f".model.npz.{dead}-0123456789abcdef.tmp").write_bytes(b"half a model")
    live = tmp_path / f".model.npz.{os.getppid()}-0123456789abcdef.tmp"
    live.write_bytes(b"another run's model, being written")
    with atomic_file(path) as f:
        f.write(b"whole")
    assert sorted(p.name for p in tmp_path.iterdir()) == [live.name, "model.npz"]


def test_concurrent_writers_of_one_path_all_finish_and_the_last_rename_wins(tmp_path):
    """Issue 28: 180 of 600 writes failed when each writer removed the other's
    temporary file as stale. Four threads write 150 times each: none fails, the
    file is always one writer's whole content, and no temporary is left."""
    path, failures = tmp_path / "run.npz", []

    def write(writer):
        for k in range(150):
            try:
                with atomic_file(path) as f:
                    f.write(f"writer {writer} write {k}".encode() * 1000)
            except Exception as exc:  # noqa: BLE001 - counted
                failures.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    content = path.read_bytes()
    assert content == content[:len(content) // 1000] * 1000  # one whole write
    assert [p.name for p in tmp_path.iterdir()] == ["run.npz"]


def test_unwritable_targets_are_one_line_errors(tmp_path):
    with pytest.raises(HogwildError, match="it exists and is not a regular file"):
        with atomic_file(tmp_path) as f:
            f.write(b"x")
    with pytest.raises(HogwildError, match=r"cannot write .*missing/m.npz: No such file"):
        with atomic_file(tmp_path / "missing" / "m.npz") as f:
            f.write(b"x")
