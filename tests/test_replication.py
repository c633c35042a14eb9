"""replication="worker": each worker its own copy of the parameters, merged by
averaging the changes of the workers that made one (hogwild.backends.replicas)."""
import json

import numpy as np
import pytest

from hogwild import HogwildError, Objective, fit
from hogwild.backends.replicas import Replicas
from hogwild.structure import IdArray
from hogwild.cli import main
from hogwild.datasets.synthetic import make_sparse_classification
from hogwild.problems.sparse_svm import SparseSVM, as_csr, binary_labels, svm_objective
from test_engine import count_visit, least_squares, zero_loss


def svm():
    X, y = make_sparse_classification(2000, 1500, nnz_per_row=15, seed=0)
    X = as_csr(X)
    labels, _ = binary_labels(y, X.shape[0])
    return svm_objective(X, labels, "hinge", 1e-4, 0)


def test_one_worker_with_its_own_copy_is_bitwise_the_serial_run():
    objective = svm()  # with an intercept: a second parameter array
    serial = fit(objective, epochs=3, step=0.2, scheduler="serial", seed=4, workers=1)
    copied = fit(objective, epochs=3, step=0.2, seed=4, workers=1, replication="worker",
                 merge_every=97)
    assert copied.replication == "worker"
    for a, b in zip(serial.params, copied.params):
        np.testing.assert_array_equal(a, b)
    assert [r.objective for r in serial.history] == [r.objective for r in copied.history]


@pytest.mark.parametrize("merge_every", [None, 7, 1000])
def test_merges_lose_no_update_where_workers_touch_different_coordinates(merge_every):
    """Every sample owns one counter: after E epochs each counter is exactly E, on
    two workers with their own copies, whatever the merge interval."""
    objective = Objective(count_visit, zero_loss, params=np.zeros(5001, np.int64),
                          integer_params=True,
                          data=np.zeros(1), n_samples=5001)
    result = fit(objective, epochs=3, workers=2, seed=0, replication="worker",
                 merge_every=merge_every)
    np.testing.assert_array_equal(result.params[0], 3)
    assert sum(r.updates for r in result.history) == 3 * 5001


@pytest.mark.parametrize("merge,expected", [("mean", [3.0, 5.0, 8.0]),
                                            ("sum", [5.0, 5.0, 8.0])])
def test_a_coordinate_several_workers_moved_gets_the_mean_or_the_sum_of_their_moves(
        merge, expected):
    shared = (np.array([1.0, 5.0, 2.0], np.float32),)
    replicas = Replicas(shared, (), 3, "worker", merge)
    for w, moves in enumerate(([2.0, 5.0, 2.0], [4.0, 5.0, 2.0], [1.0, 5.0, 8.0])):
        replicas.params_of(w)[0][:] = moves
    replicas.merge()
    # coordinate 0: moves +1 and +3 by two workers -> +2 (mean) or +4 (sum); 2: one
    # worker -> its value
    np.testing.assert_array_equal(shared[0], expected)
    assert all(np.array_equal(replicas.params_of(w)[0], shared[0]) for w in range(3))


def merged_reference(base, copies, add_all):
    """The merge rule value by value in NumPy: a value one worker changed takes that
    worker's value, one several changed moves by the mean (or sum) of their changes
    added in worker order in float64, an unchanged one keeps the base."""
    changed = copies != base
    total = np.zeros(base.shape, np.float64)
    for w in range(copies.shape[0]):
        total += np.where(changed[w], copies[w] - base, 0).astype(base.dtype)
    count = changed.sum(0)
    one = np.take_along_axis(copies, changed.argmax(0)[None], 0)[0]
    moved = base + (total if add_all else total / np.maximum(count, 1))
    return np.where(count == 1, one, np.where(count > 1, moved, base)).astype(base.dtype)


