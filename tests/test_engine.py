"""The engine, schedulers, step schedules and the locked baseline."""
import dataclasses
import subprocess
import sys

import numpy as np
import pytest
from numba import njit

import hogwild
from hogwild import DivergenceError, HogwildError, Objective, fit
from hogwild.limits import usable_cores
from hogwild.kernels.compiler import compile_loops, fingerprint
from hogwild.structure import Supports, block_layout, blocked_copy
from hogwild.schedulers.conflicts import conflict_graph
from hogwild.schedulers import get_scheduler, shuffled_runs
from hogwild.results import EpochRecord
from hogwild.steps import SEGMENTS, StepSchedule, decay_clock, decay_holds


# --- objectives used as probes (module level so that numba can compile them) ----

def count_visit(e, params, data, step):
    params[0][e] += 1  # each sample owns its slot: no races, exact counts


def zero_loss(e, params, data):
    return 0.0


def racy_increment(e, params, data, step):
    """counter[0] += 1 as a non-atomic read-modify-write with a window in between."""
    counter = params[0]
    value = counter[0]
    acc = 0.0
    for i in range(data[0][0]):
        acc += i * 0.5
    if acc < 0:
        counter[8] = -1
    counter[0] = value + 1


def record_epoch(e, params, data, step, epoch):
    params[0][e] = epoch


def plain_python_helper(x):
    return x + 1


def update_calling_python(e, params, data, step):
    params[0][e] = plain_python_helper(params[0][e])


def exploding_update(e, params, data, step):
    params[0][0] = params[0][0] * 1e30 + 1.0


def dividing_update(e, params, data, step):
    params[0][0] -= step / data[0][e]  # data holds zeros


def ls_update(e, params, data, step):
    w = params[0]
    indptr, indices, values, y = data
    r = -y[e]
    for k in range(indptr[e], indptr[e + 1]):
        r += w[indices[k]] * values[k]
    for k in range(indptr[e], indptr[e + 1]):
        w[indices[k]] -= step * r * values[k]


def ls_loss(e, params, data):
    w = params[0]
    indptr, indices, values, y = data
    r = -y[e]
    for k in range(indptr[e], indptr[e + 1]):
        r += w[indices[k]] * values[k]
    return 0.5 * r * r


def racy_row_and_column_counts(e, params, data, step):
    """Non-atomic increments of the sample's row and column counters, with a window
    in between: two workers on the same row or column at once lose increments."""
    rows, cols = params[0], params[1]
    r, c = data[0][e], data[1][e]
    seen_r, seen_c = rows[r], cols[c]
    acc = 0.0
    for i in range(200):
        acc += i * 0.5
    if acc < 0:
        rows[0] = -1
    rows[r] = seen_r + 1
    cols[c] = seen_c + 1


def raise_on_row_three(e, params, data, step):
    if data[0][e] == 3:
        raise ValueError("row three")


def bipartite_counting_objective(n_rows=40, n_cols=30, n=60_000, grid=6, seed=0):
    """Samples that each touch one row and one column counter, in a block layout."""
    rng = np.random.default_rng(seed)
    r = rng.integers(0, n_rows, n)
    c = rng.integers(0, n_cols, n)
    order, row_labels, col_labels, layout = block_layout(r, c, grid, rng)
    data = (row_labels[r[order]].astype(np.int64), col_labels[c[order]].astype(np.int64))
    params = (np.zeros(n_rows, np.int64), np.zeros(n_cols, np.int64))
    return Objective(racy_row_and_column_counts, zero_loss, params, data, n, blocks=layout,
                     supports=Supports.from_keys(*data), integer_params=True)


def pair_update(e, params, data, step):
    """Least squares on a + b = target for the sample's (row, column) pair."""
    a, b = params
    r, c, target = data[0][e], data[1][e], data[2][e]
    err = a[r] + b[c] - target
    a[r] -= step * err
    b[c] -= step * err


def pair_loss(e, params, data):
    err = params[0][data[0][e]] + params[1][data[1][e]] - data[2][e]
    return 0.5 * err * err


def races_observed(attempt, scales=(1, 1, 4, 16, 64)):
    """Whether attempt(scale) saw a lost update in any of a few runs of growing size
    (``scale`` multiplies the work): on a loaded machine the threads of a short run
    may never run at the same moment, so one clean run proves nothing, while one of
    64 times the work that loses nothing would mean the probe cannot race."""
    return any(attempt(scale) for scale in scales)


def counting_objective(n):
    return Objective(count_visit, zero_loss, params=np.zeros(n, np.int64), integer_params=True,
                     data=np.zeros(1), n_samples=n)


def least_squares(n=2000, d=50, seed=0):
    import scipy.sparse as sp
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.1, format="csr", random_state=seed, dtype=np.float32)
    w_true = rng.standard_normal(d).astype(np.float32)
    y = (X @ w_true).astype(np.float32)
    return Objective(ls_update, ls_loss, params=np.zeros(d, np.float32),
                     data=(X.indptr, X.indices, X.data, y), n_samples=n), w_true


@njit
def half_squared_norm_times_n(params, data):
    """A ridge penalty 0.5 ||w||^2 per sample, summed over the n = data[3].size samples."""
    w = params[0]
    return 0.5 * data[3].size * np.sum(w.astype(np.float64) ** 2)


