"""svmlight reading (against scikit-learn's reader), the binary cache, the
synthetic generator and the dataset registry."""
import bz2
import gzip
import os
import warnings

import numpy as np
import pytest

from hogwild import DataFormatError, HogwildError
from hogwild.datasets.registry import SVM_DATASETS, load_svm_data
from hogwild.datasets import files, ingest
from hogwild.datasets.svmlight import load_svmlight
from hogwild.datasets.synthetic import make_sparse_classification


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HOGWILD_CACHE_DIR", str(tmp_path / "cache"))


def write(tmp_path, text, name="data.svm", opener=open):
    path = tmp_path / name
    with opener(path, "wt") as f:
        f.write(text)
    return path


SAMPLE = """# a comment line
+1 1:0.5 3:-2 7:1e-3
-1 qid:4 2:1.5E+2   4:.25 # trailing comment

0 5:-0.0 6:7
"""


@pytest.mark.parametrize("opener,name", [(open, "d.svm"), (gzip.open, "d.svm.gz"),
                                         (bz2.open, "d.svm.bz2")])
def test_reads_the_format_like_scikit_learn(tmp_path, opener, name):
    from sklearn.datasets import load_svmlight_file
    path = write(tmp_path, SAMPLE, name, opener)
    ours = load_svmlight(path, cache=False)
    X_ref, y_ref = load_svmlight_file(str(path), zero_based=False)
    assert ours.zero_based is False
    assert ours.X.shape == (3, 7)
    np.testing.assert_array_equal(ours.y, y_ref)
    np.testing.assert_allclose(ours.X.toarray(), X_ref.toarray(), rtol=1e-7)
    np.testing.assert_array_equal(ours.row_lines, [2, 3, 5])


def test_real_file_matches_scikit_learn(a9a):
    from sklearn.datasets import load_svmlight_file
    train, test = a9a
    ref_X, ref_y = load_svmlight_file(str(test.path), n_features=123)
    np.testing.assert_array_equal(test.y, ref_y)
    assert (test.X != ref_X.astype(np.float32)).nnz == 0
    assert train.X.shape == (32561, 123) and train.X.nnz == 451592


def test_zero_based_detection(tmp_path):
    path = write(tmp_path, "1 0:1 2:3\n-1 1:2\n")
    data = load_svmlight(path, cache=False)
    assert data.zero_based is True and data.X.shape == (2, 3)
    assert data.X[0, 0] == 1 and data.X[0, 2] == 3
    with pytest.raises(DataFormatError, match=r"data.svm, line 1: feature index 0 in a file "
                                              r"read as one-based; pass zero_based=True"):
        load_svmlight(path, zero_based=False, cache=False)


def test_test_file_aligned_to_training_features(tmp_path):
    path = write(tmp_path, "1 1:1 9:2\n-1 2:1\n1 10:4\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = load_svmlight(path, n_features=5, zero_based=False, extra_features="drop",
                             cache=False)
    assert len(caught) == 1
    assert "dropped 2 values of 2 features beyond the training data's 5 features" \
        in str(caught[0].message)
    assert data.X.shape == (3, 5)
    np.testing.assert_array_equal(data.X.toarray(), [[1, 0, 0, 0, 0], [0, 1, 0, 0, 0],
                                                     [0, 0, 0, 0, 0]])
    with pytest.raises(DataFormatError, match=r"line 1: feature index out of range \(8 as "
                                              r"zero-based, n_features=5\)"):
        load_svmlight(path, n_features=5, zero_based=False, cache=False)


NOT_FINITE = "a value is NaN, Inf or beyond float32's range (|x| > 3.4e38)"
UNSORTED = "feature indices must increase along a line (one is repeated or out of order)"


