"""Training from disk (hogwild.streaming): samples beyond ``memory`` are read chunk by
chunk and give the in-memory result; files changed under a run are errors."""
import os
import shutil

import numpy as np
import pytest

import hogwild
from hogwild import HogwildError
from hogwild.limits import parse_size
from hogwild.problems.matrix_completion.models import mf_objective
from hogwild.structure import blocked_copy

RANK = 4


def ratings_on_disk(folder, n=6000, n_users=120, n_items=90, grid=None, seed=0):
    """(users, items, values) as read-only memory maps of .npy files, in a block
    layout when ``grid`` is given (then also the layout)."""
    rng = np.random.default_rng(seed)
    users = rng.integers(0, n_users, n).astype(np.int32)
    items = rng.integers(0, n_items, n).astype(np.int32)
    planted_users, planted_items = rng.standard_normal((2, max(n_users, n_items), 2))
    values = (3 + np.einsum("ij,ij->i", planted_users[users], planted_items[items])
              + 0.1 * rng.standard_normal(n)).astype(np.float32)
    layout = None
    if grid is not None:
        users, items, values, _, _, layout = blocked_copy(users, items, values, grid,
                                                          np.random.default_rng(seed))
    maps = []
    for name, array in (("users", users), ("items", items), ("values", values)):
        np.save(folder / f"{name}.npy", array)
        maps.append(np.load(folder / f"{name}.npy", mmap_mode="r"))
    return maps, layout


def objective(maps, layout=None):
    return mf_objective(*maps, rank=RANK, seed=1, n_users=120, n_items=90, blocks=layout)


def params_bytes():
    return (120 + 90) * (RANK + 1) * 4  # factors and biases, float32


def test_sizes_people_write():
    assert parse_size("8GB") == 8 * 10**9 and parse_size("512MiB") == 512 * 2**20
    assert parse_size(" 1.5 gib") == int(1.5 * 2**30) and parse_size("4096") == 4096
    for bad in ("", "eight", "8XB", "-1GB", "nan", "0"):
        with pytest.raises(HogwildError, match="expected a size such as 8GB"):
            parse_size(bad)


@pytest.mark.determinism
@pytest.mark.parametrize("backend,workers", [("threads", 1), ("threads", 2),
                                             ("processes", 2)])
def test_blocked_streamed_by_rounds_is_bitwise_the_in_memory_run(tmp_path, backend, workers):
    maps, layout = ratings_on_disk(tmp_path, grid=4)
    options = dict(epochs=3, step=0.02, scheduler="blocked", seed=5, workers=workers)
    in_memory = hogwild.fit(objective([np.array(a) for a in maps], layout), **options)
    room = params_bytes() + 16 + 2 * 12 * 1600  # two slots of 1600 ratings: a round is ~1500
    with pytest.warns(UserWarning, match=r"the samples \(72.0 kB\) do not fit in memory .* "
                                         r"read from disk chunk by chunk, 1,600 samples a chunk"):
        streamed = hogwild.fit(objective(maps, layout), memory=room, backend=backend,
                               **options)
    assert streamed.streaming["chunks_per_epoch"] == 4  # the grid's rounds
    assert streamed.streaming["chunk_samples"] == 1600 and in_memory.streaming is None
    for a, b in zip(in_memory.params, streamed.params):
        np.testing.assert_array_equal(a, b)
    assert [r.updates for r in streamed.history] == [6000] * 3


@pytest.mark.determinism
def test_serial_streamed_in_chunks_of_a_run_is_bitwise_the_in_memory_run(tmp_path):
    """With shuffle_block equal to the chunk, each run is a chunk: the streamed
    epoch visits the samples in the in-memory serial order."""
    maps, _ = ratings_on_disk(tmp_path)
    options = dict(epochs=3, step=0.02, scheduler="serial", seed=2, shuffle_block=1000)
    in_memory = hogwild.fit(objective([np.array(a) for a in maps]), **options)
    room = params_bytes() + 16 + 2 * 12 * 1400
    with pytest.warns(UserWarning, match="1,400 samples a chunk"):
        streamed = hogwild.fit(objective(maps), memory=room, **options)
    assert streamed.streaming["chunks_per_epoch"] == 6
    for a, b in zip(in_memory.params, streamed.params):
        np.testing.assert_array_equal(a, b)