@pytest.mark.parametrize("backend", ["threads", "processes"])
def test_an_objectives_penalty_is_added_once_per_sample_to_its_measured_value(backend):
    """Objective(penalty=fn): every measured objective is the mean loss plus fn / n,
    fn computed once over the parameters (not per sample)."""
    plain, _ = least_squares()
    ridge = dataclasses.replace(plain, penalty=half_squared_norm_times_n)
    runs = [fit(o, epochs=3, step=0.05, seed=0, backend=backend, objective_every=1,
                scheduler="serial") for o in (plain, ridge)]
    assert runs[0].params[0].tobytes() == runs[1].params[0].tobytes()  # the same steps
    for without, with_penalty in zip(runs[0].history, runs[1].history):
        assert with_penalty.objective > without.objective
    w = runs[1].params[0].astype(np.float64)
    assert np.isclose(runs[1].history[-1].objective,
                      runs[0].history[-1].objective + 0.5 * np.sum(w ** 2), rtol=1e-12)


# --- schedulers ---------------------------------------------------------------------

@pytest.mark.parametrize("block", [1, 3, 16])
@pytest.mark.parametrize("n", [1, 10, 1001])
def test_shuffled_runs_cover_every_sample_once(n, block):
    runs = shuffled_runs(n, block, np.random.default_rng(0))
    assert runs.dtype == np.int64
    covered = np.concatenate([np.arange(r, min(r + block, n)) for r in runs])
    np.testing.assert_array_equal(np.sort(covered), np.arange(n))


def test_shuffled_runs_are_in_random_order():
    runs = shuffled_runs(100, 10, np.random.default_rng(1))
    np.testing.assert_array_equal(np.sort(runs), np.arange(0, 100, 10))
    assert not np.array_equal(runs, np.arange(0, 100, 10))


SHUFFLED = ("hogwild", "locked", "serial")


@pytest.mark.parametrize("name", SHUFFLED)
@pytest.mark.parametrize("workers", [1, 2, 3])
def test_plan_splits_every_sample_once(name, workers):
    plan = get_scheduler(name).prepare(counting_objective(1000), workers).plan(
        np.random.default_rng(0), 7)
    expected_workers = 1 if name == "serial" else workers
    (phase,) = plan.phases
    assert len(phase) == expected_workers and all(len(share) == 1 for share in phase)
    spans = [span for share in phase for span in share]
    assert spans[0][0] == 0 and spans[-1][1] == plan.runs.size
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    assert all(limit == 1000 for _, _, limit in spans) and plan.run_length == 7
    assert plan.kind == ("locked" if name == "locked" else "spans")


