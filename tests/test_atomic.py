"""hogwild.atomic: the one writer of checkpoints, models and labels (issue 16,
item 6: model files and labels were written in place, so a full disk or a crash
left them truncated)."""
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
    path = tmp_path / "model.npz"
    (tmp_path / ".model.npz.0123456789abcdef.tmp").write_bytes(b"half a model")
    with atomic_file(path) as f:
        f.write(b"whole")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.npz"]


def test_unwritable_targets_are_one_line_errors(tmp_path):
    with pytest.raises(HogwildError, match="it exists and is not a regular file"):
        with atomic_file(tmp_path) as f:
            f.write(b"x")
    with pytest.raises(HogwildError, match=r"cannot write .*missing/m.npz: No such file"):
        with atomic_file(tmp_path / "missing" / "m.npz") as f:
            f.write(b"x")