@pytest.mark.parametrize("merge", ["mean", "sum"])
def test_the_merge_of_whole_arrays_and_of_hot_rows_follows_the_rule_value_by_value(merge):
    """Blocks of the vectorised merge, a partial last block and rows of width 1 and 3
    included, give the reference's values, in the shared array and in every copy."""
    rng = np.random.default_rng(5)
    workers = 3

    def moved(copy):  # each worker changes about a third of the values
        mask = rng.random(copy.shape) < 0.35
        copy[mask] += rng.standard_normal(int(mask.sum())).astype(copy.dtype)

    flat = rng.standard_normal(1000).astype(np.float32)
    replicas = Replicas((flat,), (), workers, "worker", merge)
    for w in range(workers):
        moved(replicas.params_of(w)[0])
    expected = merged_reference(flat.copy(), np.stack([replicas.params_of(w)[0]
                                                       for w in range(workers)]),
                                merge == "sum")
    replicas.merge()
    np.testing.assert_array_equal(flat, expected)
    assert all(np.array_equal(replicas.params_of(w)[0], flat) for w in range(workers))

    for width in (1, 3):
        rows = rng.standard_normal((700, width)).astype(np.float32).reshape(
            (700,) if width == 1 else (700, width))
        ids = np.arange(700, dtype=np.int32)  # every row in every sample's id: all hot
        replicas = Replicas((rows,), (ids,), workers, "hot", merge, (IdArray(0, (0,)),),
                            n_samples=700, hot_fraction=0.0001)
        base = rows.copy()
        copies = []
        for w in range(workers):
            mine = replicas.data_of(w)[0]
            copy = replicas.params_of(w)[0][mine]
            moved(copy)
            replicas.params_of(w)[0][mine] = copy
            copies.append(copy)
        expected = merged_reference(base, np.stack(copies), merge == "sum")
        replicas.merge()
        shared = replicas.params[0]  # the shared rows now live before the copies
        np.testing.assert_array_equal(shared, expected)
        assert all(np.array_equal(replicas.params_of(w)[0][replicas.data_of(w)[0]], shared)
                   for w in range(workers))


def test_mixed_merges_average_hot_rows_and_add_up_cold_ones():
    """merge="mixed" with whole copies: rows 0 and 1 are named twice among 3 samples
    (hot at hot_fraction 0.5: the mean of the two workers' changes), rows 2 and 3
    once (cold: the sum); an array no id array indexes (an intercept) counts as
    hot."""
    ids = np.array([0, 1, 2, 0, 1, 3], np.int32)
    rows = np.zeros((4, 2), np.float32)
    intercept = np.zeros(1, np.float32)
    replicas = Replicas((rows, intercept), (ids,), 2, "worker", "mixed",
                        (IdArray(0, (0,)),), n_samples=3, hot_fraction=0.5)
    for w, move in enumerate((1.0, 3.0)):
        replicas.params_of(w)[0][...] = move
        replicas.params_of(w)[1][...] = move
    replicas.merge()
    np.testing.assert_array_equal(replicas.params[0], [[2, 2], [2, 2], [4, 4], [4, 4]])
    np.testing.assert_array_equal(replicas.params[1], [2])


def test_a_mixed_merge_needs_the_objectives_id_arrays():
    objective, _ = least_squares()
    with pytest.raises(HogwildError) as error:
        fit(objective, epochs=1, workers=2, replication="worker", merge="mixed")
    assert str(error.value) == (
        "merge 'mixed' needs the objective's id arrays to tell hot rows from cold ones, "
        f"and objective '{objective.name}' declares none (Objective.id_arrays); use merge "
        "'mean' or 'sum'")


def test_two_workers_with_their_own_copies_reach_the_planted_solution():
    objective, w_true = least_squares()
    result = fit(objective, epochs=60, step=0.5, workers=2, seed=0, replication="worker",
                 merge_every=64)
    np.testing.assert_allclose(result.params[0], w_true, atol=1e-3)
    assert result.objective < 1e-7