def test_block_layout_groups_samples_by_row_and_column_block():
    rng = np.random.default_rng(3)
    r, c = rng.integers(0, 50, 5000), rng.integers(0, 20, 5000)
    order, row_labels, col_labels, layout = block_layout(r, c, 4, np.random.default_rng(0))
    np.testing.assert_array_equal(np.sort(order), np.arange(5000))
    np.testing.assert_array_equal(np.sort(row_labels), np.arange(50))
    for i in range(4):
        for j in range(4):
            start, stop = layout.block(i, j)
            assert np.all(row_labels[r[order[start:stop]]] * 4 // 50 == i)
            assert np.all(col_labels[c[order[start:stop]]] * 4 // 20 == j)
    assert layout.offsets[-1] == 5000


LAYOUT_SCRIPT = """
import hashlib, sys, numpy as np
import hogwild.structure as structure
structure._PARTS = int(sys.argv[1])
rng = np.random.default_rng(5)
r, c = rng.integers(0, 300, 40_000, dtype=np.int32), rng.integers(0, 90, 40_000)
order = structure.block_layout(r, c, 6, np.random.default_rng(1))[0]
sys.stdout.write(hashlib.sha256(order.tobytes()).hexdigest())
"""


@pytest.mark.determinism
def test_block_layout_is_a_function_of_the_seed_alone():
    """The compiled layout: the same order when its work is cut in 1, 2 or 3 parts
    (threads) and in another process, samples shuffled within each block."""
    runs = {subprocess.run([sys.executable, "-c", LAYOUT_SCRIPT, str(parts)],
                           capture_output=True, text=True, check=True).stdout
            for parts in (1, 2, 3, 1)}
    assert len(runs) == 1
    rng = np.random.default_rng(5)
    r, c = rng.integers(0, 300, 40_000, dtype=np.int32), rng.integers(0, 90, 40_000)
    order, row_labels, col_labels, layout = block_layout(r, c, 6, np.random.default_rng(1))
    start, stop = layout.block(2, 3)
    assert not np.all(np.diff(order[start:stop]) > 0)  # not left in input order


def test_blocked_copy_stores_what_the_block_order_gathers():
    """blocked_copy, from dense keys or from raw ids through index tables, equals
    numpy's gathers by block_layout's order for the same seed."""
    rng = np.random.default_rng(7)
    r, c = rng.integers(0, 300, 30_000), rng.integers(0, 90, 30_000, dtype=np.int32)
    values = rng.standard_normal(30_000).astype(np.float32)
    order, row_labels, col_labels, layout = block_layout(r, c, 5, np.random.default_rng(2))
    rows, cols, out, row_labels2, col_labels2, layout2 = blocked_copy(
        r, c, values, 5, np.random.default_rng(2))
    assert rows.dtype == cols.dtype == np.int32 and out.dtype == np.float32
    np.testing.assert_array_equal(rows, row_labels[r[order]])
    np.testing.assert_array_equal(cols, col_labels[c[order]])
    np.testing.assert_array_equal(out, values[order])
    np.testing.assert_array_equal(layout2.offsets, layout.offsets)
    # raw ids 1000 * dense index + 17, mapped by a table (-1 for ids that do not occur)
    table = np.full(300 * 1000 + 18, -1, np.int32)
    table[np.arange(300) * 1000 + 17] = np.arange(300)
    raw_rows, raw_cols, raw_out, raw_labels, _, _ = blocked_copy(
        r * 1000 + 17, c, values, 5, np.random.default_rng(2), row_index=table)
    np.testing.assert_array_equal(raw_labels, row_labels)
    np.testing.assert_array_equal(raw_rows, rows)
    np.testing.assert_array_equal(raw_out, out)


@pytest.mark.parametrize("workers", [1, 2, 5])
def test_blocked_plan_runs_each_block_once_without_conflicts(workers):
    objective = bipartite_counting_objective(grid=4)
    layout = objective.blocks
    plan = get_scheduler("blocked").prepare(objective, workers).plan(
        np.random.default_rng(0))
    (phase,) = plan.phases
    assert len(phase) == min(workers, 4) and plan.kind == "gated" and plan.gates == 8
    np.testing.assert_array_equal(plan.runs, layout.offsets[:-1])
    rows = np.concatenate(phase)
    lo, hi, limit, row_gate, col_gate, level = rows.T
    assert np.all(hi == lo + 1) and np.all(limit == layout.offsets[hi])
    i, j = np.divmod(lo, 4)
    np.testing.assert_array_equal(row_gate, i)
    np.testing.assert_array_equal(col_gate, 4 + j)
    assert sorted(zip(i, j)) == [(a, b) for a in range(4) for b in range(4)]
    for round_ in range(4):  # each round: one block per grid row and per grid column
        assert sorted(i[level == round_]) == sorted(j[level == round_]) == [0, 1, 2, 3]
    for share in phase:  # a worker keeps its grid rows and runs its blocks round by round
        assert np.all(np.diff(share[:, 5]) >= 0)
        others = [set(other[:, 3]) for other in phase if other is not share]
        assert all(not set(share[:, 3]) & rows_of_other for rows_of_other in others)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("backend", ["threads", "processes"])
@pytest.mark.parametrize("scheduler", ["locked", "blocked", "fpsgd", "colored", "cyclades"])
def test_a_failing_worker_releases_the_gates(scheduler, backend):
    """An update that raises in one worker stops the others instead of leaving them
    waiting on gates, compiled barriers or the lock it held forever."""
    objective = bipartite_counting_objective(n=2000, grid=4)
    failing = Objective(raise_on_row_three, zero_loss, objective.params, objective.data,
                        objective.n_samples, blocks=objective.blocks,
                        supports=objective.supports, integer_params=True)
    for seed in range(3):  # the failing update falls in either worker's share
        with pytest.raises(ValueError, match="row three"):
            fit(failing, epochs=1, workers=2, scheduler=scheduler, backend=backend, seed=seed)


@pytest.mark.parametrize("scheduler", ["colored", "cyclades"])
@pytest.mark.parametrize("workers", [1, 3])
def test_conflict_free_plans_cover_every_sample_once_without_conflicts(scheduler, workers):
    objective = bipartite_counting_objective(n_rows=300, n_cols=200, n=3000)
    keys = objective.supports.indices.reshape(-1, 2)
    planner = get_scheduler(scheduler).prepare(objective, workers)
    plan = planner.plan(np.random.default_rng(0))
    assert plan.run_length == 1 and plan.kind == "phased" and not plan.gates
    np.testing.assert_array_equal(np.sort(plan.runs), np.arange(3000))
    (shares,) = plan.phases
    assert len(shares) == workers and all(share.shape == (plan.barriers, 4) for share in shares)
    for p in range(plan.barriers):
        rows = [share[p] for share in shares]
        assert all(row[3] == p and row[2] == 3000 for row in rows)
        assert all(a[1] == b[0] for a, b in zip(rows, rows[1:]))  # phases tile the runs
        touched = [set(keys[plan.runs[lo:hi]].ravel().tolist()) for lo, hi, _, _ in rows]
        for a in range(len(touched)):  # workers of one phase share no coordinate
            for b in range(a + 1, len(touched)):
                assert not touched[a] & touched[b]
        if scheduler == "colored":  # within a colour class no two samples conflict
            samples = np.concatenate([plan.runs[lo:hi] for lo, hi, _, _ in rows])
            flat = keys[samples].ravel()
            assert np.unique(flat).size == flat.size


@pytest.mark.parametrize("scheduler", ["colored", "cyclades"])
def test_conflict_free_schedulers_are_exact_and_bitwise_reproducible(scheduler):
    """Racy counters stay exact (no two workers ever touch one coordinate), and a
    float objective gives identical bits with 1 and 2 workers."""
    objective = bipartite_counting_objective(n_rows=400, n_cols=300, n=20_000)
    result = fit(objective, epochs=2, workers=2, scheduler=scheduler, seed=0)
    assert result.params[0].sum() == result.params[1].sum() == 40_000
    rng = np.random.default_rng(1)
    r, c = rng.integers(0, 300, 5000), rng.integers(0, 200, 5000)
    target = rng.standard_normal(5000)
    data = (r, c, target)
    mf = Objective(pair_update, pair_loss, (np.zeros(300), np.zeros(200)), data, 5000,
                   supports=Supports.from_keys(r, c))
    runs = [fit(mf, epochs=3, step=0.3, workers=w, scheduler=scheduler, seed=s).params
            for w, s in ((1, 4), (2, 4), (2, 5))]
    for a, b in zip(runs[0], runs[1]):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(runs[0][0], runs[2][0])
    # a step that falls within the epoch is read by phase, the same for any workers
    within = dict(epochs=2, step=0.5, decay=4.0, step_schedule="inverse_updates",
                  scheduler=scheduler, seed=4)
    runs = [fit(mf, workers=w, **within).params for w in (1, 2)]
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(runs[0][0], fit(mf, workers=1, **{**within, "decay": 1.0}
                                              ).params[0])


def test_the_objective_is_bitwise_the_same_on_any_cpu_backend_and_worker_count():
    """The epoch's objective is summed in fixed chunks (the threads backend's
    workers share them), so a conflict-free run records the same bits with 1 or 2
    threads and on processes, within rounding of one float64 sum."""
    rng = np.random.default_rng(2)
    n = 50_000  # three chunks and a part
    r, c = rng.integers(0, 300, n), rng.integers(0, 200, n)
    mf = Objective(pair_update, pair_loss, (np.zeros(300), np.zeros(200)),
                   (r, c, rng.standard_normal(n)), n, supports=Supports.from_keys(r, c))
    runs = [fit(mf, epochs=2, step=0.3, workers=w, backend=b, scheduler="colored", seed=3)
            for w, b in ((1, "threads"), (2, "threads"), (2, "processes"))]
    objectives = [[record.objective for record in run.history] for run in runs]
    assert objectives[0] == objectives[1] == objectives[2]
    loops = compile_loops(pair_update, pair_loss)
    whole = loops.sum_loss(runs[0].params, mf.data, 0, n) / n
    assert objectives[0][-1] == pytest.approx(whole, rel=1e-12)


@pytest.mark.parametrize("shuffle_block", [1, 7])
def test_cyclades_first_epoch_equals_serial_bit_for_bit(shuffle_block):
    """CYCLADES' first epoch runs the serial scheduler's order, only split into
    independent components: its parameters equal serial's exactly, for any
    worker count."""
    rng = np.random.default_rng(2)
    r, c = rng.integers(0, 300, 5000), rng.integers(0, 200, 5000)
    mf = Objective(pair_update, pair_loss, (np.zeros(300), np.zeros(200)),
                   (r, c, rng.standard_normal(5000)), 5000, supports=Supports.from_keys(r, c))
    serial = fit(mf, epochs=1, step=0.3, scheduler="serial", seed=8,
                 shuffle_block=shuffle_block).params
    for workers in (1, 2, 3):
        cyclades = fit(mf, epochs=1, step=0.3, workers=workers, scheduler="cyclades", seed=8,
                       shuffle_block=shuffle_block).params
        for a, b in zip(serial, cyclades):
            np.testing.assert_array_equal(a, b)


def test_cyclades_reuses_its_batches_in_a_new_order_each_epoch():
    objective = bipartite_counting_objective(n_rows=300, n_cols=200, n=3000)
    planner = get_scheduler("cyclades").prepare(objective, 2)
    rng = np.random.default_rng(0)
    first, second = planner.plan(rng), planner.plan(rng)
    assert first.barriers == second.barriers == -(-3000 // planner.batch)

    def batches(plan):
        (shares,) = plan.phases
        return [frozenset(plan.runs[shares[0][p, 0]:shares[-1][p, 1]].tolist())
                for p in range(plan.barriers)]

    assert set(batches(first)) == set(batches(second))  # the same batches...
    assert batches(first) != batches(second)  # ...in another order


def test_colored_refuses_a_nearly_complete_conflict_graph():
    rng = np.random.default_rng(0)
    keys = np.zeros(8000, np.int64), rng.integers(0, 100, 8000)  # one coordinate in all
    objective = Objective(pair_update, pair_loss, (np.zeros(1), np.zeros(100)),
                          keys + (np.zeros(8000),), 8000, supports=Supports.from_keys(*keys))
    with pytest.raises(HogwildError, match=r"^scheduler 'colored' needs at least 8000 colours "
                                           r"for these 8000 samples \(one coordinate is in "
                                           r"100% of them\), so colour classes would average "
                                           r"fewer than 16 samples and run nearly serially; use "
                                           r"scheduler='cyclades'$"):
        fit(objective, scheduler="colored")
    with pytest.raises(HogwildError, match=r"would list [0-9,]+ sample pairs \(one coordinate "
                                           r"is in 8000 samples, 100%\); colouring it is "
                                           r"impractical, use scheduler='cyclades'"):
        conflict_graph(objective.supports)
    with pytest.raises(HogwildError, match="scheduler 'cyclades' needs the samples' supports"):
        fit(counting_objective(10), scheduler="cyclades")


@pytest.mark.parametrize("scheduler,workers,backend", [
    ("blocked", 2, "threads"), ("fpsgd", 2, "threads"), ("fpsgd", 3, "threads"),
    ("fpsgd", 2, "processes")])
def test_blocked_workers_never_collide(scheduler, workers, backend):
    """Racy row/column counters stay exact under ``blocked`` and ``fpsgd`` (and lose
    counts under ``hogwild``): blocks that run together are conflict-free, and each
    runs once an epoch."""
    objective = bipartite_counting_objective()
    result = fit(objective, epochs=2, workers=workers, scheduler=scheduler, seed=0,
                 backend=backend)
    rows, cols = objective.data
    np.testing.assert_array_equal(result.params[0], 2 * np.bincount(rows, minlength=40))
    np.testing.assert_array_equal(result.params[1], 2 * np.bincount(cols, minlength=30))
    if usable_cores() >= 2:
        def loses_counts(scale):
            racy = bipartite_counting_objective(n=60_000 * scale)
            return fit(racy, epochs=2, workers=2, scheduler="hogwild",
                       seed=scale).params[0].sum() < 2 * racy.n_samples
        assert races_observed(loses_counts), "probe too weak"


def test_blocked_needs_a_block_layout():
    with pytest.raises(HogwildError, match="scheduler 'blocked' needs an objective with a "
                                           "block layout"):
        fit(counting_objective(10), scheduler="blocked")


# --- the engine on probe objectives ---------------------------------------------

@pytest.mark.parametrize("scheduler", SHUFFLED)
@pytest.mark.parametrize("workers,block", [(1, 1), (2, 1), (3, 7)])
def test_every_sample_updated_once_per_epoch(scheduler, workers, block):
    result = fit(counting_objective(5000), epochs=3, workers=workers, scheduler=scheduler,
                 seed=0, shuffle_block=block)
    np.testing.assert_array_equal(result.params[0], 3)
    assert [r.updates for r in result.history] == [5000, 5000, 5000]
    assert [r.epoch for r in result.history] == [1, 2, 3]


def test_an_update_that_takes_the_epoch_receives_it():
    objective = Objective(record_epoch, zero_loss, params=np.full(50, -1, np.int64),
                          integer_params=True,
                          data=np.zeros(1), n_samples=50)
    for epochs in (1, 3):
        np.testing.assert_array_equal(fit(objective, epochs=epochs, workers=2).params[0],
                                      epochs - 1)


def test_fit_does_not_modify_the_callers_params():
    objective = counting_objective(100)
    fit(objective, epochs=1, workers=2)
    np.testing.assert_array_equal(objective.params[0], 0)


def test_callback_is_called_once_per_epoch_with_the_record():
    seen = []
    result = fit(counting_objective(100), epochs=4, workers=1, callback=seen.append,
                 evaluate=lambda params: {"total": int(params[0].sum())})
    assert seen == result.history
    assert [r.metrics["total"] for r in seen] == [100, 200, 300, 400]


def test_locked_scheduler_really_locks():
    """Exact count under the lock; without it, racing workers lose increments."""
    n, epochs = 100_000, 2

    def run(scheduler, samples=n):
        objective = Objective(racy_increment, zero_loss, params=np.zeros(16, np.int64),
                              integer_params=True,
                              data=np.array([64], np.int64), n_samples=samples)
        return int(fit(objective, epochs=epochs, workers=2, scheduler=scheduler,
                       seed=0).params[0][0])

    assert run("locked") == n * epochs
    if usable_cores() >= 2:
        assert races_observed(lambda scale: run("hogwild", n * scale) < n * scale * epochs), \
            "no lost update without the lock: probe too weak"


@pytest.mark.parametrize("backend", ["threads", "processes"])
def test_more_workers_than_four_per_core_need_oversubscribe(monkeypatch, backend):
    monkeypatch.setattr("hogwild.limits.usable_cores", lambda: 1)
    objective = Objective(racy_increment, zero_loss, params=np.zeros(16, np.int64),
                          integer_params=True,
                          data=np.array([64], np.int64), n_samples=1000)
    with pytest.raises(HogwildError) as error:
        fit(objective, epochs=1, workers=5, scheduler="locked", backend=backend)
    assert str(error.value) == ("workers=5 is more than 4 per usable core (1 here); use at "
                                "most 4, or oversubscribe=True (--oversubscribe) to run "
                                "them anyway")
    result = fit(objective, epochs=2, workers=5, scheduler="locked", backend=backend,
                 oversubscribe=True)
    assert result.workers == 5 and int(result.params[0][0]) == 2000


def test_serial_is_bitwise_reproducible_for_a_seed():
    objective, _ = least_squares()
    runs = [fit(objective, epochs=3, step=0.3, scheduler="serial", seed=s).params[0]
            for s in (7, 7, 8)]
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])


@pytest.mark.parametrize("scheduler,workers", [("serial", 1), ("hogwild", 2), ("locked", 2)])
def test_least_squares_recovers_the_planted_solution(scheduler, workers):
    objective, w_true = least_squares()
    result = fit(objective, epochs=60, step=0.5, scheduler=scheduler, workers=workers, seed=0)
    np.testing.assert_allclose(result.params[0], w_true, atol=1e-3)
    assert result.objective < 1e-7
    assert result.workers == workers


def test_divergence_names_the_epoch_and_suggests_a_smaller_step():
    objective = Objective(exploding_update, zero_loss, params=np.ones(4, np.float32),
                          data=np.zeros(1), n_samples=100)
    with pytest.raises(DivergenceError, match=r"NaN or Inf in epoch 1 \(step 0.1\); "
                                              r"try a smaller step"):
        fit(objective, epochs=3, step=0.1, workers=1)


def test_a_division_by_zero_in_an_update_is_reported_as_divergence():
    """The loops compile with NumPy's error model (no test before each division, see
    docs/engine.md): 1 / 0 gives Inf, which the finite check names after the epoch."""
    objective = Objective(dividing_update, zero_loss, params=np.ones(4, np.float32),
                          data=(np.zeros(100, np.float32),), n_samples=100)
    with pytest.raises(DivergenceError, match=r"NaN or Inf in epoch 1 \(step 0.1\)"):
        fit(objective, epochs=2, step=0.1, workers=1)


def test_objective_every_measures_only_the_epochs_asked_and_changes_no_bit():
    """Epochs not measured record NaN and the run's parameters are the same bits; the
    last epoch is always measured; diverging parameters are still caught."""
    objective, _ = least_squares(n=500)
    every = fit(objective, epochs=5, step=0.5, scheduler="serial", seed=0)
    for asked, measured in ((2, [2, 4, 5]), (None, [5])):
        run = fit(objective, epochs=5, step=0.5, scheduler="serial", seed=0,
                  objective_every=asked)
        np.testing.assert_array_equal(run.params[0], every.params[0])
        for got, want in zip(run.history, every.history):
            if got.epoch in measured:
                assert got.objective == want.objective
            else:
                assert np.isnan(got.objective)
    exploding = Objective(exploding_update, zero_loss, params=np.ones(4, np.float32),
                          data=np.zeros(1), n_samples=100)
    with pytest.raises(DivergenceError, match=r"NaN or Inf in epoch 1 \(step 0.1\)"):
        fit(exploding, epochs=3, step=0.1, workers=1, objective_every=None)
    with pytest.raises(HogwildError, match="objective_every must be an integer"):
        fit(objective, epochs=1, objective_every=0)


# --- validation -------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,message", [
    ({"workers": 0}, "workers must be an integer >= 1, got 0"),
    ({"workers": 1.5}, "workers must be an integer >= 1, got 1.5"),
    ({"epochs": 0}, "epochs must be an integer from 1 to 1,000,000, got 0"),
    ({"step": 0}, "step must be a finite number > 0, got 0"),
    ({"step": -1.0}, r"step must be a finite number > 0, got -1.0"),
    ({"step": float("nan")}, "step must be a finite number > 0, got nan"),
    ({"scheduler": "fast"}, "unknown scheduler 'fast'; choose one of: hogwild, locked, serial, "
                            "blocked, fpsgd, colored, cyclades"),
    ({"backend": "tcp"}, "unknown backend 'tcp'; choose one of: threads"),
    ({"step_schedule": "cosine"},
     "unknown step schedule 'cosine'; choose one of: constant, geometric, inverse, "
     "inverse_updates"),
    ({"decay": 1.5}, r"decay must be in \(0, 1\] for the geometric schedule, got 1.5"),
    ({"step_schedule": "constant", "decay": 0.5},
     "decay=0.5 has no effect with the constant schedule"),
    ({"shuffle_block": 0}, "shuffle_block must be an integer from 1 to 2,147,483,647, got 0"),
])
def test_bad_fit_arguments_are_named(kwargs, message):
    with pytest.raises(HogwildError, match=message):
        fit(counting_objective(10), **kwargs)