@pytest.mark.parametrize("text,line,reason", [
    ("1 1:2\nabc 2:3\n", 2, "the label is not a number"),
    ("1 1:2\n-1 2:3 x:4\n", 2, "a feature index is not a non-negative integer"),
    ("1 1:2\n-1 -2:3\n", 2, "a feature index is not a non-negative integer"),
    ("1 1:2 4\n", 1, "expected index:value"),
    ("1 1:2\n1 3:4e\n", 2, "a feature value is not a number"),
    ("1 1:2\n\n1 3:nan\n", 3, NOT_FINITE),
    ("1 1:inf\n", 1, NOT_FINITE),
    ("1 1:1e400\n", 1, NOT_FINITE),
    ("nan 1:1\n", 1, NOT_FINITE),
    ("1 1:2\n-1 2:1e39\n", 2, NOT_FINITE),  # finite in float64, inf once stored as float32
    ("1 1:2\n-1 3:1 2:1\n", 2, UNSORTED),  # scikit-learn refuses these too
    ("1 1:2\n-1 2:1 2:1\n", 2, UNSORTED),
])
def test_malformed_lines_are_named(tmp_path, text, line, reason):
    """Each malformed line is refused naming the file, the line and why."""
    path = write(tmp_path, text)
    bad = text.split("\n")[line - 1]
    with pytest.raises(DataFormatError) as info:
        load_svmlight(path, cache=False)
    assert str(info.value) == f"{path}, line {line}: malformed svmlight line ({reason}): " \
                              f"{bad!r}"


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(HogwildError, match=r"cannot read .*nowhere.svm: no such file"):
        load_svmlight(tmp_path / "nowhere.svm")
    with pytest.raises(HogwildError, match=r".* is a folder without data files"):
        load_svmlight(tmp_path)  # (a folder of files is read as its part files)
    with pytest.raises(HogwildError, match=r"empty data: .*empty.svm holds no samples"):
        load_svmlight(write(tmp_path, "# only a comment\n\n", "empty.svm"))
    corrupt = tmp_path / "broken.gz"
    corrupt.write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(DataFormatError, match=r"cannot decompress .*broken.gz"):
        load_svmlight(corrupt)


def test_unreadable_file(tmp_path, monkeypatch):
    path = write(tmp_path, "1 1:1\n")

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(files.os, "open", refuse)  # tests run as root: chmod would not do
    with pytest.raises(HogwildError, match="cannot read .*data.svm: Permission denied"):
        load_svmlight(path, cache=False)


def test_binary_cache_is_used_and_invalidated(tmp_path, monkeypatch):
    path = write(tmp_path, "1 1:1\n-1 2:2\n")
    first = load_svmlight(path)
    with monkeypatch.context() as patch:
        patch.setattr(ingest, "read_text", lambda *a, **k: pytest.fail("cache not used"))
        cached = load_svmlight(path)
    np.testing.assert_array_equal(first.X.toarray(), cached.X.toarray())
    os.utime(path, ns=(1, 1))
    path.write_text("1 1:5\n")
    changed = load_svmlight(path)
    assert changed.X.shape == (1, 1) and changed.X[0, 0] == 5


def test_synthetic_generator_is_text_like_and_deterministic():
    X, y = make_sparse_classification(n_samples=20_000, n_features=5_000, nnz_per_row=40,
                                      seed=4)
    X2, y2 = make_sparse_classification(n_samples=20_000, n_features=5_000, nnz_per_row=40,
                                        seed=4)
    assert (X != X2).nnz == 0 and np.array_equal(y, y2)
    assert X.shape == (20_000, 5_000)
    assert 38 < X.nnz / X.shape[0] < 42
    row_norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    np.testing.assert_allclose(row_norms, 1.0, rtol=1e-5)
    degree = np.bincount(X.indices, minlength=X.shape[1]) / X.shape[0]
    assert degree.max() > 0.3 and np.median(degree) < 0.01  # a few hot, most rare
    assert set(np.unique(y)) == {-1.0, 1.0} and abs(np.mean(y > 0) - 0.5) < 0.02
    X3, _ = make_sparse_classification(n_samples=20_000, n_features=5_000, nnz_per_row=40,
                                       seed=5)
    assert (X != X3).nnz > 0
    with pytest.raises(HogwildError, match="nnz_per_row=3000 must be <= n_features / 2"):
        make_sparse_classification(n_features=5_000, nnz_per_row=3_000)