def test_the_svm_estimator_and_the_command_line_take_replication(capsys):
    X, y = make_sparse_classification(2000, 1500, nnz_per_row=15, seed=1)
    # plain SGD steps: AdaGrad's sums, averaged too, would lengthen the steps
    model = SparseSVM(workers=2, random_state=0, replication="worker", merge_every=16,
                      adaptive=False).fit(X, y)
    shared = SparseSVM(workers=2, random_state=0, adaptive=False).fit(X, y)  # 20 epochs each
    assert model.score(X, y) > shared.score(X, y) - 0.01
    # merged once an epoch, the averaged hot coordinates move half as far: slower
    rare = SparseSVM(workers=2, random_state=0, replication="worker", adaptive=False).fit(X, y)
    assert rare.history_[-1].objective > 1.1 * shared.history_[-1].objective
    assert main(["run", "svm", "--epochs", "2", "--replication", "worker", "--merge-every",
                 "500", "--json", "--checkpoint-every", "1000000"]) == 0
    assert json.loads(capsys.readouterr().out)["replication"] == "worker"


def test_the_command_line_says_which_mode_ran_and_why(capsys):
    """The summary line and the JSON name the mode that ran; for "auto", the
    probe's reason (one worker: always shared)."""
    assert main(["run", "svm", "--epochs", "1", "--workers", "1", "--replication", "auto",
                 "--checkpoint-every", "1000000"]) == 0
    assert "done: hogwild x 1 workers, replication shared (auto: one worker) on a9a" in \
        capsys.readouterr().out
    assert main(["run", "cuts", "--data", "random:300x1500", "--epochs", "1", "--workers",
                 "2", "--replication", "worker", "--json", "--checkpoint-every",
                 "1000000"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["replication"] == "worker" and result["replicated"]["merge"] == "mean"
    assert main(["run", "mc", "--data", "jumbo:400x300x20000", "--epochs", "1", "--workers",
                 "2", "--replication", "auto", "--json", "--checkpoint-every",
                 "1000000"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["replication"] in ("shared", "hot", "worker")
    assert result["replicated"]["auto"]["chose"] == result["replication"]


@pytest.mark.parametrize("options,message", [
    (dict(replication="node"),
     "unknown replication 'node'; choose one of: shared, worker, hot, auto"),
    (dict(merge="max"), "unknown merge 'max'; choose one of: mean, sum, mixed"),
    (dict(replication="hot", hot_fraction=1.5),
     "hot_fraction must be a finite number in (0, 1), got 1.5"),
    (dict(replication="worker", scheduler="colored"),
     "replication='worker' runs lock-free plans (scheduler hogwild or serial); scheduler "
     "'colored' keeps its workers apart already"),
    (dict(replication="worker", backend="gpu"),
     "backend 'gpu' runs replication 'shared'; got 'worker'"),
    (dict(merge_every=0), "merge_every must be an integer >= 1, got 0"),
])
def test_a_mode_that_cannot_run_is_named(options, message):
    with pytest.raises(HogwildError) as error:
        fit(svm(), epochs=1, workers=2, **options)
    assert str(error.value) == message


def count_id(e, params, data, step):
    params[0][data[0][e]] += data[1][data[0][e]]  # + the id's weight, read at the id


def counters(n=3001):
    """Sample e adds weight[id] to counter id = ids[e]: the even samples all share
    id 0 (hot: in half the samples), each odd one has its own (cold)."""
    ids = np.where(np.arange(n) % 2 == 0, 0, np.arange(n)).astype(np.int32)
    weight = np.arange(n, dtype=np.int64) + 1
    return Objective(count_id, zero_loss, params=np.zeros(n, np.int64),
                     integer_params=True, data=(ids, weight),
                     n_samples=n, id_arrays=(IdArray(0, (0,), (1,)),)), ids, weight


@pytest.mark.determinism
@pytest.mark.parametrize("merge_every", [None, 7, 1000])
def test_hot_rows_summed_lose_no_update(merge_every):
    """merge="sum" applies every worker's change of a hot row; cold rows stay
    shared; the ids' other array (weight) is read at the same id on every copy."""
    objective, ids, weight = counters()
    result = fit(objective, epochs=3, workers=2, seed=0, replication="hot", merge="sum",
                 merge_every=merge_every)
    expected = 3 * np.bincount(ids, minlength=ids.size) * weight
    np.testing.assert_array_equal(result.params[0], expected)
    assert result.replicated["arrays"] == [{"params": 0, "rows": 3001, "copied_rows": 1}]


def test_hot_rows_are_found_from_the_id_arrays_and_each_worker_reads_its_own():
    objective, ids, weight = counters(101)
    replicas = Replicas(objective.params, objective.data, 2, "hot", "mean",
                        objective.id_arrays, 101, 0.2)
    # 101 rows on 64-byte lines of 8 int64s: the copies start at row 104, one line each
    for w in range(2):
        mine, extended = replicas.data_of(w)
        np.testing.assert_array_equal(mine[ids != 0], ids[ids != 0])
        assert set(mine[ids == 0]) == {104 + 8 * w}
        assert extended[104 + 8 * w] == weight[0]
        assert replicas.params_of(w)[0].shape == (120,)
    assert replicas.params[0].shape == (101,)  # what the engine and the metrics see


def test_hot_replication_with_one_worker_is_bitwise_the_serial_run():
    objective = svm()
    serial = fit(objective, epochs=3, step=0.2, scheduler="serial", seed=4, workers=1)
    hot = fit(objective, epochs=3, step=0.2, seed=4, workers=1, replication="hot",
              merge_every=97, hot_fraction=0.002)
    assert hot.replicated["arrays"][0]["copied_rows"] > 0
    for a, b in zip(serial.params, hot.params):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("replication,merge", [("hot", "mean"), ("hot", "sum"),
                                               ("worker", "sum"), ("worker", "mixed")])
def test_each_mode_reaches_the_quality_of_shared(replication, merge):
    X, y = make_sparse_classification(3000, 2000, nnz_per_row=15, seed=2)
    shared = SparseSVM(workers=2, random_state=0).fit(X, y)
    model = SparseSVM(workers=2, random_state=0, replication=replication, merge=merge,
                      merge_every=64, hot_fraction=0.005).fit(X, y)
    assert model.history_[-1].objective < 1.05 * shared.history_[-1].objective
    assert model.score(X, y) > shared.score(X, y) - 0.01


def test_hot_replication_needs_the_objectives_id_arrays():
    objective, _ = least_squares()
    with pytest.raises(HogwildError) as error:
        fit(objective, epochs=1, workers=2, replication="hot")
    assert str(error.value) == (
        "replication 'hot' needs the objective's id arrays, and objective 'objective' "
        "declares none (Objective.id_arrays); use replication 'worker'")


def test_an_id_array_naming_a_missing_array_is_refused():
    with pytest.raises(HogwildError) as error:
        Objective(count_id, zero_loss, params=np.zeros(3), data=(np.zeros(3, np.int32),),
                  n_samples=3, id_arrays=(IdArray(0, (0,), (1,)),))
    assert str(error.value) == "an IdArray names data[1]; the objective has 1 data arrays"


def test_auto_keeps_one_worker_and_conflict_free_schedulers_shared():
    objective = svm()
    one = fit(objective, epochs=1, workers=1, seed=0, replication="auto")
    assert one.replication == "shared"
    assert one.replicated == {"auto": {"chose": "shared", "why": "one worker"}}
    objective, _, _ = counters()
    serial = fit(objective, epochs=1, workers=2, seed=0, replication="auto",
                 scheduler="serial")
    assert serial.replicated["auto"]["chose"] == "shared"


def test_auto_leaves_rows_shared_when_few_ids_are_on_hot_rows(monkeypatch):
    from hogwild import replication
    monkeypatch.setattr(replication, "PROBE_SHARE", float("inf"))  # not a short run
    X, y = make_sparse_classification(2000, 1500, nnz_per_row=15, seed=0)
    model = SparseSVM(epochs=1, workers=2, random_state=0, replication="auto", hot_fraction=0.5)
    model.fit(X, y)  # no feature is in half the rows
    assert model.replicated_ == {"auto": {
        "chose": "shared", "why": "0.0% of the ids are on hot rows: sharing costs little",
        "ids_on_hot_rows": 0.0}}


def test_auto_leaves_rows_shared_where_copies_of_the_ids_would_not_fit(monkeypatch):
    """"hot" copies the ids for each worker: not where they would take more than an
    eighth of the memory available."""
    from hogwild import replication
    monkeypatch.setattr(replication, "PROBE_SHARE", float("inf"))  # not a short run
    X, y = make_sparse_classification(2000, 1500, nnz_per_row=15, seed=0)
    monkeypatch.setattr(replication, "available_memory", lambda: 8 * 2 * X.indices.nbytes - 1)
    model = SparseSVM(epochs=1, workers=2, random_state=0, replication="auto")
    model.fit(X, y)
    assert model.replicated_["auto"]["chose"] == "shared"
    from hogwild.limits import size_text
    assert model.replicated_["auto"]["why"] == (
        f"copies of the ids for each worker would take {size_text(2 * X.indices.nbytes)} of "
        f"the {size_text(8 * 2 * X.indices.nbytes - 1)} of memory available")


def test_the_probe_copies_only_the_ids_of_the_samples_it_visits():
    """probe_data cuts the id arrays (a CSR's indices, per nonzero) to the probe's
    first samples and leaves every other array whole, even one as long as the
    samples are many (here the weights' penalty scales, as many as the rows)."""
    from hogwild.replication import probe_data
    X, y = make_sparse_classification(1000, 1000, nnz_per_row=10, seed=1)
    objective = svm_objective(as_csr(X), binary_labels(y, X.shape[0])[0], reg=1e-4, seed=0)
    cut = probe_data(objective, 100)
    assert cut[1].shape == (int(X.indptr[100]),)
    np.testing.assert_array_equal(cut[1], objective.data[1][:int(X.indptr[100])])
    assert all(a is b for k, (a, b) in enumerate(zip(cut, objective.data)) if k != 1)


@pytest.mark.parametrize("id_arrays", [True, False])
def test_a_short_run_stays_shared_without_a_probe(id_arrays):
    """Copies are chosen only by a probe's measurement; a run too short for one
    shares, and says why."""
    objective, _, _ = counters()
    if not id_arrays:
        objective = Objective(count_id, zero_loss, objective.params, objective.data,
                              objective.n_samples, integer_params=True)
    result = fit(objective, epochs=2, workers=2, seed=0, replication="auto")
    auto = result.replicated["auto"]
    assert "probe_updates_per_s" not in auto
    assert (auto["chose"], auto["why"], result.replication) == (
        "shared", "a short run: shared, copies need a probe", "shared")


def test_a_short_run_with_several_values_per_row_is_shared():
    from hogwild.datasets.registry import load_svm_data
    train, _ = load_svm_data("a9a")
    model = SparseSVM(epochs=1, workers=2, random_state=0).fit(train.X,
                                                               np.arange(train.X.shape[0]) % 3)
    assert model.replication_ == "shared"
    assert model.replicated_["auto"]["why"] == "a short run: shared, copies need a probe"


@pytest.mark.parametrize("id_arrays", [True, False])
def test_auto_chooses_by_its_probe_and_says_so(id_arrays, monkeypatch):
    """Which mode wins depends on the machine; the choice must follow the probe's
    own figures (replication only when AUTO_MARGIN times faster), and the run must
    use it. With id arrays the candidate is "hot"; without, "worker"."""
    from hogwild import replication
    from hogwild.replication import AUTO_MARGIN

    monkeypatch.setattr(replication, "PROBE_SHARE", float("inf"))  # probe however short
    objective, ids, weight = counters()
    if not id_arrays:
        objective = Objective(count_id, zero_loss, objective.params, objective.data,
                              objective.n_samples, integer_params=True)
    result = fit(objective, epochs=2, workers=2, seed=0, replication="auto", merge="sum")
    auto = result.replicated["auto"]
    candidates = {"hot": ("hot", "sum")} if id_arrays else {"worker": ("worker", "sum")}
    rates = auto["probe_updates_per_s"]
    assert set(rates) == {"shared", *candidates}
    best = max(candidates, key=rates.get)
    mode, merge = candidates[best] if rates[best] >= AUTO_MARGIN * rates["shared"] \
        else ("shared", "sum")
    assert auto["chose"] == result.replication == mode
    assert result.replicated.get("merge", "sum") == merge
    if mode != "shared" and merge == "sum":  # summed merges lose nothing
        np.testing.assert_array_equal(result.params[0],
                                      2 * np.bincount(ids, minlength=ids.size) * weight)


def test_auto_on_a_backend_without_replication_is_refused():
    with pytest.raises(HogwildError) as error:
        fit(svm(), epochs=1, workers=2, replication="auto", backend="gpu")
    assert str(error.value) == "backend 'gpu' runs replication 'shared'; got 'auto'"


@pytest.mark.parametrize("replication,merge_every", [("hot", None), ("hot", 7),
                                                     ("worker", 1000)])
def test_worker_processes_replicate_in_shared_memory_and_lose_no_summed_update(
        replication, merge_every):
    objective, ids, weight = counters()
    result = fit(objective, epochs=3, workers=2, seed=0, replication=replication,
                 merge="sum", merge_every=merge_every, backend="processes")
    np.testing.assert_array_equal(result.params[0],
                                  3 * np.bincount(ids, minlength=ids.size) * weight)
    assert result.replication == replication and result.replicated["merge"] == "sum"


def test_worker_processes_with_copies_reach_the_quality_of_shared():
    X, y = make_sparse_classification(3000, 2000, nnz_per_row=15, seed=2)
    shared = SparseSVM(workers=2, random_state=0).fit(X, y)
    model = SparseSVM(workers=2, random_state=0, replication="hot", hot_fraction=0.005,
                      merge_every=64, backend="processes").fit(X, y)
    assert model.history_[-1].objective < 1.05 * shared.history_[-1].objective
    assert model.replicated_["arrays"][0]["copied_rows"] > 0


def test_hot_ids_that_cannot_hold_the_copies_row_numbers_are_refused():
    """int8 ids of 120 int64 rows: each worker's copy of the one hot row takes a
    64-byte line of 8 rows after them, so the last copy is row 120 + 2 * 8 - 1."""
    ids = np.zeros(120, np.int8)  # row 0 is in every sample: hot
    objective = Objective(count_id, zero_loss, params=np.zeros(120, np.int64), integer_params=True,
                          data=(ids, np.ones(120, np.int64)), n_samples=120,
                          id_arrays=(IdArray(0, (0,), (1,)),))
    with pytest.raises(HogwildError) as error:
        fit(objective, epochs=1, workers=2, replication="hot")
    assert str(error.value) == ("data[0] (int8) cannot hold the replicas' row ids up to "
                                "135")


def test_ids_outside_the_rows_are_named_before_any_work():
    """When the objective is made, so no mode or backend reads past the rows."""
    with pytest.raises(HogwildError) as error:
        Objective(count_id, zero_loss, params=np.zeros(10, np.int64), integer_params=True,
                  data=(np.array([0, 3, 12], np.int32), np.ones(10, np.int64)),
                  n_samples=3, id_arrays=(IdArray(0, (0,), (1,)),))
    assert str(error.value) == ("data[0][2] = 12 is not a row of params[0], which has 10 rows "
                                "(declared by an IdArray)")


def test_worker_copies_merged_mixed_are_bitwise_reproducible_for_a_seed_and_worker_count():
    """Replication "worker" merged "mixed" (what auto's probe may choose): each
    worker trains its own copy of a fixed share of the samples and the copies merge
    between barriers, so two workers give the same bits run after run."""
    from hogwild.datasets.registry import load_svm_data
    train, _ = load_svm_data("a9a")
    runs = [SparseSVM(random_state=5, epochs=3, workers=2, replication="worker", merge="mixed").fit(
        train.X, train.y) for _ in range(3)]
    assert runs[0].replication_ == "worker" and runs[0].replicated_["merge"] == "mixed"
    for other in runs[1:]:
        assert np.array_equal(other.coef_, runs[0].coef_)
        assert np.array_equal(other.intercept_, runs[0].intercept_)
