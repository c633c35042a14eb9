"""backend "ray": stale synchronous parallel training on a local Ray instance.

What is asserted: the staleness bound holds under an injected straggler; staleness 0
with a serial local engine is bitwise a synchronous (BSP) reference computed here
without Ray; a node that dies mid-run is restarted and the run ends close to an
undisturbed one; pushes are sparse; bad settings get one-line errors.
"""
import functools
import ipaddress
import os
import re
import signal
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="backend 'ray' needs Ray (hogwild[distributed])")

from hogwild.datasets.synthetic import make_sparse_classification  # noqa: E402
from hogwild.backends.ray import SSPSettings, ray_token_path, start_local_ray  # noqa: E402
from hogwild.backends.sharding import FlatLayout, node_samples, piece_plans, run_seed  # noqa: E402
from hogwild.checkpoint import load_checkpoint  # noqa: E402
from hogwild.engine import fit  # noqa: E402
from hogwild.errors import DivergenceError, HogwildError  # noqa: E402
from launchers import CONSOLE_SCRIPT  # noqa: E402
from hogwild.kernels.compiler import compile_loops  # noqa: E402
from hogwild.problems.sparse_svm import (as_csr, auto_step, binary_labels,  # noqa: E402
                                         svm_file_objective, svm_objective)
from hogwild.schedulers import get_scheduler  # noqa: E402
from hogwild.steps import StepSchedule  # noqa: E402

STEP_DECAY = 0.9


def fit_ssp(objective, settings, **options):
    """hogwild.fit on backend "ray" with these SSP settings."""
    return fit(objective, backend="ray", distributed=settings, **options)


def _descendants(root):
    """The pids of ``root`` and every process under it (Linux /proc)."""
    children = {}
    for status in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = status.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(status.parent.name))
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo += [child for child in children.get(pid, []) if child not in found]
    return found


def _address(hex_address):
    """'0100007F:1F90' (/proc/net/tcp) -> ('127.0.0.1', '8080'); IPv6 in brackets."""
    host, port = hex_address.split(":")
    raw = bytes.fromhex(host)
    address = ipaddress.ip_address(b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4)))
    if len(raw) == 4:
        return str(address), str(int(port, 16))
    mapped = address.ipv4_mapped  # ::ffff:127.0.0.1, as ss prints it
    return f"[{f'::ffff:{mapped}' if mapped else address}]", str(int(port, 16))


