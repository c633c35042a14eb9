"""Checkpoints: atomic writes, bitwise resume, and refusal of bad files."""
import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from hogwild import HogwildError, Objective, fit
from hogwild.checkpoint import load_checkpoint
from hogwild.structure import Supports


def pair_update(e, params, data, step):
    u, v, target = data[0][e], data[1][e], data[2][e]
    residual = params[0][u] + params[1][v] - target
    params[0][u] -= step * residual
    params[1][v] -= step * residual


def pair_loss(e, params, data):
    residual = params[0][data[0][e]] + params[1][data[1][e]] - data[2][e]
    return 0.5 * residual * residual


def pair_objective(n=5000, seed=2, name="pairs"):
    rng = np.random.default_rng(seed)
    r, c = rng.integers(0, 300, n), rng.integers(0, 200, n)
    return Objective(pair_update, pair_loss, (np.zeros(300), np.zeros(200)),
                     (r, c, rng.standard_normal(n)), n, name=name,
                     supports=Supports.from_keys(r, c))


@pytest.mark.parametrize("scheduler,workers", [("serial", 1), ("cyclades", 2), ("colored", 2)])
def test_resumed_run_is_bitwise_an_uninterrupted_one(tmp_path, scheduler, workers):
    objective = pair_objective()
    options = dict(step=0.3, decay=0.9, scheduler=scheduler, workers=workers, seed=5,
                   shuffle_block=4)
    whole = fit(objective, epochs=6, **options)
    path = tmp_path / "run.npz"
    first = fit(objective, epochs=3, checkpoint=path, **options)
    assert load_checkpoint(path).epoch == 3
    resumed = fit(objective, epochs=6, resume=path, **options)
    for a, b in zip(whole.params, resumed.params):
        np.testing.assert_array_equal(a, b)
    assert [r.objective for r in resumed.history] == [r.objective for r in whole.history]
    assert [r.epoch for r in resumed.history] == list(range(1, 7))
    assert first.history == resumed.history[:3]


def test_checkpoint_every_and_the_saved_state(tmp_path):
    path = tmp_path / "run.npz"
    seen = []
    fit(pair_objective(), epochs=5, step=0.3, scheduler="serial", seed=1, checkpoint=path,
        checkpoint_every=2, callback=lambda record: seen.append(load_checkpoint(path).epoch
                                                                if path.exists() else 0))
    assert seen == [0, 0, 2, 2, 4]  # read before each epoch's own checkpoint is written
    saved = load_checkpoint(path)  # the last epoch is always saved
    assert saved.epoch == 5 and len(saved.history) == 5 and saved.objective == "pairs"
    assert saved.settings["scheduler"] == "serial" and saved.step == pytest.approx(0.3 * 0.1 ** 0)
    assert not list(tmp_path.glob(".*.tmp"))  # no temporary file left behind


