"""Issue 28: the faults and inputs an audit of 626 bad inputs found unhandled, each
with the exact message it now gets (the MPI cases are in test_mpi.py).

Files that block or never end, cache folders others control, damaged caches, a
full cache disk, edited checkpoints, concurrent writers (test_atomic.py), inputs
that crashed compiled code or were silently accepted, and limits."""
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from hogwild import HogwildError, Objective, fit
from hogwild.checkpoint import KEY_VARIABLE, header_digest, load_checkpoint
from hogwild.cli import main
from hogwild.datasets.svmlight import load_svmlight
from hogwild.limits import size_text
from hogwild.structure import IdArray
from hogwild.cli.ranks import child_pids
from test_checkpoint import pair_objective
from test_processes import pid_running

HOGWILD = [sys.executable, "-m", "hogwild.cli"]


def run(capsys, *argv):
    status = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return status, out, err


def cli(*argv, env=None, timeout=120, cwd=None):
    """``hogwild ARGV`` in a fresh process (for what a process does once: warnings,
    caches): (status, stdout, stderr)."""
    done = subprocess.run(HOGWILD + [str(arg) for arg in argv], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, **(env or {})})
    return done.returncode, done.stdout, done.stderr


def one_line_error(err, message):
    assert err == f"hogwild: error: {message}\n", err


# --- files that would block for ever or never end ------------------------------------

@pytest.mark.parametrize("argv", [
    ["run", "mc", "--data", "{fifo}"],
    ["run", "mc", "--data", "jumbo:50x40x400", "--test", "{fifo}"],
    ["run", "svm", "--data", "{fifo}"],
    ["run", "svm", "--test", "{fifo}"],
    ["run", "cuts", "--data", "{fifo}"],
    ["run", "svm", "--resume", "{fifo}"],
    ["stats", "svm", "--data", "{fifo}"],
])
def test_a_fifo_is_refused_at_once(capsys, tmp_path, argv):
    """A FIFO given as data used to block the run for ever."""
    fifo = tmp_path / "ratings.txt"
    os.mkfifo(fifo)
    argv = [str(fifo) if arg == "{fifo}" else arg for arg in argv]
    started = time.monotonic()
    status, out, err = run(capsys, *argv, *(["--epochs", "1"] if argv[0] == "run" else []))
    assert time.monotonic() - started < 60
    assert status == 2
    if "jumbo:50x40x400" in argv:  # jumbo data brings its own test set
        one_line_error(err, f"--test {fifo}: jumbo:50x40x400 brings its own test ratings "
                            "(drawn like its training ratings); leave --test out")
    else:
        one_line_error(err, f"cannot read {fifo}: it is a FIFO (named pipe), not a regular "
                            "file")


def test_devices_and_images_that_are_not_files_are_refused(capsys, tmp_path):
    status, _, err = run(capsys, "run", "svm", "--data", "/dev/zero", "--epochs", "1")
    one_line_error(err, "cannot read /dev/zero: it is a character device, not a regular file")
    fifo = tmp_path / "photo.png"
    os.mkfifo(fifo)
    status, _, err = run(capsys, "run", "cuts", "--data", fifo, "--epochs", "1")
    assert status == 2
    one_line_error(err, f"cannot read image {fifo}: it is a FIFO (named pipe), not a regular "
                        "file")


def test_an_output_path_that_is_a_device_is_refused_before_training(capsys):
    """--save /dev/full was refused only after training."""
    started = time.monotonic()
    status, out, err = run(capsys, "run", "svm", "--save", "/dev/full", "--epochs", "200")
    assert status == 2 and out == "" and time.monotonic() - started < 30
    one_line_error(err, "--save /dev/full: it is a character device, not a regular file; give "
                        "a file path")


def test_a_decompression_bomb_is_refused_as_it_inflates(tmp_path, monkeypatch):
    import gzip

    from hogwild.datasets import ingest

    bomb = tmp_path / "bomb.svm.gz"
    bomb.write_bytes(gzip.compress(b"1 1:1\n" * 2_000_000))  # 12 MB from 30 KB
    monkeypatch.setattr(ingest, "available_memory", lambda: 4 << 20)
    with pytest.raises(HogwildError) as error:
        load_svmlight(bomb, cache=False)
    assert str(error.value) == (f"cannot read {bomb}: what it holds passes the "
                                f"{size_text(4 << 20)} of memory available (with a binary "
                                "cache folder, HOGWILD_CACHE_DIR, it would be kept on disk)")


# --- the Ray address -------------------------------------------------------------------

@pytest.mark.parametrize("address", ["x:y:z", "127.0.0.1", "localhost:99999", "auto"])
def test_a_malformed_ray_address_is_one_line(capsys, address):
    """x:y:z gave a ValueError traceback."""
    status, _, err = run(capsys, "run", "svm", "--backend", "ray", "--ray-address", address,
                         "--epochs", "1")
    assert status == 2
    one_line_error(err, f"Ray address {address!r}: expected HOST:PORT (the head's address, "
                        "e.g. 10.0.0.5:6379) or ray://HOST:PORT, with a port from 1 to 65535")


def test_a_ray_address_where_nothing_listens_fails_within_seconds():
    """127.0.0.1:1 blocked for 821 s, then printed a ConnectionError traceback."""
    pytest.importorskip("ray", reason="backend 'ray' needs Ray")
    started = time.monotonic()
    status, _, err = cli("run", "svm", "--backend", "ray", "--ray-address", "127.0.0.1:1",
                         "--epochs", "1", env={"RAY_AUTH_TOKEN": "t" * 32})
    assert time.monotonic() - started < 60
    assert status == 2
    one_line_error(err, "cannot reach the Ray cluster at 127.0.0.1:1 (Connection refused, "
                        "within 10 s): is Ray running there ('ray start --head')?")


# --- caches others control, damaged caches, a full cache disk --------------------------

def planted_cache(tmp_path):
    """(data file, cache folder) where the file's own cache entry was replaced by
    another file's, 200 x 2 instead of 200 x 49, with consistent checksums: what a
    user who can write the cache folder could plant."""
    data, planted = tmp_path / "data.svm", tmp_path / "planted.svm"
    data.write_text("".join(f"{1 if i % 2 else -1} " + " ".join(
        f"{j + 1}:{(i * j) % 7 + 1}" for j in range(49)) + "\n" for i in range(200)))
    planted.write_text("".join(f"{1 if i % 2 else -1} 1:1 2:{i}\n" for i in range(200)))
    cache = tmp_path / "cache"
    env = {"HOGWILD_CACHE_DIR": str(cache)}
    assert cli("run", "svm", "--data", data, "--epochs", "1", env=env)[0] == 0
    (entry,) = (cache / "datasets").iterdir()
    assert cli("run", "svm", "--data", planted, "--epochs", "1", env=env)[0] == 0
    (other,) = set((cache / "datasets").iterdir()) - {entry}
    shutil.rmtree(entry)
    other.rename(entry)
    return data, cache