def listening_sockets(root=None):
    """{(address, port)} of the listening TCP sockets held by process ``root`` (default:
    this one) and its descendants, such as the Ray instance it started: other jobs
    on the host are not ours to judge."""
    listening = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                listening[fields[9]] = _address(fields[1])
    held = set()
    for pid in _descendants(root or os.getpid()):
        try:
            links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
        except OSError:  # gone, or not ours to read
            continue
        held |= {link[len("socket:["):-1] for link in links if link.startswith("socket:[")}
    return {listening[inode] for inode in held if inode in listening}


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray instance for the module (starting one takes seconds), started
    as backend "ray" starts its own; yields the sockets this process held before."""
    before = listening_sockets()
    instance = start_local_ray(ray, 4)
    yield before
    instance.close()


@pytest.fixture(scope="module")
def svm():
    X, y = make_sparse_classification(3000, 4000, nnz_per_row=20, seed=0)
    X = as_csr(X)
    labels, _ = binary_labels(y, X.shape[0])
    return svm_objective(X, labels, "hinge", 1e-4, 0), auto_step(X)


def bsp_reference(objective, nodes, epochs, step, seed, clock_every):
    """Bulk synchronous SGD without Ray: each clock, every node runs its updates
    serially from the same state, then the deltas are added in node order."""
    loops = compile_loops(objective.update, objective.loss, objective.fastmath)
    layout = FlatLayout(objective.params, "ray")
    state = layout.flatten(objective.params)
    clocks = SSPSettings(clock_every=clock_every).clocks_per_epoch(objective.n_samples, nodes)
    schedule = StepSchedule("geometric", step, STEP_DECAY)
    serial = get_scheduler("serial")
    for clock in range(epochs * clocks):
        epoch, part = divmod(clock, clocks)
        deltas = []
        for node in range(nodes):
            replica = state.copy()
            first, last = node_samples(objective.n_samples, nodes, node)
            plan = piece_plans(serial.planner(last - first, 1), objective.n_samples, nodes,
                               node, clocks, epoch, run_seed(seed), 1)[part]
            assert plan.runs.min() >= first and plan.runs.max() < last
            loops.run_spans(plan.runs, np.array([[0, plan.runs.size, last]], np.int64), 1,
                            layout.views(replica), objective.data,
                            np.array([schedule(epoch)]), 0, 1, epoch)
            changed = np.flatnonzero(replica != state)
            deltas.append((changed, replica[changed] - state[changed]))
        for changed, delta in deltas:
            state[changed] += delta
    return state


def test_staleness_zero_with_a_serial_engine_is_bitwise_bulk_synchronous(local_ray, svm):
    objective, step = svm
    result = fit_ssp(objective, SSPSettings(nodes=3, staleness=0, clock_every=250, shards=2),
                     scheduler="serial", epochs=3, step=step, decay=STEP_DECAY, seed=7)
    expected = bsp_reference(objective, 3, 3, step, 7, 250)
    assert np.array_equal(FlatLayout(result.params, "ray").flatten(result.params), expected)
    assert result.distributed["max_staleness"] == 0
    # the step each epoch record keeps is the one the nodes report having applied
    assert [r.step for r in result.history] == pytest.approx(
        [step * STEP_DECAY ** epoch for epoch in range(3)], rel=1e-12)
    again = fit_ssp(objective, SSPSettings(nodes=3, staleness=0, clock_every=250, shards=2),
                    scheduler="serial", epochs=3, step=step, decay=STEP_DECAY, seed=7)
    assert [r.objective for r in again.history] == [r.objective for r in result.history]


@pytest.mark.parametrize("staleness", [0, 1, 3])
def test_observed_staleness_never_exceeds_the_bound_with_a_straggler(local_ray, svm,
                                                                     staleness):
    objective, step = svm
    result = fit_ssp(objective, SSPSettings(nodes=3, staleness=staleness, clock_every=100,
                                            slowdown={0: 4.0}),
                     epochs=2, step=step, decay=STEP_DECAY, seed=0)
    info = result.distributed
    # node 0 is 4x slower: the others run ahead until the bound stops them
    assert info["max_staleness"] == staleness
    assert info["clocks_per_epoch"] == 10 and info["pushes"] == 3 * 2 * 10
    assert len(result.history) == 2 and np.isfinite(result.objective)


def test_asynchronous_run_records_the_staleness_it_saw(local_ray, svm):
    objective, step = svm
    result = fit_ssp(objective, SSPSettings(nodes=2, staleness=None, clock_every=100,
                                            slowdown={1: 8.0}),
                     epochs=2, step=step, decay=STEP_DECAY, seed=0)
    assert result.distributed["max_staleness"] > 3  # no bound: node 0 ran well ahead
    assert sum(result.distributed["wait_seconds"]) < 0.5


def test_a_push_is_divided_by_the_pushes_applied_since_its_nodes_pull():
    """Staleness-aware Async-SGD: both nodes pulled at version 0; node 1 then pushes
    three times without pulling (tau 0, 1, 2: the last is halved), so node 0's push
    is 3 versions stale and adds a third of its deltas. A push of tau 0 or 1 is
    applied whole."""
    from hogwild.backends.ray.server import ParameterShard

    shard = ParameterShard(np.zeros(4, np.float32), nodes=2, ordered=False,
                           staleness_aware=True)
    for clock in (1, 2, 3):
        shard.push(1, clock, np.array([0], np.int32), np.array([1.0], np.float32), since=0)
    assert shard.push_staleness == [0, 1, 2]
    shard.push(0, 1, np.array([1, 2], np.int32), np.array([3.0, 6.0], np.float32), since=0)
    assert shard.values.tolist() == [2.5, 1.0, 2.0, 0.0]  # 1 + 1 + 1/2; 3/3, 6/3
    assert shard.staleness_summary() == {"mean_push_staleness": 1.5, "max_push_staleness": 3,
                                         "scaled_pushes": 2}
    plain = ParameterShard(np.zeros(2, np.float32), nodes=2, ordered=False)
    plain.push(1, 1, None, np.array([1.0, 1.0], np.float32), since=0)
    plain.push(0, 1, None, np.array([2.0, 0.0], np.float32), since=0)
    assert plain.values.tolist() == [3.0, 1.0] and plain.push_staleness == [0, 1]


def test_staleness_aware_steps_scale_down_a_stragglers_pushes(local_ray, svm):
    objective, step = svm
    result = fit_ssp(objective, SSPSettings(nodes=2, staleness=None, clock_every=100,
                                            slowdown={1: 4.0}, staleness_aware=True),
                     epochs=2, step=step, decay=STEP_DECAY, seed=0)
    info = result.distributed
    assert info["staleness_aware"] and info["scaled_pushes"] > 0
    assert info["max_push_staleness"] >= 3  # the straggler's: node 0 pushed meanwhile
    assert np.isfinite(result.objective) and result.history[-1].objective < \
        result.history[0].objective * 1.05


def test_a_node_that_dies_is_restarted_and_the_run_ends_near_an_undisturbed_one(local_ray,
                                                                                  svm):
    objective, step = svm
    settings = dict(nodes=2, staleness=1, clock_every=150)
    calm = fit_ssp(objective, SSPSettings(**settings), epochs=4, step=step,
                   decay=STEP_DECAY, seed=0)
    hit = fit_ssp(objective, SSPSettings(**settings, crash_at={1: 13}), epochs=4, step=step,
                  decay=STEP_DECAY, seed=0)
    assert hit.distributed["restarts"] == [{"node": 1, "clock": 12}]
    assert len(hit.history) == 4
    assert hit.objective == pytest.approx(calm.objective, rel=0.02)
    single = fit(objective, epochs=4, step=step, decay=STEP_DECAY, scheduler="serial", seed=0)
    assert calm.objective == pytest.approx(single.objective, rel=0.02)


def test_a_dead_server_shard_is_restored_from_the_last_checkpoint(local_ray, svm, tmp_path):
    """A parameter-server shard that dies (at the first push of clock 13, in epoch 2)
    is made again from the values the checkpoint after epoch 1 holds for its
    range, the nodes go on, and the run ends near the one that lost nothing;
    without a checkpoint the run stops, naming the shard."""
    objective, step = svm
    settings = dict(nodes=2, staleness=1, clock_every=150, shards=2)
    options = dict(epochs=4, step=step, decay=STEP_DECAY, seed=0)
    calm = fit_ssp(objective, SSPSettings(**settings), **options)
    hit = fit_ssp(objective, SSPSettings(**settings, crash_shard_at={1: 13}),
                  checkpoint=tmp_path / "run.npz", checkpoint_every=1, **options)
    assert hit.distributed["restored_shards"] == [{"shard": 1, "epoch": 2, "from_epoch": 1}]
    assert hit.distributed["restarts"] == []  # no node died
    assert len(hit.history) == 4
    assert hit.objective == pytest.approx(calm.objective, rel=0.02)
    with pytest.raises(HogwildError) as error:
        fit_ssp(objective, SSPSettings(**settings, crash_shard_at={1: 13}), **options)
    size = sum(p.size for p in objective.params)
    assert str(error.value) == (
        f"parameter-server shard 1 (parameters {round(size / 2):,} to {size - 1:,}) died in epoch "
        "2, and no checkpoint holds its values: pass checkpoint=PATH (--checkpoint) to "
        "restore a lost shard from the last one")


def test_on_failure_stop_names_the_node_and_keeps_the_servers_state(local_ray, svm,
                                                                    tmp_path):
    objective, step = svm
    settings = SSPSettings(nodes=2, staleness=0, clock_every=150, on_failure="stop",
                           crash_at={1: 15})
    path = tmp_path / "stopped.npz"
    with pytest.raises(HogwildError) as error:
        fit_ssp(objective, settings, epochs=3, step=step, decay=STEP_DECAY, seed=0,
                checkpoint=path)
    assert str(error.value) == (f"node 1 died at clock 14 (epoch 2); the run was stopped "
                                f"(on_failure='stop'); the parameters at the failure are in "
                                f"{path}")
    saved = load_checkpoint(path)  # epoch 1 done, and 4 clocks of epoch 2 in the state
    assert saved.epoch == 1 and saved.settings["stopped_at_clock"] == 14
    assert saved.params[0].any()
    with pytest.raises(HogwildError, match=r"; pass checkpoint=PATH to keep the parameters "
                                           r"at the failure$"):
        fit_ssp(objective, settings, epochs=3, step=step, decay=STEP_DECAY, seed=0)


def test_pushes_are_sparse(local_ray):
    """With clocks of 20 samples of 10 features out of 20,000, a push carries far
    fewer bytes than the dense vector (indices and values of changed coordinates)."""
    X, y = make_sparse_classification(2000, 20000, nnz_per_row=10, seed=1)
    X = as_csr(X)
    labels, _ = binary_labels(y, X.shape[0])
    result = fit_ssp(svm_objective(X, labels, "hinge", 1e-4, 0),
                     SSPSettings(nodes=2, staleness=1, clock_every=20), epochs=1,
                     step=auto_step(X), seed=0)
    info = result.distributed
    touched_per_push = 20 * 10  # at most: features of the clock's samples
    assert info["pushed_bytes"] <= info["pushes"] * touched_per_push * 8
    assert info["dense_push_bytes"] / info["pushed_bytes"] >= 20000 / touched_per_push / 2


@pytest.mark.parametrize("settings,message", [
    (dict(nodes=0), "nodes must be an integer from 1 to 4,096, got 0"),
    (dict(staleness=-1), "staleness must be an integer >= 0, got -1"),
    (dict(on_failure="retry"), "unknown on_failure 'retry'; choose one of: restart, stop"),
    (dict(slowdown={5: 2.0}), "slowdown: node 5 factor 2.0; nodes are 0..1 and factors >= 1"),
    (dict(crash_at={1: 0}), "crash_at: node 1 clock 0; nodes are 0..1 and clocks >= 1"),
    (dict(crash_shard_at={2: 5}), "crash_shard_at: shard 2 clock 5; shards are 0..1 and "
                                  "clocks >= 1"),
    (dict(staleness_aware="yes", staleness=1), "staleness_aware must be True or False, got "
                                               "'yes'"),
    (dict(staleness_aware=True), "staleness_aware scales pushes by their staleness, and with "
                                 "staleness=0 (bulk synchronous) none is stale; give a bound "
                                 ">= 1 or inf"),
])
def test_bad_settings(settings, message):
    with pytest.raises(HogwildError) as error:
        SSPSettings(**settings).checked()
    assert str(error.value) == message


def test_infinite_staleness_means_no_bound():
    assert SSPSettings(staleness=float("inf")).checked().staleness is None


def test_checkpoints_resume_bitwise_and_in_the_single_node_format(local_ray, svm, tmp_path):
    objective, step = svm
    settings = SSPSettings(nodes=2, staleness=0, clock_every=250)
    options = dict(step=step, decay=STEP_DECAY, seed=3, scheduler="serial")
    whole = fit_ssp(objective, settings, epochs=4, **options)
    path = tmp_path / "run.npz"
    fit_ssp(objective, settings, epochs=2, checkpoint=path, **options)
    assert load_checkpoint(path).epoch == 2
    resumed = fit_ssp(objective, settings, epochs=4, resume=path, **options)
    assert all(np.array_equal(a, b) for a, b in zip(resumed.params, whole.params))
    assert [r.objective for r in resumed.history] == [r.objective for r in whole.history]
    single = fit(objective, epochs=3, resume=path, **options)
    assert [r.epoch for r in single.history] == [1, 2, 3]


def test_callbacks_progress_checkpoints_and_divergence_mean_what_they_mean_elsewhere(
        local_ray, svm, tmp_path):
    """Ray runs the engine's epoch loop: the same callback, progress, checkpoint
    cadence and DivergenceError as threads and processes."""
    objective, step = svm
    path = tmp_path / "run.npz"
    seen, moved, saved_before = [], [], []

    def callback(record):
        seen.append(record)
        saved_before.append(load_checkpoint(path).epoch if path.exists() else 0)

    result = fit_ssp(objective, SSPSettings(nodes=2, clock_every=500), epochs=3, step=step,
                     seed=0, checkpoint=path, checkpoint_every=2, callback=callback,
                     progress=lambda done, total: moved.append((done, total)))
    assert seen == result.history and [r.epoch for r in seen] == [1, 2, 3]
    assert saved_before == [0, 0, 2] and load_checkpoint(path).epoch == 3
    n = objective.n_samples
    assert moved[-1] == (3 * n, 3 * n) and [done for done, _ in moved] == sorted(
        done for done, _ in moved)
    assert all(r.seconds > 0 and r.updates == n for r in result.history)
    with pytest.raises(DivergenceError, match=r"the objective grew from 1 to \S+ in epoch 1 "
                                              r"\(step 1e\+30\): training diverged; try a "
                                              r"smaller step"):
        fit_ssp(objective, SSPSettings(nodes=2), epochs=2, step=1e30, seed=0)


def test_ray_refuses_a_scheduler_it_cannot_run_before_starting_anything(svm):
    with pytest.raises(HogwildError) as error:
        fit_ssp(svm[0], SSPSettings(nodes=2), epochs=1, scheduler="colored")
    assert str(error.value) == ("backend 'ray' runs the schedulers hogwild, locked, serial; "
                                "got 'colored'")


def test_ctrl_c_on_ray_checkpoints_the_servers_state_and_exits_130(tmp_path):
    exe = CONSOLE_SCRIPT
    if exe is None:
        pytest.fail("the hogwild console script is neither beside this Python nor on PATH; "
                    "install the package")
    proc = subprocess.Popen([exe, "run", "svm", "--backend", "ray", "--nodes", "2",
                             "--epochs", "100000", "--seed", "0"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = proc.stdout.readline()  # training has started
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert first.startswith("epoch   1/100000"), err[-2000:]
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err
    match = re.search(r"hogwild: interrupted after epoch (\d+); checkpoint written to "
                      r"hogwild-svm-checkpoint.npz", err)
    assert match, err[-2000:]
    saved = load_checkpoint(tmp_path / "hogwild-svm-checkpoint.npz")
    assert saved.epoch == int(match.group(1)) and saved.settings["backend"] == "ray"


def test_nodes_can_load_their_data_themselves(local_ray, tmp_path):
    """A callable source is called on each node (here: an svmlight file); the run is
    bitwise the one with the same objective shipped from the driver."""
    from sklearn.datasets import dump_svmlight_file

    X, y = make_sparse_classification(1500, 800, nnz_per_row=15, seed=2)
    path = tmp_path / "train.svm"
    dump_svmlight_file(X, y, str(path), zero_based=False)
    source = functools.partial(svm_file_objective, str(path), seed=5)
    settings = SSPSettings(nodes=2, staleness=0, clock_every=200)
    loaded = fit_ssp(source, settings, epochs=2, step=0.5, seed=1, scheduler="serial")
    shipped = fit_ssp(source(), settings, epochs=2, step=0.5, seed=1, scheduler="serial")
    assert np.array_equal(loaded.params[0], shipped.params[0])
    assert loaded.history[-1].objective < loaded.history[0].objective


def test_the_engine_and_estimators_hand_backend_ray_to_the_parameter_server(local_ray, svm):
    from hogwild.problems.sparse_svm import SparseSVM

    X, y = make_sparse_classification(2000, 1000, nnz_per_row=15, seed=4)
    model = SparseSVM(epochs=2, backend="ray", distributed={"nodes": 2, "staleness": 1},
                      random_state=0).fit(X, y)
    assert model.distributed_["nodes"] == 2 and model.distributed_["max_staleness"] <= 1
    assert model.score(X, y) > 0.8
    with pytest.raises(HogwildError, match="^distributed is for backend 'ray' or 'mpi'; this "
                                           "run has backend 'threads'$"):
        fit(svm[0], epochs=1, distributed=SSPSettings())


def _least_squares_update(e, params, data, step):
    """A user's own objective, defined here and not in the library: 1-d least
    squares, f_e = (w[k_e] - target_e)^2 / 2."""
    k = data[0][e]
    params[0][k] -= step * (params[0][k] - data[1][e])


def _least_squares_loss(e, params, data):
    r = params[0][data[0][e]] - data[1][e]
    return 0.5 * r * r


def test_users_own_objective_and_every_problem_run_on_ray_unchanged(local_ray):
    from hogwild.datasets.jumbo import make_jumbo
    from hogwild.objective import Objective
    from hogwild.problems.graph_cuts import multiway_cut
    from hogwild.problems.matrix_completion import MatrixFactorization

    rng = np.random.default_rng(0)
    keys = rng.integers(0, 50, 4000).astype(np.int32)
    targets = rng.standard_normal(50).astype(np.float32)[keys]
    own = Objective(_least_squares_update, _least_squares_loss,
                    (np.zeros(50, np.float32),), (keys, targets), 4000)
    result = fit(own, epochs=5, step=0.05, backend="ray",
                 distributed=SSPSettings(nodes=3, staleness=2))
    means = np.bincount(keys, targets, 50) / np.maximum(np.bincount(keys, minlength=50), 1)
    np.testing.assert_allclose(result.params[0], means, atol=0.05)  # the least-squares optimum

    train, test, _ = make_jumbo(300, 200, 20_000, rank=3, noise=0.1, seed=0, folder=None)
    settings = dict(rank=4, epochs=8, random_state=0, step=0.04, init_scale=0.1)  # 8 epochs reach
    # the optimum from these; the defaults' smaller step and init need more of them
    model = MatrixFactorization(backend="ray", distributed={"nodes": 2, "staleness": 1},
                                **settings).fit(train, eval_set=test)
    alone = MatrixFactorization(workers=1, **settings).fit(train)
    assert model.history_[-1].objective == pytest.approx(alone.history_[-1].objective,
                                                         rel=0.05)
    # the test RMSE Metric, evaluated on the server's state, is the fitted model's
    rmse = np.sqrt(np.mean((model.predict(test.users, test.items) - test.values) ** 2))
    assert model.history_[-1].metrics["test_rmse"] == pytest.approx(rmse, rel=1e-5)

    u = np.arange(0, 199, dtype=np.int32)  # a path: the minimum 2-label cut is 1 edge
    cut = multiway_cut(200, u, u + 1, np.ones(199, np.float32), {0: 0, 199: 1}, 2,
                       epochs=60, backend="ray", distributed={"nodes": 2, "staleness": 1},
                       seed=0)
    assert cut.cut == 1.0


def test_cli_staleness_must_be_a_count_or_inf(capsys):
    from hogwild.cli import main

    assert main(["run", "svm", "--backend", "ray", "--staleness", "soon", "--epochs", "1"]) == 2
    assert capsys.readouterr().err == ("hogwild: error: --staleness: expected an integer >= 0 "
                                       "or inf, got 'soon'\n")


# --- issue 16, item 8: a local run is this machine's alone ----------------------------

@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads sockets from /proc (Linux)")
def test_a_local_ray_instance_listens_on_loopback_only(local_ray, svm):
    objective, step = svm
    fit_ssp(objective, SSPSettings(nodes=2), epochs=1, step=step, seed=0)  # actors up
    opened = listening_sockets() - local_ray
    assert opened, "Ray opened no listening socket of this test's: the probe sees nothing"
    exposed = sorted(f"{a}:{p}" for a, p in opened
                     if a not in ("127.0.0.1", "[::1]", "[::ffff:127.0.0.1]"))
    assert exposed == [], f"listening beyond the loopback interface: {exposed}"
    token = ray_token_path()
    if token.is_file():  # Ray writes it 0644; it grants access to the instance
        assert stat.S_IMODE(token.stat().st_mode) == 0o600


def test_a_local_run_ignores_ray_address_in_the_environment(tmp_path):
    """RAY_ADDRESS (or a cluster already running here) must not be joined silently;
    it used to fail with a ValueError about num_cpus."""
    env = dict(os.environ, RAY_ADDRESS="127.0.0.1:1")
    done = subprocess.run([sys.executable, "-m", "hogwild.cli", "run", "svm", "--backend", "ray",
                           "--epochs", "1", "--nodes", "2", "--json"], capture_output=True,
                          text=True, env=env, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("env", [{"RAY_AUTH_MODE": "disabled", "RAY_AUTH_TOKEN": "x" * 32},
                                 {"RAY_AUTH_TOKEN_PATH": "/nonexistent/token"}])
def test_joining_a_cluster_needs_token_authentication(tmp_path, env):
    env = {**{k: v for k, v in os.environ.items() if k != "RAY_AUTH_TOKEN"}, **env}
    done = subprocess.run([sys.executable, "-m", "hogwild.cli", "run", "svm", "--backend", "ray",
                           "--ray-address", "10.0.0.1:6379", "--epochs", "1"],
                          capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == ("hogwild: error: joining the Ray cluster at 10.0.0.1:6379 needs "
                           "Ray's token authentication: set RAY_AUTH_MODE=token and give the "
                           "cluster's token in RAY_AUTH_TOKEN or ~/.ray/auth_token (see the "
                           "README)\n")