def test_hogwild_streamed_trains_as_well_as_in_memory(tmp_path):
    maps, _ = ratings_on_disk(tmp_path, n=20_000)
    options = dict(epochs=8, step=0.03, scheduler="hogwild", seed=3, workers=2,
                   shuffle_block=64)
    in_memory = hogwild.fit(objective([np.array(a) for a in maps]), **options)
    with pytest.warns(UserWarning, match="read from disk chunk by chunk"):
        streamed = hogwild.fit(objective(maps), memory=params_bytes() + 16 + 2 * 12 * 3000,
                               **options)
    assert streamed.streaming["chunks_per_epoch"] == 7

    def mean_squared_error(params):
        L, R, user_bias, item_bias = params
        users, items, values = (np.array(a) for a in maps)
        mean = values.mean(dtype=np.float64)
        predicted = mean + user_bias[users] + item_bias[items] + \
            np.einsum("ij,ij->i", L[users], R[items])
        return float(np.mean((predicted - values) ** 2))

    # Two racing workers end 0.016-0.019 over seeds (sd ~5% of a run, noise 0.01):
    # the streamed run may not be more than 25% worse (~4 sd of a ratio).
    start = mean_squared_error(objective(maps).params)
    assert mean_squared_error(streamed.params) < 0.01 * start
    assert mean_squared_error(streamed.params) < 1.25 * mean_squared_error(in_memory.params)


@pytest.mark.parametrize("change,word", [("truncate", "truncated"), ("rewrite", "modified"),
                                         ("replace", "replaced or removed")])
def test_a_file_changed_during_a_streamed_run_stops_it(tmp_path, change, word):
    maps, layout = ratings_on_disk(tmp_path, grid=4)
    path = tmp_path / "values.npy"

    def after_first_epoch(record):
        if record.epoch != 1:
            return
        if change == "truncate":
            os.truncate(path, path.stat().st_size - 400)
        elif change == "rewrite":
            with open(path, "r+b") as f:
                f.seek(-4, os.SEEK_END)
                f.write(b"\0\0\0\0")
            os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
        else:  # another file of the same size renamed over it
            shutil.copy(tmp_path / "items.npy", tmp_path / "other.npy")
            os.replace(tmp_path / "other.npy", path)

    with pytest.warns(UserWarning, match="chunk by chunk"), \
            pytest.raises(HogwildError, match=f"{path} was {word} while the run read it"):
        hogwild.fit(objective(maps, layout), epochs=3, scheduler="blocked", seed=0,
                    memory=params_bytes() + 16 + 2 * 12 * 1600, callback=after_first_epoch)


def edit_in_place(path, position, value):
    """Write ``value`` at ``position`` of the .npy file ``path`` and put its times back,
    so that its identity (device, inode, size, time) is unchanged."""
    stat = path.stat()
    edited = np.load(path, mmap_mode="r+")
    edited[position] = value
    edited.flush()
    del edited
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_a_streamed_file_edited_with_its_time_put_back_stops_the_run(tmp_path):
    """Checked by content: each range's CRC-32 at its first read against every later
    read, not only the file's time."""
    maps, layout = ratings_on_disk(tmp_path, grid=4)
    path = tmp_path / "values.npy"

    def after_first_epoch(record):
        if record.epoch == 1:
            edit_in_place(path, 17, 1e6)

    with pytest.warns(UserWarning, match="chunk by chunk"), \
            pytest.raises(HogwildError, match=f"^{path} was modified while the run read it: "
                                              r"rows \d[\d,]*\.\.[\d,]+ differ from the epoch "
                                              r"before \(its time was put back\)"):
        hogwild.fit(objective(maps, layout), epochs=3, scheduler="blocked", seed=0,
                    memory=params_bytes() + 16 + 2 * 12 * 1600, callback=after_first_epoch)