def test_registry_names_and_errors(monkeypatch, tmp_path):
    train, test = load_svm_data("a9a")
    assert train.X.shape == (32561, 123) and test.X.shape == (16281, 123)
    with pytest.raises(HogwildError, match="unknown dataset 'rcv1'; choose one of: a9a, "
                                           "news20-bydate, imdb-aclimdb, "
                                           "news20-bydate-multiclass, or give a file "
                                           "path"):
        load_svm_data("rcv1")
    monkeypatch.setenv("HOGWILD_DATA", str(tmp_path))
    assert not SVM_DATASETS["news20-bydate"].available()
    with pytest.raises(HogwildError, match="dataset 'news20-bydate' is in the shared data "
                                           "folder, which does not have it: .* is missing "
                                           r"\(set HOGWILD_DATA\)"):
        load_svm_data("news20-bydate")


def test_a_feature_index_too_large_for_memory_names_its_line(tmp_path, monkeypatch):
    """Issue 16, item 4: one svmlight index of 2e9 asked for 14.9 GiB before any
    error. A largest index whose model cannot fit in memory is refused with its
    line; a large but affordable feature space (hashed features) still loads."""
    path = tmp_path / "hostile.svm"
    path.write_text("1 1:1 5:2\n-1 2:1\n1 3:1 2000000000:1\n")
    monkeypatch.setattr("hogwild.datasets.svmlight.available_memory", lambda: 24 * 2**30)
    with pytest.raises(DataFormatError, match=str(path) + r", line 3: feature index 1999999999 "
                       r"makes a model of 2,000,000,000 features, which needs 40.0 GB, more "
                       r"than the 25.8 GB of memory available"):
        load_svmlight(path, cache=False)
    path.write_text("1 1:1 5:2\n-1 2:1\n1 3:1 268435456:1\n")  # 2**28 hashed features: 5 GiB
    assert load_svmlight(path, cache=False).X.shape == (3, 2**28)


# --- data at scale: the Jumbo generator, cache checksums, memory maps ------------------

@pytest.mark.determinism
def test_jumbo_chunks_depend_on_the_seed_alone(tmp_path, monkeypatch):
    """The same ratings written to disk and made in memory, on 1 or 2 cores, in
    chunks smaller than the data; a planted matrix whose noise is the residual."""
    from hogwild.datasets import generated, jumbo

    monkeypatch.setattr(jumbo, "CHUNK", 7_000)
    made = []
    for cores, folder in ((1, tmp_path / "one"), (2, tmp_path / "two"), (2, None)):
        monkeypatch.setattr(generated, "usable_cores", lambda cores=cores: cores)
        train, test, _ = jumbo.make_jumbo(300, 200, 50_000, rank=3, noise=0.25, seed=4,
                                          folder=folder)
        made.append(tuple(np.array(a) for a in (train.users, train.items, train.values,
                                                test.values)))
    for other in made[1:]:
        for a, b in zip(made[0], other):
            np.testing.assert_array_equal(a, b)
    users, items = made[0][0], made[0][1]
    assert users.min() >= 0 and users.max() < 300 and items.max() < 200
    assert len(np.unique(users)) == 300  # uniform cells: every row drawn
    assert 0.9 < np.std(made[0][2]) < 1.2  # unit-variance entries plus 0.25 noise