def test_an_uncompilable_update_is_reported_with_numbas_reason():
    objective = Objective(update_calling_python, zero_loss, params=np.zeros(4),
                          data=np.zeros(1), n_samples=4, name="mine")
    with pytest.raises(HogwildError, match=r"(?s)numba could not compile the update or loss "
                                           r"of objective 'mine'.*plain_python_helper"):
        fit(objective, epochs=1, workers=1)


def test_objective_validation():
    with pytest.raises(HogwildError, match="empty data: objective 'objective' has no samples"):
        Objective(count_visit, zero_loss, params=np.zeros(3), data=np.zeros(1), n_samples=0)
    with pytest.raises(HogwildError, match=r"params\[0\] must be a numpy array, got list"):
        Objective(count_visit, zero_loss, params=[[1.0]], data=np.zeros(1), n_samples=1)
    with pytest.raises(HogwildError, match=r"data\[0\] must be C-contiguous"):
        Objective(count_visit, zero_loss, params=np.zeros(3),
                  data=np.zeros((4, 4))[:, ::2], n_samples=1)
    with pytest.raises(HogwildError, match="update must be a Python function, got int"):
        Objective(3, zero_loss, params=np.zeros(3), data=np.zeros(1), n_samples=1)
    with pytest.raises(HogwildError, match=r"update must take \(e, params, data, step\[, "
                                           r"epoch\]\); zero_loss takes 3 arguments"):
        Objective(zero_loss, zero_loss, params=np.zeros(3), data=np.zeros(1), n_samples=1)
    with pytest.raises(HogwildError, match=r"loss must take \(e, params, data\); count_visit "
                                           "takes 4 arguments"):
        Objective(count_visit, count_visit, params=np.zeros(3), data=np.zeros(1), n_samples=1)
    with pytest.raises(HogwildError, match=r"penalty must take \(params, data\); zero_loss "
                                           "takes 3 arguments"):
        Objective(count_visit, zero_loss, params=np.zeros(3), data=np.zeros(1), n_samples=1,
                  penalty=zero_loss)
    with pytest.raises(HogwildError, match="objective must be a hogwild.Objective, got dict"):
        fit({})