def test_streamed_samples_are_index_checked_when_first_read(tmp_path):
    """An id edited after the run's whole-file check (here: an objective that says
    its ids were checked) is caught when its chunk is first read, not used."""
    import dataclasses

    maps, layout = ratings_on_disk(tmp_path, grid=4)
    unchecked = dataclasses.replace(objective(maps, layout), id_arrays=(),
                                    indices_checked=True)
    edit_in_place(tmp_path / "users.npy", 3000, 10**9)
    with pytest.warns(UserWarning, match="chunk by chunk"), \
            pytest.raises(HogwildError, match=r"^a sample read from .*users\.npy.* has an id "
                                              "beyond the array it indexes: a file was "
                                              "modified while the run read it"):
        hogwild.fit(unchecked, epochs=1, scheduler="blocked", seed=0,
                    memory=params_bytes() + 16 + 2 * 12 * 1600)


def test_memory_below_the_parameters_or_a_chunk_is_one_clear_error(tmp_path):
    maps, layout = ratings_on_disk(tmp_path, grid=4)
    with pytest.raises(HogwildError) as error:
        hogwild.fit(objective(maps, layout), epochs=1, scheduler="blocked", memory="1kB")
    assert str(error.value) == "memory 1.0 kB is less than the parameters need (4.2 kB)"
    with pytest.raises(HogwildError) as error:
        hogwild.fit(objective(maps, layout), epochs=1, scheduler="blocked", memory=4220)
    assert str(error.value) == ("memory 4.2 kB leaves 8 bytes for samples beside the "
                                "parameters (4.2 kB): too little for two chunks of 1 sample "
                                "(24 bytes)")
    with pytest.warns(UserWarning), pytest.raises(
            HogwildError, match="a round of the block grid holds more than the 100 samples a "
                                "slot of memory .* holds; use a larger --grid"):
        hogwild.fit(objective(maps, layout), epochs=1, scheduler="blocked",
                    memory=params_bytes() + 16 + 2 * 12 * 100)
    with pytest.raises(HogwildError, match="streaming them from disk runs the schedulers "
                                           "hogwild, serial, locked and blocked, not this one"):
        hogwild.fit(objective(maps, layout), epochs=1, scheduler="fpsgd", memory=20_000)
    in_memory = [np.array(a) for a in maps]
    with pytest.raises(HogwildError, match="only samples in files on disk, read-only memory "
                                           "maps, can be streamed"):
        hogwild.fit(objective(in_memory, layout), epochs=1, scheduler="blocked",
                    memory=20_000)


@pytest.mark.determinism
def test_a_streamed_run_resumes_from_its_checkpoint_bitwise(tmp_path):
    maps, layout = ratings_on_disk(tmp_path, grid=4)
    options = dict(scheduler="blocked", seed=4, step=0.02, memory=params_bytes() + 16 +
                   2 * 12 * 1600)
    with pytest.warns(UserWarning):
        whole = hogwild.fit(objective(maps, layout), epochs=3, **options)
        hogwild.fit(objective(maps, layout), epochs=1, checkpoint=tmp_path / "c.npz",
                    **options)
        resumed = hogwild.fit(objective(maps, layout), epochs=3, resume=tmp_path / "c.npz",
                              **options)
    for a, b in zip(whole.params, resumed.params):
        np.testing.assert_array_equal(a, b)


def test_a_pass_over_a_file_leaves_no_pages_in_this_process(tmp_path):
    from hogwild.disk_arrays import array_mean, extremes, pieces

    values = np.arange(24 << 20, dtype=np.float32)  # 96 MiB
    np.save(tmp_path / "v.npy", values)
    mapped = np.load(tmp_path / "v.npy", mmap_mode="r")

    def resident_file_kib():
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("RssFile"))

    before = resident_file_kib()
    assert extremes(mapped) == (0, (24 << 20) - 1)
    assert array_mean(mapped) == pytest.approx(values.mean(dtype=np.float64))
    assert sum(piece.size for piece in pieces(mapped)) == values.size
    assert resident_file_kib() - before < 16 << 10


# --- rows of a sparse matrix: per-sample offsets into nonzeros on disk ---------------

def click_rows(folder, rows=4000, features=600, nnz=48_000):
    """A click log on disk (12 nonzeros a row), its objective's inputs: X with its
    nonzeros memory-mapped, labels in {-1, +1}."""
    from hogwild.datasets.clicks import make_clicks
    from hogwild.problems.sparse_svm import as_csr, binary_labels

    train, _, _ = make_clicks(rows, features, nnz, seed=4, folder=folder / "clicks")
    X = as_csr(train.X)
    labels, _ = binary_labels(train.y, rows)
    return X, labels