def test_bad_checkpoints_are_refused_naming_the_problem(tmp_path):
    path = tmp_path / "run.npz"
    fit(pair_objective(), epochs=2, step=0.3, scheduler="serial", seed=1, checkpoint=path)
    raw = path.read_bytes()

    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(raw[:len(raw) // 2])
    with pytest.raises(HogwildError, match=r"checkpoint .*truncated.npz is truncated or not "
                                           r"a hogwild checkpoint \(BadZipFile"):
        load_checkpoint(truncated)

    with np.load(path) as archive:  # flip one parameter value, keep the header
        arrays = dict(archive)
    arrays["param_0"][3] += 1.0
    corrupted = tmp_path / "corrupted.npz"
    np.savez(corrupted, **arrays)
    with pytest.raises(HogwildError, match=r"corrupted.npz is corrupted: array 'param_0' "
                                           r"does not match its checksum"):
        load_checkpoint(corrupted)

    header = json.loads(arrays.pop("header").tobytes())
    for field, value, message in (
            ("format", "other", r"is not a hogwild checkpoint"),
            ("version", 99, r"has format version 99; this hogwild reads version 2")):
        edited = dict(arrays, header=np.frombuffer(json.dumps({**header, field: value})
                                                   .encode(), np.uint8))
        np.savez(tmp_path / "edited.npz", **edited)
        with pytest.raises(HogwildError, match=message):
            load_checkpoint(tmp_path / "edited.npz")

    with pytest.raises(HogwildError, match=r"checkpoint .*run.npz is for objective 'pairs', "
                                           r"not 'other'"):
        fit(pair_objective(name="other"), epochs=3, resume=path)
    with pytest.raises(HogwildError, match=r"run.npz has 5000 samples, this objective 4000"):
        fit(pair_objective(n=4000), epochs=3, resume=path)
    wide = pair_objective()
    wide = Objective(pair_update, pair_loss, (np.zeros(300), np.zeros(201)), wide.data,
                     wide.n_samples, name="pairs")
    with pytest.raises(HogwildError, match=r"run.npz: params\[1\] is float64\[200\] there, "
                                           r"float64\[201\] here"):
        fit(wide, epochs=3, resume=path)
    with pytest.raises(HogwildError, match=r"run.npz is after epoch 2, beyond epochs=1"):
        fit(pair_objective(), epochs=1, resume=path)
    with pytest.raises(HogwildError, match=r"checkpoint .*missing.npz does not exist"):
        fit(pair_objective(), epochs=3, resume=tmp_path / "missing.npz")


def test_a_resume_with_other_settings_or_data_is_refused_naming_the_field(tmp_path):
    """The bitwise-resume promise holds only for the same settings and data."""
    path = tmp_path / "run.npz"
    options = dict(step=0.3, scheduler="serial", seed=0)
    fit(pair_objective(), epochs=2, checkpoint=path, **options)
    for change, message in (
            ({"seed": 5}, "was written with seed=0, this run has seed=5; resume with the "
                          "same seed (or start afresh without resume)"),
            ({"step": 0.2}, "was written with step=0.3, this run has step=0.2; resume with "
                            "the same step (or start afresh without resume)"),
            ({"scheduler": "hogwild"}, "was written with scheduler='serial', this run has "
                                       "scheduler='hogwild'; resume with the same scheduler"),
            ({"shuffle_block": 4}, "was written with shuffle_block=1, this run has "
                                   "shuffle_block=4")):
        with pytest.raises(HogwildError) as error:
            fit(pair_objective(), epochs=3, resume=path, **{**options, **change})
        assert str(error.value).startswith(f"checkpoint {path} {message}")
    with pytest.raises(HogwildError) as error:  # same shapes and name, other values
        fit(pair_objective(seed=3), epochs=3, resume=path, **options)
    assert str(error.value) == (f"checkpoint {path} was written for other data (or another "
                                "order of it); resume with the same data and seed")
    fit(pair_objective(), epochs=2, checkpoint=path, **{**options, "seed": None})
    with pytest.raises(HogwildError) as error:
        fit(pair_objective(seed=3), epochs=3, resume=path, **{**options, "seed": None})
    assert str(error.value).endswith("its run had seed=None, which orders the data "
                                     "differently every run: give a seed to make a run "
                                     "resumable")
    assert fit(pair_objective(), epochs=3, resume=path, **options | {"seed": None}).history


@pytest.mark.parametrize("field,value,message", [
    ("epoch", "2", "field 'epoch' is missing or of the wrong type"),
    ("history", None, "field 'history' is missing or of the wrong type"),
    ("shapes", [[300]], "it describes 1 parameter arrays and holds 2"),
    ("planner_names", ["order"], "field 'planner_names' names arrays it does not hold"),
    ("history", [{"epoch": 1}, {"epoch": 2}], "field 'history' does not fit this run"),
    ("rng_state", {"bit_generator": "PCG64", "state": 7}, "field 'rng_state' does not fit "
                                                          "this run"),
])
def test_a_crafted_checkpoint_header_is_refused_naming_the_field(tmp_path, field, value,
                                                                 message):
    """Crafted by someone who knows the format and signs the header anew (a plain
    digest, no key): each field is still checked before anything uses it."""
    from hogwild.checkpoint import header_digest

    path = tmp_path / "run.npz"
    fit(pair_objective(), epochs=2, step=0.3, scheduler="serial", seed=1, checkpoint=path)
    with np.load(path) as archive:
        arrays = dict(archive)
    header = json.loads(arrays.pop("header").tobytes())
    header[field] = value
    header["digest"] = header_digest(header, None)
    np.savez(path, **arrays, header=np.frombuffer(json.dumps(header).encode(), np.uint8))
    with pytest.raises(HogwildError) as error:
        fit(pair_objective(), epochs=3, step=0.3, scheduler="serial", seed=1, resume=path)
    assert str(error.value) == f"checkpoint {path} has a malformed header: {message}"


KILLED_WRITER = textwrap.dedent("""
    import hashlib, sys
    import numpy as np
    from hogwild import Objective, fit

    def update(e, params, data, step):
        params[0][e % 1000] += step

    def loss(e, params, data):
        return 0.0

    log = open(sys.argv[2], "a")

    def record(r):  # logged before the engine writes that epoch's checkpoint
        log.write(f"{r.epoch} {hashlib.sha256(state[0].tobytes()).hexdigest()}\\n")
        log.flush()

    state = [None]
    big = np.zeros(8_000_000)  # 64 MB per write: a wide window to be killed in
    objective = Objective(update, loss, (np.zeros(1000), big), (np.zeros(1),), 5000,
                          name="killed")
    fit(objective, epochs=10_000, step=1.0, scheduler="serial", seed=0,
        checkpoint=sys.argv[1], evaluate=lambda params: state.__setitem__(0, params[0]) or {},
        callback=record)
""")


def _wait_for(process, happened, timeout):
    """Poll until ``happened()`` (or ``process`` has ended, or ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        if happened():
            return
        time.sleep(0.001)


def test_killing_the_writer_at_random_times_never_loses_the_checkpoint(tmp_path):
    """SIGKILL the whole run at random moments and, every other run, in the middle of
    writing a checkpoint: the file left always loads and is a version that was written."""
    script = tmp_path / "writer.py"
    script.write_text(KILLED_WRITER)
    path, log = tmp_path / "run.npz", tmp_path / "log.txt"
    rng = np.random.default_rng(0)
    interrupted_writes = runs = 0
    # 12 runs, and more (up to 40) until 5 kills have landed inside a write: on a
    # loaded host the write may end between seeing its file and the kill
    while runs < 12 or (interrupted_writes < 5 and runs < 40):
        run, runs = runs, runs + 1
        process = subprocess.Popen([sys.executable, str(script), str(path), str(log)])
        if run % 2:  # in the middle of a checkpoint write (its temporary file exists)
            _wait_for(process, lambda: list(tmp_path.glob(f".run.npz.{process.pid}-*.tmp")),
                      timeout=60)
        else:  # at a random moment once a checkpoint is there (however slow the start)
            _wait_for(process, path.exists, timeout=60)
            try:
                process.wait(timeout=rng.uniform(0.0, 1.0))
            except subprocess.TimeoutExpired:
                pass
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        interrupted_writes += bool(list(tmp_path.glob(f".run.npz.{process.pid}-*.tmp")))
        if not path.exists():
            continue
        saved = load_checkpoint(path)
        written = dict(line.split() for line in log.read_text().splitlines()
                       if len(line.split()) == 2)  # the last line may be cut short
        digest = hashlib.sha256(saved.params[0].tobytes()).hexdigest()
        assert written[str(saved.epoch)] == digest
        assert saved.params[1].shape == (8_000_000,)
    print(f"{interrupted_writes} of {runs} kills interrupted a write")
    assert path.exists() and interrupted_writes >= 5, interrupted_writes