@pytest.mark.parametrize("kind", ["writable by others", "another user's"])
def test_a_dataset_cache_that_others_control_is_not_used(tmp_path, kind):
    """A planted entry in a cache folder owned by another user (mode 0777) was used:
    the run trained on 200 x 2 data instead of the file's 200 x 49, exit 0. In the
    user's own folder the planted entry is used (it is consistent): the trust rule
    is what keeps others out."""
    if kind == "another user's" and os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    data, cache = planted_cache(tmp_path)
    env = {"HOGWILD_CACHE_DIR": str(cache)}
    status, out, _ = cli("run", "svm", "--data", data, "--epochs", "1", "--json", env=env)
    assert status == 0 and json.loads(out)["n_features"] == 2  # the plant works here
    for folder in (cache, cache / "datasets"):
        if kind == "writable by others":
            folder.chmod(0o777)
        else:
            os.chown(folder, 12345, -1)
    status, out, err = cli("run", "svm", "--data", data, "--epochs", "1", "--json", env=env)
    assert status == 0, err
    assert json.loads(out)["n_features"] == 49  # the file's, not the planted entry's
    whose = "writable by other users (mode 777)" if kind == "writable by others" \
        else "owned by another user"
    assert (f"hogwild: warning: cache folder {cache} is {whose}: hogwild runs the code and "
            "reads the data it caches there, so it does not use it; make it yours with mode "
            "0700, or set HOGWILD_CACHE_DIR to a private folder\n") in err


def test_a_damaged_cache_entry_is_parsed_again_and_repaired(tmp_path):
    """A damaged entry (truncated, a file missing, a flipped value) gave
    FileNotFoundError or mmap-length errors on every run: it is parsed again, with
    a warning, and repaired for the next run."""
    data = tmp_path / "data.svm"
    data.write_text("".join(f"{1 if i % 2 else -1} {1 + i % 5}:1 7:0.5\n" for i in range(300)))
    cache = tmp_path / "cache"
    env = {"HOGWILD_CACHE_DIR": str(cache)}
    assert cli("run", "svm", "--data", data, "--epochs", "1", env=env)[0] == 0
    (entry,) = (cache / "datasets").iterdir()
    os.truncate(entry / "indices.npy", 100)
    (entry / "labels.npy").unlink()
    status, out, err = cli("run", "svm", "--data", data, "--epochs", "1", "--json", env=env)
    assert status == 0, err
    assert json.loads(out)["n_features"] == 7
    assert (f"hogwild: warning: the binary cache of {data} in {entry} is damaged: indices.npy "
            "cannot be read (ValueError); parsing the file again\n") in err
    status, _, err = cli("run", "svm", "--data", data, "--epochs", "1", env=env)
    assert status == 0 and "warning" not in err  # repaired
    values = np.load(entry / "values.npy", mmap_mode="r+")
    values[0] = 99.0  # a flipped value, the file's size unchanged
    values.flush()
    del values
    status, _, err = cli("run", "svm", "--data", data, "--epochs", "1", env=env)
    assert status == 0
    assert ("is damaged: values.npy does not match the checksum and shape recorded for it; "
            "parsing the file again") in err


@pytest.mark.parametrize("name", ["train_values.npy", "info.json", "."])
def test_a_fifo_planted_in_a_cache_entry_is_damage_not_a_hang(tmp_path, monkeypatch, name):
    """A FIFO in a cache entry, or in place of the entry's folder ("."): the run
    warned that the entry was damaged, then blocked for ever opening it."""
    from hogwild.datasets.jumbo import make_jumbo

    monkeypatch.setenv("HOGWILD_CACHE_DIR", str(tmp_path))
    train, test, _ = make_jumbo(60, 40, 3000, rank=2)
    want, folder = np.array(train.values), Path(train.source)
    del train, test
    planted = (folder / name).resolve()
    shutil.rmtree(planted) if planted.is_dir() else planted.unlink()
    os.mkfifo(planted)
    damage = r"its header info.json cannot be read \(NotADirectoryError\)" if name == "." \
        else rf"(its header )?{re.escape(name)} is a FIFO \(named pipe\), not a regular file"
    with pytest.warns(UserWarning, match=rf"the Jumbo matrix cached in .* is damaged: "
                                         rf"{damage}; making it again"):
        again, _, _ = make_jumbo(60, 40, 3000, rank=2)
    np.testing.assert_array_equal(again.values, want)


def test_a_damaged_jumbo_matrix_is_made_again(tmp_path, monkeypatch):
    from hogwild.datasets.jumbo import make_jumbo

    monkeypatch.setenv("HOGWILD_CACHE_DIR", str(tmp_path))
    train, test, _ = make_jumbo(60, 40, 3000, rank=2)
    want = np.array(train.values)
    folder = Path(train.source)
    del train, test
    os.truncate(folder / "train_values.npy", 200)
    with pytest.warns(UserWarning, match=r"the Jumbo matrix cached in .* is damaged: "
                                         r"train_values.npy cannot be read \(ValueError\); "
                                         r"making it again"):
        again, _, _ = make_jumbo(60, 40, 3000, rank=2)
    np.testing.assert_array_equal(again.values, want)