def svm(X, labels, **options):
    from hogwild.problems.sparse_svm import svm_objective

    return svm_objective(X, labels, reg=1e-4, seed=0, **options)


def in_memory_copy(X):
    import scipy.sparse as sp
    return sp.csr_matrix((np.array(X.data), np.array(X.indices), np.array(X.indptr)),
                         shape=X.shape)


@pytest.mark.determinism
@pytest.mark.parametrize("backend,workers", [("threads", 1), ("processes", 1)])
def test_sparse_rows_streamed_in_chunks_of_a_run_are_bitwise_the_in_memory_serial_run(
        tmp_path, backend, workers):
    """Each chunk holds one run of 500 rows and their 6,000 nonzeros (read from the
    files, offsets rebased into the slot): the serial order of the run in memory.
    The logistic loss without an intercept: the SVM's thinned draws (the hinge
    loss's lazy regularisation, the intercept's steps) are keyed by a row's
    position, which streaming changes (equal in distribution, not bitwise)."""
    X, labels = click_rows(tmp_path)
    options = dict(epochs=3, step=0.5, scheduler="serial", seed=2, shuffle_block=500,
                   backend=backend, workers=workers)
    in_memory = hogwild.fit(svm(in_memory_copy(X), labels, loss="logistic",
                                        fit_intercept=False), **options)
    # beside the weights and the arrays kept in memory (labels, offsets, regularisation)
    kept = (600 + 16) * 4 + 4000 * 4 + 4001 * 4 + 600 * 4 + 8 + 4
    slot = 700 * (4 + 4) + 700 * 12 * 8  # per row: offset and label; 12 nonzeros of 8 bytes
    with pytest.warns(UserWarning, match="read from disk chunk by chunk, 700 samples a chunk"):
        streamed = hogwild.fit(svm(X, labels, loss="logistic", fit_intercept=False),
                               memory=kept + 2 * slot + 100,
                               **options)
    assert streamed.streaming["chunks_per_epoch"] == 8
    assert streamed.streaming["chunk_nonzeros"] == 700 * 12 and in_memory.streaming is None
    for a, b in zip(in_memory.params, streamed.params):
        np.testing.assert_array_equal(a, b)


def test_sparse_rows_streamed_by_hogwild_train_as_well_as_in_memory(tmp_path):
    X, labels = click_rows(tmp_path, rows=20_000, nnz=240_000)
    options = dict(epochs=5, step=0.5, scheduler="hogwild", seed=3, workers=2)

    def hinge(params):
        from hogwild.problems.sparse_svm import intercept_of
        scores = X @ params[0] + intercept_of(params)[0]
        return float(np.mean(np.maximum(0.0, 1.0 - labels * scores)))

    in_memory = hogwild.fit(svm(in_memory_copy(X), labels), **options)
    with pytest.warns(UserWarning, match="chunk by chunk"):
        streamed = hogwild.fit(svm(X, labels), memory=1_000_000, **options)
    assert streamed.streaming["chunks_per_epoch"] >= 4
    assert hinge(streamed.params) < 0.8 and hinge(in_memory.params) < 0.8
    assert hinge(streamed.params) == pytest.approx(hinge(in_memory.params), abs=0.03)


def test_a_nonzero_file_truncated_under_a_streamed_run_stops_it(tmp_path):
    X, labels = click_rows(tmp_path)
    path = tmp_path / "clicks" / "train_values.npy"

    def after_first_epoch(record):
        if record.epoch == 1:
            os.truncate(path, path.stat().st_size - 400)

    with pytest.warns(UserWarning, match="chunk by chunk"), \
            pytest.raises(HogwildError, match=f"{path} was truncated while the run read it"):
        hogwild.fit(svm(X, labels), epochs=3, step=0.5, seed=0, memory=300_000,
                    callback=after_first_epoch)