def test_metrics_are_computed_after_every_epoch_on_held_out_data():
    """A Metric's finish(mean of value over its own samples), under its name, in every
    epoch's record; the last equals NumPy's on the returned parameters."""
    import scipy.sparse as sp
    objective, w_true = least_squares()
    X = sp.random(500, 50, density=0.1, format="csr", random_state=7, dtype=np.float32)
    y = (X @ w_true).astype(np.float32) + np.float32(0.1)
    rms = hogwild.Metric("test_rms_residual", ls_loss, (X.indptr, X.indices, X.data, y), 500,
                         finish=lambda mean: np.sqrt(2 * mean))
    half = hogwild.Metric("test_half_mse", ls_loss, (X.indptr, X.indices, X.data, y), 500)
    result = fit(objective, epochs=3, step=0.5, scheduler="serial", workers=1, seed=0,
                 evaluate=[rms, half])
    residual = X @ result.params[0].astype(np.float64) - y
    assert result.history[-1].metrics["test_rms_residual"] == pytest.approx(
        np.sqrt(np.mean(residual ** 2)), rel=1e-5)
    assert result.history[-1].metrics["test_half_mse"] == pytest.approx(
        0.5 * np.mean(residual ** 2), rel=1e-5)
    assert [sorted(r.metrics) for r in result.history] == [["test_half_mse",
                                                            "test_rms_residual"]] * 3