def test_a_damaged_download_names_the_command_that_repairs_it(tmp_path, monkeypatch):
    from hogwild.datasets.registry import RATINGS_DATASETS, load_ratings

    monkeypatch.setenv("HOGWILD_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("HOGWILD_DATA", str(tmp_path / "no-shared-data"))
    spec = RATINGS_DATASETS["ml-latest-small"]
    path = spec.downloaded_path()
    path.parent.mkdir(parents=True, mode=0o700)
    for folder in (tmp_path, tmp_path / "downloads"):
        folder.chmod(0o700)
    path.write_text("userId,movieId,rating\n1,2,3.5\n2,3,4\n")
    with pytest.raises(HogwildError) as error:  # no record of what was extracted
        load_ratings("ml-latest-small")
    assert str(error.value) == (f"the downloaded {path} is damaged (it does not match the size "
                                "and checksum recorded at download); run 'hogwild download "
                                "ml-latest-small' again")


def test_a_full_cache_disk_costs_the_cache_not_the_run(tmp_path, monkeypatch):
    """Every run failed with OSError: [Errno 28] when the cache folder's disk was
    full. Here every write under the cache folder fails so: the run completes,
    with a warning per cache, and parses and compiles what it cannot keep."""
    script = tmp_path / "full.py"
    script.write_text(
        "import builtins, errno, os, sys\n"
        "cache = os.environ['HOGWILD_CACHE_DIR']\n"
        "real_open, real_os_open = builtins.open, os.open\n"
        "def full(path):\n"
        "    return str(path).startswith(cache)\n"
        "def open_(file, mode='r', *a, **k):\n"
        "    if full(file) and any(c in mode for c in 'wax+'):\n"
        "        raise OSError(errno.ENOSPC, 'No space left on device')\n"
        "    return real_open(file, mode, *a, **k)\n"
        "def os_open(path, flags, *a, **k):\n"
        "    if full(path) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):\n"
        "        raise OSError(errno.ENOSPC, 'No space left on device')\n"
        "    return real_os_open(path, flags, *a, **k)\n"
        "builtins.open, os.open = open_, os_open\n"
        "from hogwild.cli import main\n"
        "sys.exit(main(['run', 'svm', '--epochs', '1', '--json']))\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "HOGWILD_CACHE_DIR": str(tmp_path / "c")})
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["epochs"] == 1
    assert "No space left on device" in done.stderr and "Traceback" not in done.stderr


# --- edited checkpoints ------------------------------------------------------------------

def edited(path, change, resign=False):
    """Rewrite a checkpoint with ``change(header, arrays)`` applied; ``resign``: with
    a new plain digest (what someone who knows the format can do)."""
    with np.load(path) as archive:
        arrays = dict(archive)
    header = json.loads(arrays.pop("header").tobytes())
    change(header, arrays)
    if resign:
        header["digest"] = header_digest(header, None)
    np.savez(path, **arrays, header=np.frombuffer(json.dumps(header).encode(), np.uint8))


def set_field(name, value):
    return lambda header, arrays: header.__setitem__(name, value)


def other_weights(header, arrays):
    """Weights changed, their own digest recomputed: only the header's digest tells."""
    import hashlib
    arrays["param_0"] = arrays["param_0"] + 1.0
    header["digests"]["param_0"] = hashlib.sha256(arrays["param_0"].tobytes()).hexdigest()


@pytest.mark.parametrize("change", [
    set_field("settings", {}),
    set_field("history", []),
    set_field("step", 0.5),
    lambda header, arrays: header["rng_state"]["state"].__setitem__("state", 12345),
    other_weights,
], ids=["settings", "history", "step", "rng_state", "weights"])
def test_an_edited_checkpoint_is_refused(tmp_path, change):
    """'settings': {} turned the resume's checks off; an edited history, generator
    state or weights (their digests recomputed) resumed to another result."""
    path = tmp_path / "run.npz"
    options = dict(step=0.3, scheduler="serial", seed=1)
    fit(pair_objective(), epochs=2, checkpoint=path, **options)
    edited(path, change)
    with pytest.raises(HogwildError) as error:
        fit(pair_objective(), epochs=3, resume=path, **options)
    assert str(error.value) == (f"checkpoint {path} was edited or is corrupted: its header "
                                "does not match its digest")


def test_settings_removed_and_resigned_are_still_refused(tmp_path):
    """Re-signed with a plain digest, a header without the resume's settings does not
    switch their check off."""
    path = tmp_path / "run.npz"
    fit(pair_objective(), epochs=2, checkpoint=path, step=0.3, scheduler="serial", seed=1)
    edited(path, set_field("settings", {}), resign=True)
    with pytest.raises(HogwildError) as error:
        fit(pair_objective(), epochs=3, resume=path, step=0.5, scheduler="serial", seed=2)
    assert str(error.value) == (f"checkpoint {path} does not record the setting 'scheduler', "
                                "so a resume could not be checked against it: refused")


def test_a_keyed_checkpoint_needs_its_key(tmp_path, monkeypatch):
    """With HOGWILD_CHECKPOINT_KEY the digest is an HMAC: a re-signed plain digest, a
    missing key or another key are refused."""
    path = tmp_path / "run.npz"
    options = dict(step=0.3, scheduler="serial", seed=1)
    monkeypatch.setenv(KEY_VARIABLE, "our secret")
    fit(pair_objective(), epochs=2, checkpoint=path, **options)
    assert load_checkpoint(path).epoch == 2
    assert fit(pair_objective(), epochs=3, resume=path, **options).history[-1].epoch == 3
    fit(pair_objective(), epochs=2, checkpoint=path, **options)
    monkeypatch.setenv(KEY_VARIABLE, "another secret")
    with pytest.raises(HogwildError) as error:
        load_checkpoint(path)
    assert str(error.value) == (f"checkpoint {path} was edited or is corrupted: its header does "
                                "not match its digest (or it was written with another key)")
    monkeypatch.delenv(KEY_VARIABLE)
    with pytest.raises(HogwildError) as error:
        load_checkpoint(path)
    assert str(error.value) == (f"checkpoint {path} is authenticated with a key (hmac-sha256): "
                                f"set {KEY_VARIABLE} to the key it was written with")
    fit(pair_objective(), epochs=2, checkpoint=path, **options)  # a plain digest
    monkeypatch.setenv(KEY_VARIABLE, "our secret")
    with pytest.raises(HogwildError) as error:
        load_checkpoint(path)
    assert str(error.value) == (f"checkpoint {path} is not authenticated with a key, and "
                                f"{KEY_VARIABLE} is set: refused (anyone could have written it)")


# --- data that was silently misread -----------------------------------------------------

def test_a_first_line_of_ratings_that_is_no_header_is_read_as_data(capsys, tmp_path):
    """'-7 3 4' was once skipped as a header; it is data (user ids as text, since
    -7 is no id from 0 to 2**63 - 1), and no rating is lost."""
    from hogwild.datasets.ratings import read_ratings
    path = tmp_path / "ratings.txt"
    path.write_text("-7 3 4\n1 2 3\n2 3 4\n")
    ratings = read_ratings(path)
    assert ratings.users.tolist() == ["-7", "1", "2"] and ratings.items.tolist() == [3, 2, 3]
    status, _, _ = run(capsys, "run", "mc", "--data", path, "--epochs", "1")
    assert status == 0
    path.write_text("user,item,rating\n1,2,3\n2,3,4\n3,1,2\n")  # a header still is one
    assert len(read_ratings(path)) == 3


TEXT_FORMS = {  # how editors and old systems write the same lines
    "byte-order mark": lambda text: b"\xef\xbb\xbf" + text.encode(),
    "CR LF": lambda text: text.replace("\n", "\r\n").encode(),
    "CR alone": lambda text: text.replace("\n", "\r").encode(),
    "mark and CR": lambda text: b"\xef\xbb\xbf" + text.replace("\n", "\r").encode(),
}


@pytest.mark.parametrize("form", TEXT_FORMS)
def test_ratings_with_a_byte_order_mark_or_other_line_ends_read_as_plain_text(tmp_path, form):
    """A mark made user 34 two users ('\ufeff34' and '34') with ids as text; CR line
    ends read 600 ratings as one."""
    from hogwild.datasets.ratings import read_ratings

    for text in ("34,2,5\n34,3,4\n2,2,3\n2,3,1\n", "34,a,5\n34,b,4\nx,a,3\nx,b,1\n"):
        plain, odd = tmp_path / "plain.csv", tmp_path / "odd.csv"
        plain.write_text(text)
        odd.write_bytes(TEXT_FORMS[form](text))
        expected, ratings = read_ratings(plain), read_ratings(odd)
        for field in ("users", "items", "values"):
            assert getattr(ratings, field).tolist() == getattr(expected, field).tolist()
            assert getattr(ratings, field).dtype == getattr(expected, field).dtype


@pytest.mark.parametrize("form", TEXT_FORMS)
def test_svmlight_and_graph_files_with_a_byte_order_mark_or_other_line_ends_are_read(
        tmp_path, monkeypatch, form):
    """The svmlight reader refused a mark ('the label is not a number') and read
    CR-ended lines as one malformed line."""
    from hogwild.datasets.graphs import read_weighted_edges

    monkeypatch.setenv("HOGWILD_CACHE_DIR", str(tmp_path / "cache"))
    text = "1 1:0.5 3:1\n-1 2:1\n1 1:1 2:2\n"
    (tmp_path / "plain.svm").write_text(text)
    (tmp_path / "odd.svm").write_bytes(TEXT_FORMS[form](text))
    expected, read = (load_svmlight(tmp_path / name) for name in ("plain.svm", "odd.svm"))
    assert (read.X != expected.X).nnz == 0 and read.y.tolist() == expected.y.tolist()
    (tmp_path / "plain.txt").write_text("0 1\n1 2\n2 0\n")
    (tmp_path / "odd.txt").write_bytes(TEXT_FORMS[form]("0 1\n1 2\n2 0\n"))
    n, *arrays = read_weighted_edges(tmp_path / "odd.txt")
    expected_n, *expected_arrays = read_weighted_edges(tmp_path / "plain.txt")
    assert n == expected_n == 3
    assert [a.tolist() for a in arrays] == [a.tolist() for a in expected_arrays]


@pytest.mark.parametrize("line", ["3 \u00b2", "3 99999999999999999999", "\u0661 2"])
def test_vertex_ids_in_other_digits_or_beyond_int64_are_named(capsys, tmp_path, line):
    """'3 ²' raised a ValueError traceback (and on one MPI rank hung the job)."""
    path = tmp_path / "graph.txt"
    path.write_text(f"1 2\n2 3\n{line}\n", encoding="utf-8")
    status, _, err = run(capsys, "run", "cuts", "--data", path, "--epochs", "1")
    assert status == 2
    one_line_error(err, f"{path}, line 3: expected two integer vertex ids from 0 to 2**63 - 1: "
                        f"{line!r}")


# --- the Python API: checked before compiled code runs -----------------------------------

def read_row(e, params, data, step):
    params[0][data[0][e]] -= step * params[0][data[0][e]]


def row_loss(e, params, data):
    return params[0][data[0][e]] ** 2


def test_more_samples_than_the_data_holds_is_named_not_a_crash():
    """n_samples larger than the data ended in SIGSEGV."""
    objective = Objective(read_row, row_loss, (np.ones(10),), (np.arange(100) % 10,), 1000)
    with pytest.raises(HogwildError) as error:
        fit(objective, epochs=1)
    assert str(error.value) == (
        "objective 'objective': loss(e=100) reads past the end of an array: n_samples (1,000) "
        "is more than the data holds, or sample 100 has an id beyond the array it indexes")


def test_ids_beyond_a_parameter_array_are_named_not_a_crash():
    objective = Objective(read_row, row_loss, (np.ones(10),), (np.arange(100) % 12,), 100)
    with pytest.raises(HogwildError) as error:  # undeclared: found by the checked pass
        fit(objective, epochs=1)
    assert str(error.value).startswith("objective 'objective': loss(e=10) reads past the end")
    with pytest.raises(HogwildError) as error:  # declared: found when it is made
        Objective(read_row, row_loss, (np.ones(10),), (np.arange(100) % 12,), 100,
                  id_arrays=(IdArray(0, (0,)),))
    assert str(error.value) == ("data[0][10] = 10 is not a row of params[0], which has 10 "
                                "rows (declared by an IdArray)")


def test_a_file_of_labels_alone_is_one_error_cached_or_not(capsys, tmp_path, monkeypatch):
    """Its cached, memory-mapped arrays are empty: the cache check divided by their
    zero rows (a traceback, found by scripts/audit_inputs.py)."""
    monkeypatch.setenv("HOGWILD_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "labels.svm"
    path.write_text("1\n-1\n")
    for _ in range(2):  # parsed, then read back from the cache
        assert main(["stats", "svm", "--data", str(path)]) == 2
        assert capsys.readouterr().err.strip() == (
            "hogwild: error: the 2 samples touch no coordinate (no features, no edges): "
            "there is no sparsity to measure")


def test_an_option_of_the_wrong_type_is_named():
    """A text step reached a comparison with a number (a raw TypeError)."""
    objective = Objective(read_row, row_loss, (np.ones(10),), (np.arange(10),), 10)
    with pytest.raises(HogwildError) as error:
        fit(objective, epochs=1, step="fast")
    assert str(error.value) == "step must be a finite number > 0, got 'fast'"


@pytest.mark.parametrize("dtype", [np.int64, np.int32, bool])
def test_integer_or_bool_parameters_are_refused(dtype):
    """They silently truncated every update."""
    with pytest.raises(HogwildError) as error:
        Objective(read_row, row_loss, (np.ones(10, dtype),), (np.arange(10),), 10)
    assert str(error.value) == (f"params[0] is {np.dtype(dtype)}: parameters must be floating "
                                "point (float32 or float64), or each update is truncated "
                                "(integer_params=True for integer state that is not trained by "
                                "steps)")


@pytest.mark.parametrize("edges,terminals,message", [
    (([0, 1, 7], [1, 2, 3]), {0: 0, 3: 1}, "edge 2: u = 7 is not a vertex number in 0..4"),
    (([0, 1, 2], [1, 2, -1]), {0: 0, 3: 1}, "edge 2: v = -1 is not a vertex number in 0..4"),
    (([0, 1, 2], [1, 2, 3]), {0: 0, 9: 1}, "terminal 9 is not a vertex number in 0..4"),
    (([0, 1, 2], [1, 2, 3]), {0: 0}, "label 1 has no terminal vertex: a multiway cut needs "
                                     "at least one per label (labels 0..1)"),
])
def test_graph_cut_input_is_checked(edges, terminals, message):
    from hogwild.problems.graph_cuts import multiway_cut

    with pytest.raises(HogwildError) as error:
        multiway_cut(5, *edges, np.ones(3), terminals, 2, epochs=1)
    assert str(error.value) == message


# --- silently accepted options --------------------------------------------------------------

@pytest.mark.parametrize("problem,argv,message", [
    ("cuts", ["--data", "random:40x80", "--terminals", "0:0"],
     "label 1 has no terminal vertex: a multiway cut needs at least one per label "
     "(labels 0..1)"),
    ("cuts", ["--data", "random:40x80", "--unary", "1e20"],
     "--unary must be a finite number from 0 to 1e+06, got 1e+20"),
    ("svm", ["--exchange", "garbage"], "unknown exchange 'garbage'; choose one of: auto, "
                                       "dense, sparse"),
    ("svm", ["--allreduce", "garbage"], "unknown allreduce algorithm 'garbage'; choose one of: "
                                        "auto, basic_linear, nonoverlapping, recursive_doubling, "
                                        "ring, segmented_ring, rabenseifner, hierarchical"),
    ("mc", ["--data", "jumbo:50x40x400", "--step-scaling", "garbage"],
     "unknown step_scaling 'garbage'; choose one of: linear, none"),
    ("svm", ["--staleness", "-3"], "--staleness: expected an integer >= 0 or inf, got '-3'"),
    # valid values of another backend's options: the run would train on threads
    ("svm", ["--nodes", "8"], "--nodes is for --backend ray; this run has --backend threads"),
    ("svm", ["--exchange", "dense"],
     "--exchange is for --backend mpi; this run has --backend threads"),
    ("mc", ["--data", "jumbo:50x40x400", "--backend", "processes", "--warmup-epochs", "1"],
     "--warmup-epochs is for --backend mpi; this run has --backend processes"),
    ("svm", ["--backend", "ray", "--sync-every", "4"],
     "--sync-every is for --backend mpi; this run has --backend ray"),
    ("svm", ["--ranks", "2", "--staleness", "2"],
     "--staleness is for --backend ray; this run has --backend mpi"),
])
def test_options_a_run_would_ignore_or_misread_are_named(capsys, problem, argv, message):
    status, out, err = run(capsys, "run", problem, *argv, "--epochs", "1")
    assert status == 2 and out == ""
    one_line_error(err, message)


@pytest.mark.parametrize("loss, start", [("logistic", "0.6931"), ("hinge", "1")])
def test_a_huge_step_is_divergence_not_a_result(capsys, loss, start):
    """--step 1e20 reached objective 7e36 and exited 0. (The adaptive hinge's steps
    stop at the hinge, however long: its case is --no-adaptive.)"""
    status, out, err = run(capsys, "run", "svm", "--step", "1e15", "--epochs", "3", "--seed", "0",
                           "--loss", loss, *(["--no-adaptive"] if loss == "hinge" else []))
    assert status == 2
    assert err.startswith(f"hogwild: error: the objective grew from {start} to ")
    assert err.endswith(" in epoch 1 (step 1e+15): training diverged; try a smaller step\n")


def test_a_seed_image_with_more_levels_than_labels_is_named(capsys, tmp_path):
    """A 3-level seed image overrode --labels 2 while the JSON said 2."""
    pytest.importorskip("PIL", reason="images need Pillow (pip install 'hogwild[images]')")
    from PIL import Image

    image = tmp_path / "photo.png"
    Image.fromarray((np.arange(30 * 40).reshape(30, 40) % 251).astype(np.uint8)).save(image)
    seeds = np.zeros((30, 40), np.uint8)
    seeds[:3, :3], seeds[-3:, -3:], seeds[15, 20] = 80, 160, 240
    Image.fromarray(seeds).save(tmp_path / "seeds.png")
    status, _, err = run(capsys, "run", "cuts", "--data", image, "--terminals",
                         tmp_path / "seeds.png", "--labels", "2", "--epochs", "1")
    assert status == 2
    one_line_error(err, f"--terminals {tmp_path / 'seeds.png'}: the seed image has 3 labels "
                        "(gray levels other than 0), and --labels is 2; give --labels 3 or leave "
                        "it out")
    status, out, err = run(capsys, "run", "cuts", "--data", image, "--terminals",
                           tmp_path / "seeds.png", "--epochs", "1", "--json")
    assert status == 0, err
    assert json.loads(out)["labels"] == 3


# --- limits ---------------------------------------------------------------------------------

@pytest.mark.parametrize("option,name", [("--workers", "workers"), ("--ranks", "--ranks")])
def test_worker_and_rank_counts_are_bounded_even_oversubscribed(capsys, option, name):
    """--oversubscribe lifted every bound, and --ranks was bounded only by 4096."""
    from hogwild.limits import usable_cores

    cores = usable_cores()
    count = 64 * cores + 1
    if count > 4096:
        pytest.skip(f"{cores} cores: --ranks' own bound (4096) comes first")
    status, _, err = run(capsys, "run", "svm", option, count, "--oversubscribe", "--epochs", "1")
    assert status == 2
    one_line_error(err, f"{name}={count} is more than 64 per usable core ({cores} here), even "
                        f"oversubscribed; use at most {64 * cores}")


def test_ray_node_counts_are_bounded(capsys):
    status, _, err = run(capsys, "run", "svm", "--backend", "ray", "--nodes", "100000",
                         "--epochs", "1")
    assert status == 2
    one_line_error(err, "nodes must be an integer from 1 to 4,096, got 100000")


def test_a_local_ray_instance_is_bounded_like_workers(capsys):
    pytest.importorskip("ray", reason="backend 'ray' needs Ray")
    from hogwild.limits import usable_cores

    nodes = 4 * usable_cores() + 1
    status, _, err = run(capsys, "run", "svm", "--backend", "ray", "--nodes", nodes,
                         "--epochs", "1")
    assert status == 2
    one_line_error(err, f"nodes x threads per node={nodes} is more than 4 per usable core "
                        f"({usable_cores()} here); use at most {4 * usable_cores()}, or "
                        "oversubscribe=True (--oversubscribe) to run them anyway")


@pytest.mark.parametrize("content,message", [
    (b"not a zip", "is not a hogwild model file (not an .npz archive)"),
    (b"PK\x03\x04 a broken zip", "is not a hogwild model file (not an .npz archive)"),
])
def test_loading_a_bad_model_file_is_one_error(tmp_path, content, message):
    """SparseSVM.load raised BadZipFile, KeyError or TypeError."""
    from hogwild.problems.sparse_svm import SparseSVM

    path = tmp_path / "model.npz"
    path.write_bytes(content)
    with pytest.raises(HogwildError) as error:
        SparseSVM.load(path)
    assert str(error.value) == f"{path} {message}"


@pytest.mark.parametrize("edit,detail", [
    (lambda meta, arrays: meta.pop("params"), "no 'params'"),
    (lambda meta, arrays: meta.__setitem__("params", {"colour": "red"}),
     "SparseSVM.__init__() got an unexpected keyword argument 'colour'"),
    (lambda meta, arrays: arrays.pop("coef"), "no 'coef'"),
    (lambda meta, arrays: arrays.__setitem__("coef", np.array(["a", "b"])),
     "coef is <U1[2], not a finite float vector"),
    (lambda meta, arrays: arrays.__setitem__("classes", np.array([1, 2, 3])),
     "coef is float32[4], not a finite float matrix of 3 rows (one per class)"),
    (lambda meta, arrays: arrays.__setitem__("classes", np.array([1])),
     "classes has shape (1,), not (K,) with K >= 2"),
])
def test_an_edited_model_file_is_one_error(tmp_path, edit, detail):
    from hogwild.problems.sparse_svm import SparseSVM

    X = np.eye(6, 4, dtype=np.float32)
    model = SparseSVM(epochs=1, random_state=0, workers=1).fit(X, np.array([0, 1] * 3))
    path = tmp_path / "model.npz"
    model.save(path)
    with np.load(path) as archive:
        arrays = dict(archive)
    meta = json.loads(str(arrays.pop("meta")))
    edit(meta, arrays)
    np.savez(path, meta=np.array(json.dumps(meta)), **arrays)
    with pytest.raises(HogwildError) as error:
        SparseSVM.load(path)
    assert str(error.value) == f"{path} is a damaged or edited sparse linear classifier file " \
                               f"({detail})"


def _saved_models(tmp_path):
    """{class: the path of a small fitted model's file} for the three model kinds."""
    from hogwild.datasets.jumbo import make_jumbo
    from hogwild.problems.matrix_completion import ImplicitFactorization, MatrixFactorization
    from hogwild.problems.sparse_svm import SparseSVM

    train, _, _ = make_jumbo(60, 40, 600, seed=0, folder=None)
    interactions = sp.csr_matrix((np.ones(train.users.size), (train.users, train.items)))
    models = {SparseSVM: SparseSVM(epochs=1, random_state=0, workers=1).fit(
                  np.eye(6, 4, dtype=np.float32), np.array([0, 1] * 3)),
              MatrixFactorization: MatrixFactorization(epochs=1, random_state=0,
                                                       workers=1).fit(train),
              ImplicitFactorization: ImplicitFactorization(epochs=1, random_state=0, workers=1).fit(
                  interactions)}
    paths = {}
    for kind, model in models.items():
        paths[kind] = tmp_path / f"{kind.__name__}.npz"
        model.save(paths[kind])
    return paths


def _rewritten(path, name, payload, compress=zipfile.ZIP_STORED):
    """The model file with member ``name``.npy replaced by ``payload`` (bytes or a
    function writing into the open member)."""
    with zipfile.ZipFile(path) as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    with zipfile.ZipFile(path, "w", compress) as archive:
        for filename, content in members.items():
            if filename != f"{name}.npy":
                archive.writestr(filename, content)
            elif callable(payload):
                with archive.open(filename, "w", force_zip64=True) as member:
                    payload(member)
            else:
                archive.writestr(filename, payload)


def _npy_header(shape, descr="<f4"):
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": descr, "fortran_order": False,
                                                   "shape": shape})
    return header.getvalue()


def test_model_files_that_declare_more_than_they_hold_or_than_memory_are_refused_unread(
        tmp_path, monkeypatch):
    """A header declaring 10^11 floats raised _ArrayMemoryError from every load; a
    small compressed file of zeros was decompressed (3 GB, 45 s) before any check."""
    from hogwild import model_file

    for kind, path in _saved_models(tmp_path).items():
        name = "coef" if kind.__name__ == "SparseSVM" else "user_factors"
        description = {"SparseSVM": "sparse linear classifier",
                       "MatrixFactorization": "matrix-factorization model",
                       "ImplicitFactorization": "implicit-feedback model"}[kind.__name__]
        with np.load(path) as archive:
            size = archive[name].nbytes
        _rewritten(path, name, _npy_header((10 ** 11,)) + bytes(size))
        with pytest.raises(HogwildError) as error:
            kind.load(path)
        assert str(error.value) == (f"{path} is a damaged or edited {description} file "
                                    f"({name}.npy declares 400.0 GB and holds "
                                    f"{model_file.size_text(size)})")
        # 200 MB of zeros in a 0.2 MB file, on a machine with 100 MB available
        monkeypatch.setattr(model_file, "available_memory", lambda: 100_000_000)
        _rewritten(path, name, lambda member: [member.write(_npy_header((50_000_000,)))] + [
            member.write(bytes(1 << 22)) for _ in range(200_000_000 // (1 << 22) + 1)],
            zipfile.ZIP_DEFLATED)
        assert path.stat().st_size < 1_000_000
        with pytest.raises(HogwildError) as error:
            kind.load(path)
        assert str(error.value).startswith(f"{path}: its arrays take 200.0 MB, more than the "
                                           "100.0 MB of memory available"), error.value
        monkeypatch.undo()


@pytest.mark.parametrize("kind_name", ["MatrixFactorization", "ImplicitFactorization"])
def test_a_model_file_of_nan_factors_is_refused(tmp_path, kind_name):
    """ImplicitFactorization.load took NaN factors, and recommend returned nothing."""
    kind = {k.__name__: k for k in _saved_models(tmp_path)}[kind_name]
    path = tmp_path / f"{kind_name}.npz"
    with np.load(path) as archive:
        factors = archive["item_factors"].copy()
    factors[1, 2] = np.nan
    buffer = io.BytesIO()
    np.save(buffer, factors)
    _rewritten(path, "item_factors", buffer.getvalue())
    with pytest.raises(HogwildError) as error:
        kind.load(path)
    assert str(error.value).endswith("model file (item_factors holds NaN or Inf)")


def _wait_for(condition, what, deadline=120.0):
    give_up = time.monotonic() + deadline
    while not condition():
        if time.monotonic() > give_up:
            raise AssertionError(f"no {what} within {deadline:.0f} s")
        time.sleep(0.005)


def _maps(pid, library):
    try:
        with open(f"/proc/{pid}/maps") as maps:
            return library in maps.read()
    except OSError:
        return False


STOP_SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process states from /proc")
@pytest.mark.parametrize("signum", STOP_SIGNALS)
@pytest.mark.parametrize("entry", ["hogwild_launcher", "hogwild.cli"])
def test_ctrl_c_while_the_command_imports_is_one_line_and_exit_130(tmp_path, signum, entry):
    """Ctrl-C while the command imported numba (its first second) printed a
    KeyboardInterrupt traceback (exit -2), under `python -m hogwild.cli` too, whose
    import of the hogwild package comes before any code of the command's. Ctrl-C
    reaches the whole process group, as a terminal's does; so do a scheduler's
    SIGTERM and a closed terminal's SIGHUP, which killed the command without a word."""
    command = [sys.executable, "-m", entry, "run", "mc", "--data",
               "jumbo:3000x3000x300000", "--epochs", "50"]
    env = {**os.environ, "HOGWILD_CACHE_DIR": str(tmp_path / "cache")}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True, env=env, cwd=tmp_path)
    _wait_for(lambda: _maps(process.pid, "_multiarray_umath"), "numpy import")  # numba next
    os.killpg(process.pid, signum)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 128 + signum, err
    assert err.startswith("hogwild: interrupted") and "Traceback" not in err, err
    assert len(err.splitlines()) == 1, err


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_during_teardown_leaves_the_finished_run_alone(tmp_path, signum):
    """A scheduler's SIGTERM (or a hang-up) after the run ended, while Python's exit
    functions run: a KeyboardInterrupt traceback in them, or death by the signal
    once the interpreter had put the default handlers back. The run's own status
    (0) stands. An exit function registered first (so run last) holds the teardown
    until the signal was sent."""
    hold = ("import atexit, sys, hogwild_launcher\n"
            "atexit.register(lambda: (print('teardown', flush=True), sys.stdin.readline()))\n"
            "sys.argv = ['hogwild', 'run', 'svm', '--epochs', '1']\n"
            "sys.exit(hogwild_launcher.main())\n")
    env = {**os.environ, "HOGWILD_CACHE_DIR": str(tmp_path / "cache")}
    process = subprocess.Popen([sys.executable, "-c", hold], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env, cwd=tmp_path)
    lines = []
    while not lines or lines[-1] not in ("teardown\n", ""):
        lines.append(process.stdout.readline())
    assert lines[-1] == "teardown\n", lines
    process.send_signal(signum)
    out, err = process.communicate("\n", timeout=120)
    assert process.returncode == 0, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert lines[-2].startswith("done: "), lines


def _spawned_children(pid):
    """Pids of multiprocessing's spawned children of ``pid`` (their command lines
    name spawn_main from their first instruction)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid and \
                    b"spawn_main" in Path(f"/proc/{entry}/cmdline").read_bytes():
                found.append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    return found


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process states from /proc")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_while_worker_processes_start_is_the_parents_alone(tmp_path, signum):
    """Ctrl-C while the processes backend's children imported numpy and numba gave a
    KeyboardInterrupt traceback in each child and 'worker 1 ... killed by signal
    SIGINT while starting' (exit 2): the children are now born ignoring the stop
    signals, and the parent stops as for any Ctrl-C (exit 130; 143 for SIGTERM)."""
    command = [sys.executable, "-m", "hogwild_launcher", "run", "svm", "--backend",
               "processes", "--workers", "2", "--epochs", "50"]
    env = {**os.environ, "HOGWILD_CACHE_DIR": str(tmp_path / "cache")}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True, env=env, cwd=tmp_path)
    _wait_for(lambda: _spawned_children(process.pid), "worker process")
    os.killpg(process.pid, signum)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 128 + signum, err
    assert "Traceback" not in err and "killed by signal" not in err, err
    assert err.splitlines()[-1].startswith("hogwild: interrupted"), err


def _entries_in_progress(root, pid):
    return list(Path(root).rglob(f".tmp-{pid}-*"))


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process states from /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_or_sighup_while_data_is_made_removes_the_entry_and_says_so(signum):
    """SIGTERM or SIGHUP while a Jumbo matrix was made killed the command without a
    word and left the partial cache entry (.tmp-PID, gigabytes at scale); Ctrl-C
    there already cleaned up and exited 130."""
    cache = os.environ["HOGWILD_CACHE_DIR"]
    spec = f"jumbo:400000x100000x{30_000_000 + signum}"  # made by this test alone
    process = subprocess.Popen([sys.executable, "-m", "hogwild_launcher", "run", "mc",
                                "--data", spec, "--epochs", "1"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    _wait_for(lambda: _entries_in_progress(cache, process.pid) or process.poll() is not None,
              "cache entry in progress")
    os.killpg(process.pid, signum)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 128 + signum, err
    assert err == "hogwild: interrupted\n"
    assert _entries_in_progress(cache, process.pid) == []


def test_labels_of_types_that_do_not_compare_are_one_error():
    """Labels (1, 'b', 2.5) raised "TypeError: '<' not supported" from fit."""
    from hogwild.problems.sparse_svm import SparseSVM

    X = np.eye(6, 4, dtype=np.float32)
    for y, kinds in (([1, "b", 2.5, 1, "b", 2.5], "number and string"),
                     (["a", None, "b", "a", None, "b"], "NoneType and string")):
        with pytest.raises(HogwildError) as error:
            SparseSVM(epochs=1, workers=1).fit(X, np.array(y, dtype=object))
        assert str(error.value) == (f"Mix of label input types ({kinds}): y's labels must be "
                                    "all strings or all numbers")


@pytest.mark.parametrize("multi_class", ["ovr", "multinomial"])
def test_a_class_count_that_cannot_be_learned_or_trained_in_time_is_refused_at_once(
        monkeypatch, multi_class):
    """SparseSVM(epochs=2).fit of 100,000 x 50 with 100,000 classes had not finished
    after 120 s."""
    from hogwild.problems.sparse_svm import SparseSVM, inputs

    losses = {"ovr": "hinge", "multinomial": "logistic"}
    X = sp.random(100_000, 50, density=0.2, format="csr", random_state=0, dtype=np.float32)
    with pytest.raises(HogwildError) as error:
        SparseSVM(epochs=2, multi_class=multi_class, loss=losses[multi_class]).fit(
            X, np.arange(100_000))
    assert str(error.value) == ("y has 100,000 classes for 100,000 samples, fewer than 2 "
                                "samples a class: no class can be learned from that (is y a "
                                "column of ids?)")
    monkeypatch.setattr(inputs, "CLASS_UPDATES_PER_EPOCH", 10 ** 6)  # the cost rule, small
    with pytest.raises(HogwildError) as error:
        SparseSVM(epochs=2, multi_class=multi_class, loss=losses[multi_class]).fit(
            X, np.arange(100_000) % 20)
    assert str(error.value) == (f"20 classes over {X.nnz:,} nonzeros take {20 * X.nnz:.1e} "
                                "class updates an epoch (more than 1e+06: hours of training); "
                                "group the labels into fewer classes, or sample the data")


def test_ratings_given_as_lists_or_with_ids_of_mixed_types():
    """interactions_from_ratings raised TypeError for Python lists and for ids of
    mixed types."""
    from hogwild.datasets.ratings import Ratings, interactions_from_ratings

    data = interactions_from_ratings(Ratings([1, 1, 2, 2, 3, 3], [7, 8, 7, 8, 7, 8],
                                             [5, 4, 5, 5, 4, 5]), test_fraction=0.5)
    assert data.train.nnz == data.test.nnz == 3
    with pytest.raises(HogwildError) as error:
        Ratings(np.array([1, "a"], dtype=object), [1, 2], [5.0, 4.0])
    assert str(error.value) == ("user ids mix types (int, str); give ids of one type (all "
                                "integers, or all strings)")


def test_an_id_of_a_billion_digits_is_one_error_not_a_conversion_limit(tmp_path):
    """A 2 GB id ended, after ~50 s, in ValueError: Exceeds the limit (4300 digits)
    for integer string conversion. Here 5,000 digits: longer than any id."""
    from hogwild.datasets.ratings import read_ratings

    path = tmp_path / "ratings.txt"
    path.write_text(f"1 2 3\n{'9' * 5000} 3 4\n")
    with pytest.raises(HogwildError) as error:
        read_ratings(path)
    assert str(error.value) == (f"{path}, line 2: malformed rating line (the user id is 5,000 "
                                f"characters long, more than 4,096): '{'9' * 77}...'")
    path.write_text(f"1 2 3\n{'9' * 30} 3 4\n")  # beyond int64: a text id, as documented
    assert read_ratings(path).users.tolist() == ["1", "9" * 30]


def test_factors_that_cannot_fit_in_memory_are_named_before_allocation():
    """ImplicitFactorization().fit of a matrix of 2 x 10^9 columns raised
    _ArrayMemoryError."""
    from hogwild.problems.matrix_completion import ImplicitFactorization

    wide = sp.csr_matrix((np.ones(4), ([0, 0, 1, 1], [0, 5, 1, 2 * 10 ** 9 - 1])),
                         shape=(2, 2 * 10 ** 9))
    with pytest.raises(HogwildError) as error:
        ImplicitFactorization(epochs=1, workers=1).fit(wide)
    assert re.fullmatch(r"memory [\d.,]+ [kMGT]B is less than the parameters need \(256\.0 GB "
                        r"for 2,000,000,000 x 32 factors\)", str(error.value)), error.value


# --- the processes backend killed while it starts -------------------------------------------

START = """
import sys, time
import numpy as np
from hogwild import Objective, fit

def update(e, params, data, step):
    params[0][e % 100] += step * 1e-9

def loss(e, params, data):
    return 0.0

if __name__ == "__main__":
    big = np.zeros(4_000_000)  # 32 MB a segment: the copies take a while
    print("ready", flush=True)
    fit(Objective(update, loss, (np.zeros(100), big), (np.zeros(1),), 100_000), epochs=50,
        workers=2, backend="processes", seed=0)
"""


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process states from /proc")
def test_a_kill_while_the_processes_backend_starts_leaves_no_shared_memory(tmp_path):
    """SIGKILL during start-up left full-size files in /dev/shm (4 of 4 trials). The
    segments are anonymous memory files now: at no moment do they have a name."""
    from hogwild.backends.shared_memory import PREFIX, segments_root

    script = tmp_path / "start.py"
    script.write_text(START)
    for delay in (0.3, 0.8, 1.5, 2.5):
        process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        assert process.stdout.readline().strip() == "ready"
        time.sleep(delay)
        named = list(segments_root().glob(f"{PREFIX}{process.pid}-*"))
        children = child_pids(process.pid)
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=60)
        assert named == []
        deadline = time.monotonic() + 5
        while any(pid_running(pid) for pid in children) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(pid_running(pid) for pid in children), "a worker outlived its parent"
        assert list(segments_root().glob(f"{PREFIX}{process.pid}-*")) == []


def test_a_jumbo_matrix_killed_while_written_leaves_nothing_behind(tmp_path, monkeypatch):
    """kill -9 while the generator writes: the next generation removes the dead
    process's temporary folder and makes the matrix whole."""
    env = {**os.environ, "HOGWILD_CACHE_DIR": str(tmp_path)}
    script = ("from hogwild.datasets.jumbo import make_jumbo\n"
              "make_jumbo(2000, 2000, 60_000_000, rank=2)\n")
    child = subprocess.Popen([sys.executable, "-c", script], env=env)
    root = tmp_path / "jumbo"
    deadline = time.monotonic() + 600  # a loaded machine: start-up and drawing can be slow
    while not list(root.glob(".tmp-*/train_users.npy")) and child.poll() is None \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    writing = bool(list(root.glob(".tmp-*/train_users.npy")))
    child.kill()
    child.wait()
    assert writing, f"the generator never started writing (exit status {child.returncode})"
    assert child.returncode == -signal.SIGKILL, \
        f"the generator ended by itself (exit status {child.returncode}) before the kill"
    (left,) = root.glob(".tmp-*")
    assert left.name.startswith(f".tmp-{child.pid}-")
    from hogwild.datasets.jumbo import make_jumbo

    monkeypatch.setenv("HOGWILD_CACHE_DIR", str(tmp_path))
    train, _, _ = make_jumbo(50, 40, 3000, rank=2)
    assert not list(root.glob(".tmp-*")) and len(train) == 3000


# --- the process's own surroundings: streams, encodings, limits ------------------------

def _shell(command, tmp_path, **env):
    """``command`` run by sh in ``tmp_path``: (status, stdout, stderr)."""
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env={**os.environ, **env})
    return done.returncode, done.stdout, done.stderr


HOGWILD_SH = " ".join(HOGWILD)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("argv", ["run svm --epochs 1 --json", "run svm --epochs 1",
                                  "datasets", "run svm --help"])
def test_a_full_stdout_is_one_line_and_exit_2(tmp_path, argv):
    """stdout on a full disk (/dev/full) ended in an OSError traceback."""
    status, _, err = _shell(f"{HOGWILD_SH} {argv} > /dev/full", tmp_path)
    assert status == 2, err
    one_line_error(err, "cannot write to standard output (No space left on device)")


def test_a_closed_stdout_is_one_line_and_a_closed_stderr_costs_nothing(tmp_path):
    """A closed stdout ended in an AttributeError traceback (exit 1); a closed stderr
    must neither fail the run nor send its lines to stdout."""
    status, _, err = _shell(f"{HOGWILD_SH} run svm --epochs 1 --json >&-", tmp_path)
    assert status == 2, err
    one_line_error(err, "cannot write to standard output (it is closed)")
    status, out, _ = _shell(f"{HOGWILD_SH} run svm --epochs 1 --json 2>&-", tmp_path)
    assert status == 0
    assert json.loads(out)["test_error"] < 0.2
    status, out, _ = _shell(f"{HOGWILD_SH} run svm --data nowhere.svm 2>&-", tmp_path)
    assert (status, out) == (2, "")


def test_a_path_that_stdout_cannot_encode_is_escaped(tmp_path):
    """PYTHONIOENCODING=ascii and a non-ASCII data path: UnicodeEncodeError traceback."""
    folder = tmp_path / "données"
    folder.mkdir()
    (folder / "tr.svm").write_text("".join(f"{i % 2} 1:{i % 7 + 1} 2:{i % 3}\n"
                                           for i in range(200)))
    status, out, err = _shell(f"{HOGWILD_SH} run svm --data données/tr.svm --epochs 1",
                              tmp_path, PYTHONIOENCODING="ascii")
    assert status == 0, err
    assert "on donn\\xe9es/tr.svm (200 x 2" in out.splitlines()[-1]
    status, out, err = _shell(f"{HOGWILD_SH} run svm --data données/tr.svm --epochs 1 --json",
                              tmp_path, PYTHONIOENCODING="ascii")
    assert status == 0 and json.loads(out)["data"] == "données/tr.svm"


def test_numba_turned_off_is_one_line():
    """NUMBA_DISABLE_JIT=1: NotImplementedError traceback from an atomic intrinsic."""
    status, _, err = cli("run", "svm", "--epochs", "1", env={"NUMBA_DISABLE_JIT": "1"})
    assert status == 2
    one_line_error(err, "hogwild needs numba's compiler, which NUMBA_DISABLE_JIT=1 turns off: "
                        "unset NUMBA_DISABLE_JIT")


def test_too_few_file_descriptors_are_one_line(tmp_path):
    """RLIMIT_NOFILE 32 with the processes backend: OSError (EMFILE) traceback."""
    status, _, err = _shell(f"ulimit -n 32 && {HOGWILD_SH} run svm --epochs 1 --workers 2 "
                            "--backend processes", tmp_path)
    assert status == 2, err
    one_line_error(err, "Too many open files (this process may open 32 files): raise the limit "
                        "(ulimit -n), or use fewer workers or --backend threads")


def test_a_working_folder_deleted_before_the_start_is_one_line(tmp_path):
    """numba's compiler raised FileNotFoundError from os.getcwd (a traceback)."""
    status, _, err = _shell(f"mkdir gone && cd gone && rmdir ../gone && {HOGWILD_SH} run svm "
                            "--epochs 1", tmp_path)
    assert status == 2
    one_line_error(err, "the current folder no longer exists (it was deleted or moved away): "
                        "cd to a folder that exists")


def test_a_user_index_past_int64_is_a_cold_start_not_an_index_error():
    """ImplicitFactorization.recommend(2**70) raised IndexError from numpy."""
    from hogwild.problems.matrix_completion.implicit import ImplicitFactorization

    X = sp.random(50, 40, density=0.2, format="csr", random_state=0)
    model = ImplicitFactorization(epochs=1, workers=1, random_state=0).fit(X)
    with pytest.warns(UserWarning, match=f"user {2**70} has no training interactions"):
        items, _ = model.recommend(2**70, n=3)
    with pytest.warns(UserWarning, match="user 50 has no training interactions"):
        np.testing.assert_array_equal(items, model.recommend(50, n=3)[0])


def _mapped_csr(tmp_path, X):
    """X with its arrays memory-mapped from .npy files, as a cache entry's are."""
    arrays = {}
    for name in ("data", "indices", "indptr"):
        np.save(tmp_path / f"{name}.npy", getattr(X, name))
        arrays[name] = np.load(tmp_path / f"{name}.npy", mmap_mode="r")
    return sp.csr_matrix((arrays["data"], arrays["indices"], arrays["indptr"]), shape=X.shape)


@pytest.mark.parametrize("index", [-5, 2**31 - 1])
def test_a_mapped_matrix_edited_under_a_model_is_one_error_not_a_crash(tmp_path, index):
    """An in-memory click-log run segfaulted when its cached indices were overwritten
    in place mid-run: the train error read the map, past the model's end. A
    column index out of range anywhere was read unchecked too."""
    from hogwild.problems.sparse_svm import SparseSVM

    X = sp.random(400, 30, density=0.2, format="csr", random_state=0, dtype=np.float32)
    y = np.arange(400) % 2
    model = SparseSVM(epochs=1, workers=1, random_state=0).fit(X, y)
    mapped = _mapped_csr(tmp_path, X)
    expected = model.predict(X)
    np.testing.assert_array_equal(model.predict(mapped), expected)
    with open(tmp_path / "indices.npy", "r+b") as f:  # the last nonzero's column
        f.seek(-4, os.SEEK_END)
        f.write(np.int32(index).tobytes())
    with pytest.raises(HogwildError) as error:
        model.predict(mapped)
    assert str(error.value) == (f"{tmp_path / 'indices.npy'}: id {index} at position "
                                f"{X.nnz - 1:,} is not in 0..29")
    bad = X.copy()
    bad.indices[-1] = index
    with pytest.raises(HogwildError) as error:
        model.decision_function(bad)
    assert str(error.value) == f"id {index} at position {X.nnz - 1:,} is not in 0..29"


@pytest.mark.parametrize("command", [["run", "svm", "--epochs", "1"], ["stats", "svm"]])
def test_a_file_name_too_long_for_the_file_system_is_one_line(tmp_path, command):
    """A name of 300 bytes (ENAMETOOLONG from the first stat) was a traceback."""
    path = tmp_path / ("x" * 300)
    done = subprocess.run(HOGWILD + command + ["--data", str(path)], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == (f"hogwild: error: {path}: File name too long (a name in a path "
                           "takes at most 255 bytes)\n")