@pytest.mark.parametrize("name", ["train_values.npy", "train_indices.npy"])
def test_a_file_edited_between_the_caches_check_and_the_first_read_stops_the_run(
        tmp_path, name):
    """The window that per-range digests leave: an edit (times put back) after the
    cache checked the entry and before the run first reads the range. The first
    epoch's reads, combined, must give the CRC-32 the cache checked."""
    X, labels = click_rows(tmp_path)  # made, then opened and checked by the cache
    path = tmp_path / "clicks" / name
    edit_in_place(path, 40_000, 7)
    with pytest.warns(UserWarning, match="chunk by chunk"), \
            pytest.raises(HogwildError) as error:
        hogwild.fit(svm(X, labels), epochs=3, step=0.5, seed=0, memory=300_000)
    assert str(error.value) == (
        f"{path} was modified after the run checked it (its time was put back): what the "
        "first epoch read of it differs from the content checked at the start; the run "
        "stops rather than train on data other than the data it started with")


def test_streamed_samples_share_one_model_auto_says_shared_and_copies_are_refused(tmp_path):
    """Replicas copy the samples' id arrays per worker, which streamed samples do not
    hold (a traceback once): "auto" (the SVM's default) trains shared, and an explicit
    copy mode is one clear error, with the stream's files closed."""
    X, labels = click_rows(tmp_path, rows=4_000, nnz=40_000)
    options = dict(epochs=1, seed=0, workers=2, memory=200_000)
    with pytest.warns(UserWarning, match="chunk by chunk"):
        result = hogwild.fit(svm(X, labels), replication="auto", **options)
    assert result.replication == "shared" and result.streaming["chunks_per_epoch"] >= 2
    for mode in ("worker", "hot"):
        with pytest.warns(UserWarning, match="chunk by chunk"), \
                pytest.raises(HogwildError, match=f"^replication '{mode}' gives each worker "
                                                  "copies of the samples' ids, and these "
                                                  "samples stream from disk"):
            hogwild.fit(svm(X, labels), replication=mode, **options)


# --- samples in files that fit in memory: read into it, so a file changed under the
# run cannot reach the compiled loops (a truncated map is SIGBUS, an edit unchecked ids)

def test_samples_on_disk_that_fit_train_from_a_copy_a_truncated_file_cannot_reach(tmp_path):
    from hogwild.problems.sparse_svm.objectives import error_rate_metric

    X, labels = click_rows(tmp_path)
    folder = tmp_path / "clicks"
    options = dict(epochs=3, step=0.5, seed=0, workers=1)

    def truncate_all(record):
        if record.epoch == 1:
            for name in ("train_indices", "train_values", "train_indptr"):
                os.truncate(folder / f"{name}.npy", 128)

    copy = in_memory_copy(X)
    reference = hogwild.fit(svm(copy, labels), evaluate=error_rate_metric(copy, labels),
                            **options)
    mapped = hogwild.fit(svm(X, labels), evaluate=error_rate_metric(X, labels),
                         callback=truncate_all, **options)
    np.testing.assert_array_equal(mapped.params[0], reference.params[0])
    assert [r.metrics for r in mapped.history] == [r.metrics for r in reference.history]


def test_ids_edited_in_a_file_are_checked_whatever_the_objective_says(tmp_path):
    """An objective may say its ids were checked (a cache entry's, when it was
    written); an id edited in its file since (the time put back) is still a clear
    error, not a read of another array's memory."""
    import dataclasses

    X, labels = click_rows(tmp_path)
    objective = dataclasses.replace(svm(X, labels), indices_checked=True)
    edit_in_place(tmp_path / "clicks" / "train_indices.npy", 5, 10**9)
    with pytest.raises(HogwildError) as error:
        hogwild.fit(objective, epochs=1, seed=0, workers=1)
    assert str(error.value) == ("data[1][5] = 1000000000 is not a row of params[0], which has "
                                "600 rows (declared by an IdArray)")