def test_bad_metrics_are_named():
    data = (np.zeros(2),)
    with pytest.raises(HogwildError, match=r"metric 'm' value must take \(e, params, data\); "
                                           "count_visit takes 4 arguments"):
        hogwild.Metric("m", count_visit, data, 2)
    with pytest.raises(HogwildError, match="metric 'm' has no samples"):
        hogwild.Metric("m", zero_loss, data, 0)
    with pytest.raises(HogwildError, match=r"metric 'm' data\[0\] must be a numpy array"):
        hogwild.Metric("m", zero_loss, ([1.0],), 1)
    with pytest.raises(HogwildError, match=r"evaluate must be a callable\(params\) -> dict, a "
                                           "hogwild.Metric or a list of Metrics"):
        fit(counting_objective(10), epochs=1, workers=1, evaluate=["test_error"])


def test_step_schedules():
    assert [StepSchedule("constant", 0.5, 1.0)(t) for t in range(3)] == [0.5, 0.5, 0.5]
    assert [StepSchedule("geometric", 1.0, 0.5)(t) for t in range(3)] == [1.0, 0.5, 0.25]
    assert [StepSchedule("inverse", 1.0, 1.0)(t) for t in range(3)] == [1.0, 0.5, 1 / 3]
    history = fit(counting_objective(10), epochs=3, step=2.0, decay=0.5, workers=1).history
    assert [r.step for r in history] == [2.0, 1.0, 0.5]