def test_a_cached_memory_map_is_checksummed_from_its_file_and_its_pages_released(tmp_path):
    from hogwild.datasets.cache import Damaged, crc32, open_arrays, release_pages

    values = np.arange(16 << 20, dtype=np.float32)  # 64 MiB
    np.save(tmp_path / "v.npy", values)
    mapped = np.load(tmp_path / "v.npy", mmap_mode="r")
    assert crc32(mapped) == crc32(values)

    def resident_file_kib():
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("RssFile"))

    before = resident_file_kib()
    assert float(mapped.sum(dtype=np.float64)) == float(values.sum(dtype=np.float64))
    touched = resident_file_kib()
    release_pages(mapped, values)  # a plain array is left alone
    assert touched - before > 48 << 10 and touched - resident_file_kib() > 48 << 10
    assert mapped[-1] == values[-1] and values[-1] == (16 << 20) - 1  # read back intact
    record = {"dtype": values.dtype.str, "shape": [values.size], "crc32": crc32(values)}
    assert open_arrays(tmp_path, {"v": record})["v"].shape == values.shape
    os.truncate(tmp_path / "v.npy", 1 << 20)
    with pytest.raises(Damaged, match="v.npy cannot be read"):
        open_arrays(tmp_path, {"v": record})


def test_click_logs_depend_on_the_seed_alone_and_have_the_shape_asked(tmp_path, monkeypatch):
    """The same rows on 1 or 2 cores and in chunks smaller than the data; exactly NNZ
    nonzeros, sorted within rows, unit-norm rows, a power law of feature counts, and
    labels a linear model learns (LIBLINEAR far below chance on held-out rows)."""
    from sklearn.svm import LinearSVC

    from hogwild.datasets import clicks, generated

    monkeypatch.setattr(clicks, "CHUNK_NONZEROS", 5_000)
    made = []
    for cores, folder in ((1, tmp_path / "one"), (2, tmp_path / "two")):
        monkeypatch.setattr(generated, "usable_cores", lambda cores=cores: cores)
        train, test, info = clicks.make_clicks(3_000, 2_000, 60_007, noise=0.0, seed=3,
                                               folder=folder)
        made.append((train, test))
    for a, b in zip(made[0], made[1]):
        for x, y in ((a.X.indptr, b.X.indptr), (a.X.indices, b.X.indices),
                     (a.X.data, b.X.data), (a.y, b.y)):
            np.testing.assert_array_equal(x, y)
    train, test = made[0]
    X = train.X
    assert X.shape == (3_000, 2_000) and X.nnz == 60_007 and X.has_canonical_format
    lengths = np.diff(X.indptr)
    assert lengths[:7].tolist() == [21] * 7 and set(lengths[7:].tolist()) == {20}
    np.testing.assert_allclose(np.asarray(X.multiply(X).sum(axis=1)).ravel(), 1.0, rtol=1e-5)
    field = X.indices[X.indptr[:-1] + 3] - 3 * (2_000 // 21)  # the fourth field's values
    counts = np.sort(np.bincount(field, minlength=2_000 // 21))[::-1]
    assert counts[0] > 8 * np.median(counts)  # a few values in many rows, most rare
    assert 0.3 < np.mean(train.y > 0) < 0.7 and train.random_order is True
    model = LinearSVC(C=1.0).fit(X, np.asarray(train.y))
    assert 1 - model.score(test.X, np.asarray(test.y)) < 0.2


def test_a_damaged_click_log_is_made_again(tmp_path, monkeypatch):
    from hogwild.datasets.clicks import make_clicks

    monkeypatch.setenv("HOGWILD_CACHE_DIR", str(tmp_path))
    train, _, _ = make_clicks(200, 100, 2_000)
    want, folder = np.array(train.X.indices), train.path
    del train
    with open(folder / "train_indices.npy", "r+b") as f:
        f.seek(200)
        f.write(b"\x01")
    with pytest.warns(UserWarning, match=r"the click log cached in .* is damaged: "
                                         r"train_indices.npy does not match the checksum"):
        again, _, _ = make_clicks(200, 100, 2_000)
    np.testing.assert_array_equal(again.X.indices, want)