def test_csr_row_blocks_read_a_truncated_file_as_an_error(tmp_path):
    from hogwild.disk_arrays import csr_row_blocks

    X, labels = click_rows(tmp_path)
    blocks = list(csr_row_blocks(X, labels, rows=1000))
    assert [b.shape[0] for b, _ in blocks] == [1000] * 4
    np.testing.assert_array_equal(
        np.concatenate([b.toarray() for b, _ in blocks]), X.toarray())
    np.testing.assert_array_equal(np.concatenate([y for _, y in blocks]), labels)
    path = tmp_path / "clicks" / "train_values.npy"
    os.truncate(path, path.stat().st_size // 2)
    with pytest.raises(HogwildError, match=f"^{path} ends at byte [0-9,]+, before the rows "
                       "its header declares: it was truncated$"):
        list(csr_row_blocks(X, labels, rows=1000))


def test_a_hold_out_gathers_rows_from_file_reads_not_through_the_map(tmp_path):
    """early_stopping's hold-out indexed the mapped data, where a file that shrank
    meanwhile is SIGBUS: taken and csr_rows_taken read the file, equal to indexing."""
    from hogwild.disk_arrays import csr_rows_taken, taken

    X, _ = click_rows(tmp_path)
    maps, _ = ratings_on_disk(tmp_path)
    rows = np.flatnonzero(np.random.default_rng(0).random(4000) < 0.3)
    for array in maps:
        np.testing.assert_array_equal(taken(array, rows), np.asarray(array)[rows])
    np.testing.assert_array_equal(csr_rows_taken(X, rows, block=1000).toarray(),
                                  X[rows].toarray())
    assert csr_rows_taken(X, rows[:0]).shape == (0, X.shape[1])
    path = tmp_path / "users.npy"
    os.truncate(path, 256)
    with pytest.raises(HogwildError, match=f"^{path} ends at byte 256, before the rows its "
                       "header declares: it was truncated$"):
        taken(maps[0], rows)


EARLY_STOPPING_ON_A_SHRUNK_FILE = """
import os, sys
import numpy as np
from hogwild import HogwildError
from hogwild.problems.matrix_completion import MatrixFactorization
folder = sys.argv[1]
maps = [np.load(os.path.join(folder, name + ".npy"), mmap_mode="r")
        for name in ("users", "items", "values")]
os.truncate(os.path.join(folder, "users.npy"), 256)  # after it was mapped
try:
    MatrixFactorization(rank=2, epochs=1, early_stopping=1, random_state=0,
                        workers=1).fit(tuple(maps))
except HogwildError as error:
    print(error)
"""


def test_early_stopping_on_ratings_whose_file_shrank_is_an_error_not_sigbus(tmp_path):
    import subprocess
    import sys

    ratings_on_disk(tmp_path)
    done = subprocess.run([sys.executable, "-c", EARLY_STOPPING_ON_A_SHRUNK_FILE,
                           str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == (f"{tmp_path / 'users.npy'} ends at byte 256, before the rows its "
                           "header declares: it was truncated\n")


def test_an_id_edited_before_the_objective_is_built_is_an_error_not_a_write(tmp_path):
    """The SVM counts its features' rows before any run (compiled code): an id edited
    in the cache since its checksum was read wrote past the counts (SIGSEGV). The
    error names the file (fault injection's edit-mid-run once met it unnamed)."""
    X, labels = click_rows(tmp_path)
    edit_in_place(tmp_path / "clicks" / "train_indices.npy", 5, 10**9)
    with pytest.raises(HogwildError) as error:
        svm(X, labels)
    assert str(error.value) == (f"{tmp_path / 'clicks' / 'train_indices.npy'}: id 1000000000 "
                                "at position 5 is not in 0..599")


def test_an_edited_id_that_breaks_a_rows_order_is_named_with_its_file(tmp_path):
    """An id edited before X is checked, which leaves its row out of order: X is
    sorted into a copy of its own, and the error named no file (fault injection's
    edit-mid-run: 'id -1262120445 at position 1,834,820 is not in 0..19,999')."""
    from hogwild.datasets.clicks import make_clicks
    from hogwild.problems.sparse_svm import as_csr

    train, _, _ = make_clicks(4000, 600, 48_000, seed=4, folder=tmp_path / "clicks")
    position = int(train.X.indptr[1]) - 1  # the last nonzero of the first row
    edit_in_place(tmp_path / "clicks" / "train_indices.npy", position, -5)
    with pytest.raises(HogwildError) as error:
        as_csr(train.X)
    assert str(error.value) == (f"{tmp_path / 'clicks' / 'train_indices.npy'}: id -5 at "
                                f"position {position} is not in 0..599")