def _records(objectives, held=()):
    return [EpochRecord(epoch=k + 1, step=1.0, seconds=1.0, updates=1, updates_per_s=1.0,
                        objective=value, decay_held=k in held)
            for k, value in enumerate(objectives)]


def test_the_decay_clock_holds_while_a_saddle_is_left():
    """The epochs of a descent that starts above its start and speeds up do not
    count toward the decay; a convex descent's, or a flat one's, all count."""
    saddle = [1.45, 1.08, 0.69, 0.58, 0.55]  # 10^8 planted ratings, start 1.21
    history = []
    for value in saddle:
        history.append(_records([value], [0] if decay_holds(history, value, 1.21) else [])[0])
        history[-1].epoch = len(history)
    assert [r.decay_held for r in history] == [True, True, True, False, False]
    assert decay_clock(history[:3]) == 0 and decay_clock(history) == 2
    assert not decay_holds([], 0.53, 1.0)  # a convex first epoch falls
    assert not decay_holds([], 0.0, 0.0)  # nothing to learn: the clock runs
    assert not decay_holds(_records([1.45], [0]), float("nan"), 1.21)  # not measured
    assert not decay_holds(_records([1.45, 1.08], [0, 1]), 0.80, 1.21)  # fell less
    assert not decay_holds(_records([1.45, 1.08], [0]), 0.60, 1.21)  # the hold had ended


def test_the_inverse_updates_schedule_lowers_the_step_within_the_epoch():
    schedule = StepSchedule("inverse_updates", 2.0, 4.0)
    assert schedule(1.5) == 2.0 / 7.0
    table = schedule.epoch_steps(1).table
    assert table.size == SEGMENTS and np.all(np.diff(table) < 0)
    assert table[0] == 2.0 / (1.0 + 4.0 * (1 + 0.5 / SEGMENTS))
    assert schedule.epoch_steps(1).over(0.5, 0.75).table.tolist() == \
        table[SEGMENTS // 2:3 * SEGMENTS // 4].tolist()
    assert StepSchedule("geometric", 1.0, 0.5).epoch_steps(2).table.tolist() == [0.25]
    # partial_fit's batch k: a run of its own whose one epoch is epoch k of the schedule
    np.testing.assert_allclose(schedule.from_epoch(3).epoch_steps(0).table,
                               schedule.epoch_steps(3).table, rtol=1e-15)
    assert StepSchedule("geometric", 1.0, 0.5).from_epoch(2) == \
        StepSchedule("constant", 0.25, 1.0)


def record_step(e, params, data, step):
    params[0][e] = step
    params[1][e] = params[2][0]  # when (racy with several workers)
    params[2][0] += 1


def steps_objective(n):
    return Objective(record_step, lambda e, params, data: 0.0,
                     params=(np.zeros(n), np.zeros(n), np.zeros(1)), data=np.zeros(1),
                     n_samples=n)


@pytest.mark.parametrize("options", [
    dict(scheduler="serial", workers=1),
    dict(workers=2),
    dict(workers=2, scheduler="locked"),
    dict(workers=2, backend="processes"),  # shares run in pieces: each starts where the
    dict(workers=2, replication="worker", merge_every=1000),  # last one ended
    dict(workers=2, backend="processes", replication="worker", merge_every=1000)])
def test_each_worker_reads_the_whole_step_table_across_its_share(options):
    """Every update takes a step of its epoch's table, each step as often as the
    others (a share in pieces that restarted the table would take its first steps
    more often), and in order along the share (serial: exactly by position)."""
    n, schedule = 8192, StepSchedule("inverse_updates", 1.0, 2.0)
    result = fit(steps_objective(n), epochs=2, step=1.0, decay=2.0,
                 step_schedule="inverse_updates", seed=0, oversubscribe=True, **options)
    table = schedule.epoch_steps(1).table
    taken = result.params[0]
    counts = np.array([np.sum(taken == step) for step in table])
    assert counts.sum() == n
    assert counts.min() >= n // SEGMENTS - 32 and counts.max() <= n // SEGMENTS + 32, counts
    assert result.history[1].step == pytest.approx(table.mean(), rel=0.01)
    if options.get("scheduler") == "serial":
        position = (result.params[1] - n).astype(np.int64)  # the second epoch's
        assert taken.tolist() == table[position * SEGMENTS // n].tolist()


# --- the kernel compiler ----------------------------------------------------------

SCALE = 2.0


def scaled_update(e, params, data, step):
    params[0][e] += SCALE


def test_fingerprint_tracks_code_helpers_and_constants(monkeypatch):
    base = fingerprint(scaled_update, zero_loss)
    assert fingerprint(scaled_update, zero_loss) == base
    assert fingerprint(count_visit, zero_loss) != base
    monkeypatch.setitem(globals(), "SCALE", 3.0)
    assert fingerprint(scaled_update, zero_loss) != base


def test_compiled_loops_are_reused_within_a_process():
    assert compile_loops(count_visit, zero_loss) is compile_loops(count_visit, zero_loss)


def test_public_api():
    assert callable(hogwild.fit) and hogwild.Objective is Objective


# --- sparsity statistics ----------------------------------------------------------------

def test_sparsity_statistics_by_hand():
    from hogwild.schedulers.conflicts import sparsity_stats
    # samples: {0, 1}, {1, 2}, {3}, {0}
    supports = Supports(np.array([0, 2, 4, 5, 6]), np.array([0, 1, 1, 2, 3, 0]), 4)
    stats = sparsity_stats(supports)
    assert (stats["omega"], stats["delta"], stats["rho"]) == (2, 0.5, 0.5)
    assert stats["rho_exact"] and stats["mean_conflict_fraction"] == (2 + 1 + 0 + 1) / 16
    sampled = sparsity_stats(supports, max_exact=2, seed=0)
    assert not sampled["rho_exact"] and sampled["rho_samples"] == 2
    assert sampled["rho"] <= stats["rho"]


def test_parameter_copies_start_on_a_cache_line():
    from hogwild.backends.host import aligned_copy
    for shape, dtype in (((6040, 32), np.float32), ((7,), np.float64), ((0, 3), np.int32)):
        original = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
        copy = aligned_copy(original)
        assert copy.flags.c_contiguous and copy.flags.writeable
        assert copy.ctypes.data % 64 == 0 or copy.size == 0  # nothing to align when empty
        np.testing.assert_array_equal(copy, original)
        assert not np.shares_memory(copy, original)
    result = fit(counting_objective(100), epochs=1, workers=1, seed=0)
    assert all(p.ctypes.data % 64 == 0 for p in result.params)


def test_supports_declared_as_a_function_are_built_only_when_a_scheduler_needs_them():
    built = []
    supports = Supports.from_keys(np.arange(40) % 8)

    def declare():
        built.append(1)
        return supports

    objective = Objective(racy_increment, zero_loss, params=np.zeros(16, np.int64),
                          integer_params=True,
                          data=np.array([64], np.int64), n_samples=40, supports=declare)
    fit(objective, epochs=1, scheduler="serial", workers=1)
    assert built == []
    fit(objective, epochs=1, scheduler="cyclades", workers=2, seed=0)
    assert built == [1]
    wrong = Objective(racy_increment, zero_loss, params=np.zeros(16, np.int64), integer_params=True,
                      data=np.array([64], np.int64), n_samples=39, supports=declare)
    with pytest.raises(HogwildError, match="its supports function must return a "
                                           "hogwild.structure.Supports of 39 samples"):
        fit(wrong, epochs=1, scheduler="colored", workers=1)


def test_all_finite_finds_one_nan_or_inf_anywhere():
    from hogwild.backends.host import all_finite

    for dtype in (np.float32, np.float64, np.float16):
        params = (np.zeros((1000, 7), dtype), np.ones(10_001, dtype), np.arange(5))
        assert all_finite(params)
        for bad in (np.nan, np.inf, -np.inf):
            for where in (0, 4095, 4096, 10_000):
                params[1][where] = bad
                assert not all_finite(params), (dtype, bad, where)
                params[1][where] = 1


@pytest.mark.determinism
def test_initial_values_depend_on_the_seed_alone(monkeypatch):
    import hogwild.random_init as random_init

    monkeypatch.setattr(random_init, "DRAWS_PER_STREAM", 1000)
    drawn = []
    for cores in (1, 2, 3):
        monkeypatch.setattr(random_init, "usable_cores", lambda cores=cores: cores)
        drawn.append(random_init.normal_array((700, 9), 0.5, np.random.SeedSequence(3)))
    assert drawn[0].dtype == np.float32 and drawn[0].ctypes.data % 64 == 0
    for other in drawn[1:]:
        np.testing.assert_array_equal(drawn[0], other)
    assert abs(drawn[0].std() - 0.5) < 0.02 and abs(drawn[0].mean()) < 0.02
    assert not np.array_equal(drawn[0], random_init.normal_array((700, 9), 0.5, 4))


def no_step(e, params, data, step):
    params[0][0] += 0.0


def value_loss(e, params, data):
    return data[0][e] + params[0][0]


@pytest.mark.parametrize("workers", [1, 2])
def test_loss_samples_estimates_the_objective_on_the_first_samples(workers):
    values = np.arange(100_000, dtype=np.float64)  # more than a loss chunk
    whole = Objective(no_step, value_loss, (np.zeros(1),), (values,), values.size)
    first = Objective(no_step, value_loss, (np.zeros(1),), (values,), values.size,
                      loss_samples=40_000)
    for objective, expected in ((whole, values.mean()), (first, values[:40_000].mean())):
        result = fit(objective, hogwild.TrainingConfig(epochs=1, workers=workers))
        assert result.history[0].objective == pytest.approx(expected)
    assert Objective(no_step, value_loss, (np.zeros(1),), (values,), 10,
                     loss_samples=10 ** 9).loss_samples == 10
    with pytest.raises(HogwildError, match="loss_samples must be an integer >= 1, got 0"):
        Objective(no_step, value_loss, (np.zeros(1),), (values,), 10, loss_samples=0)


def test_a_run_that_does_not_ask_gives_each_worker_128_KiB_of_samples(monkeypatch):
    """workers=None: the usable cores, but one per 128 KiB of the samples' data at
    most; a smaller share is over before a thread is worth starting, and a tiny
    set's fit is then one worker's, bitwise reproducible. Asked-for counts stand."""
    monkeypatch.setattr("hogwild.limits.usable_cores", lambda: 4)

    def objective(data_bytes):
        return Objective(count_visit, zero_loss, params=np.zeros(100, np.int64),
                         integer_params=True, data=np.zeros(data_bytes // 8), n_samples=100)

    assert fit(objective(8_000), epochs=1).workers == 1
    assert fit(objective(3 * 128 << 10), epochs=1).workers == 3
    assert fit(objective(64 << 20), epochs=1).workers == 4
    assert fit(objective(8_000), epochs=1, workers=2).workers == 2
