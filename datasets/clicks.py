"""Click-log-like classification data of any size, on disk ("clicks:ROWSxFEATURESxNNZ").

Each row is an impression described by F categorical fields hashed into one
feature space, as in click logs (Criteo's display-ads data has 39): field f owns
the features [f m, (f + 1) m), m = FEATURES // F, and draws its value from a power
law (Zipf, exponent 1: the value of rank k is drawn with probability
ln((k + 2) / (k + 1)) / ln(m + 1), so a few values occur in a large share of the
rows and most are rare), spread over its range by a fixed multiplicative hash.
F = NNZ // ROWS, and the first NNZ % ROWS rows carry one field more, so the data
has exactly NNZ nonzeros. Every nonzero of a row is F^-1/2 (unit-norm rows, as
hashed features are usually scaled) and its indices are sorted. The label is the
sign of a planted linear model w ~ N(0, 1) on the row plus Gaussian noise of
standard deviation ``noise`` (the margin has variance about 1).

Rows are drawn in chunks on every core, each from a seed of its own, and written
to .npy files in CSR form (12 bytes per nonzero, 12 per row), in random order: 10^9
nonzeros take 12 GB on disk and the memory of a few chunks to make, so data larger
than memory is made as easily, and read back memory-mapped.
"""
import math
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from numba import njit

from hogwild.datasets.generated import (check_disk, check_room, chunk_seeds, in_order,
                                        open_entry, parse_sizes, progress_bar,
                                        write_entry)
from hogwild.datasets.svmlight import SvmlightData
from hogwild.errors import HogwildError, check_int
from hogwild.paths import data_cache_folder

_VERSION = 1
CHUNK_NONZEROS = 1 << 22
# nonzeros first: the progress bar counts the first field of each chunk
FIELDS = (("indices", np.int32), ("values", np.float32), ("indptr", np.int64),
          ("labels", np.float32))


def parse_clicks_spec(text):
    """'clicks:ROWSxFEATURESxNNZ' (e.g. clicks:10000000x1000000x1000000000) ->
    (rows, features, nnz)."""
    return parse_sizes(text, "clicks", "click-log", "clicks:ROWSxFEATURESxNNZ, e.g. "
                       "clicks:1000000x100000x40000000")


@njit(nogil=True, cache=True)
def _draw(w, fields, extra, span, spread, noise, seed, first_row, indptr, indices, values,
          labels):
    """Rows first_row.. of one chunk from its own seed (numba's generator of the
    calling thread, seeded here: the chunk depends on its seed alone). indptr holds
    the rows' global offsets (one more entry than rows)."""
    np.random.seed(seed)
    log_span = np.log(span + 1.0)
    for r in range(indptr.size):
        indptr[r] = _offset(first_row + r, fields, extra)
    base = indptr[0]
    for r in range(labels.size):
        lo, hi = indptr[r] - base, indptr[r + 1] - base
        value = np.float32(1.0 / np.sqrt(hi - lo))
        margin = 0.0
        for k in range(lo, hi):
            rank = min(np.int64(np.exp(np.random.random() * log_span)) - 1, span - 1)
            feature = (k - lo) * span + (rank * spread) % span
            indices[k] = feature
            values[k] = value
            margin += w[feature] * value
        margin += noise * np.random.standard_normal()
        labels[r] = 1.0 if margin > 0 else -1.0


def _chunks(n_rows, w, fields, extra, span, spread, noise, seeds, rows_per_chunk):
    """Yield (indptr, indices, values, labels) chunk by chunk, in order; the last
    chunk's indptr carries the final offset."""
    def draw(index):
        first = index * rows_per_chunk
        rows = min(rows_per_chunk, n_rows - first)
        last = first + rows == n_rows
        indptr = np.empty(rows + 1, np.int64)
        nnz = _offset(first + rows, fields, extra) - _offset(first, fields, extra)
        indices, values = np.empty(nnz, np.int32), np.empty(nnz, np.float32)
        labels = np.empty(rows, np.float32)
        _draw(w, fields, extra, span, spread, noise, seeds[index], first, indptr, indices,
              values, labels)
        return indices, values, indptr if last else indptr[:-1], labels

    return in_order(-(-n_rows // rows_per_chunk), draw)


@njit(nogil=True, cache=True)
def _offset(row, fields, extra):
    """Nonzeros before ``row``: rows below ``extra`` have ``fields`` nonzeros, the
    rest one fewer (all ``fields`` when extra is 0)."""
    return row * (fields - 1) + min(row, extra) if extra else row * fields


def make_clicks(n_rows, n_features, nnz, noise=0.5, test_rows=None, seed=0, folder="auto",
                progress=False):
    """(train, test, info): SvmlightData of a click-log-like matrix (see the module
    docstring), memory-mapped from the cache (folder="auto", reused by later calls
    with the same arguments) or from ``folder``; labels in {-1, +1}.

    test_rows: held-out rows drawn the same way (default 1% of n_rows, between
    1,000 and 1,000,000).
    """
    n_rows = check_int("rows", n_rows, 1)
    n_features = check_int("features", n_features, 1, 2**31 - 1)
    nnz = check_int("nonzeros", nnz, n_rows)
    if not noise >= 0:
        raise HogwildError(f"noise must be >= 0, got {noise!r}")
    per_row = nnz // n_rows
    extra = nnz % n_rows
    fields = per_row + (extra > 0)
    if fields > n_features:
        raise HogwildError(f"clicks:{n_rows}x{n_features}x{nnz} has rows of {fields} "
                           f"nonzeros, more than its {n_features:,} features")
    if test_rows is None:
        test_rows = int(min(max(n_rows // 100, 1000), 1_000_000))
    test_rows = check_int("test_rows", test_rows, 1)
    spec = f"clicks:{n_rows}x{n_features}x{nnz}"
    check_room(spec, "its planted model", n_features * 4)
    test_nnz = _offset(test_rows, fields, extra)
    info = {"version": _VERSION, "rows": n_rows, "features": n_features, "nnz": nnz,
            "test_rows": test_rows, "noise": float(noise), "seed": seed}
    if folder == "auto":
        root = data_cache_folder("clicks")
        if root is None:
            raise HogwildError(f"{spec} is written to the data cache, and no cache folder "
                               "of this user's alone can be used (set HOGWILD_CACHE)")
        folder = root / f"{n_rows}x{n_features}x{nnz}-n{noise:g}-t{test_rows}-s{seed}"
    folder = Path(folder)
    if folder.exists():
        opened = _open(folder, n_features)
        if opened is not None:
            return opened + (info,)
    check_disk(spec, "rows", (nnz + test_nnz) * 8 + (n_rows + test_rows) * 12,
               folder.parent)

    model_seed, train_seed, test_seed = np.random.SeedSequence(seed).spawn(3)
    w = np.random.default_rng(model_seed).standard_normal(n_features, np.float32)
    span = n_features // fields
    spread = _coprime_multiplier(span)
    rows_per_chunk = max(1, CHUNK_NONZEROS // fields)
    sets = []
    for name, rows, chunk_seed in (("train", n_rows, train_seed), ("test", test_rows, test_seed)):
        count = -(-rows // rows_per_chunk)
        lengths = {"indptr": rows + 1, "indices": _offset(rows, fields, extra),
                   "values": _offset(rows, fields, extra), "labels": rows}
        sets.append((name, {field: (dtype, lengths[field]) for field, dtype in FIELDS},
                     _chunks(rows, w, fields, extra, span, spread, np.float32(noise),
                             chunk_seeds(chunk_seed, count), rows_per_chunk)))
    bar = progress_bar(nnz + test_nnz, "nonzeros", "clicks", progress)
    try:
        write_entry(folder, info, sets, bar)
    except OSError as error:
        raise HogwildError(f"cannot write {spec} to {folder}: {error.strerror or error}") \
            from None
    finally:
        if bar is not None:
            bar.close()
    opened = _open(folder, n_features)
    if opened is None:
        raise HogwildError(f"the click log written to {folder} does not read back")
    return opened + (info,)


def _coprime_multiplier(span):
    """An odd multiplier near span * 0.618 with no factor in common with span: k ->
    k * multiplier mod span is then a permutation of the span's values."""
    multiplier = max(1, int(span * 0.6180339887)) | 1
    while math.gcd(multiplier, span) != 1:
        multiplier += 2
    return multiplier


def _open(folder, n_features):
    """(train, test) SvmlightData memory-mapped from a clicks folder, or None when it
    must be made again (see datasets.generated.open_entry)."""
    names = [f"{name}_{field}" for name in ("train", "test") for field, _ in FIELDS]
    arrays = open_entry(folder, _VERSION, names, "click log")
    if arrays is None:
        return None
    return tuple(_rows_of(arrays, name, n_features, folder) for name in ("train", "test"))


def _rows_of(arrays, name, n_features, folder):
    indptr = arrays[f"{name}_indptr"]
    X = sp.csr_matrix((arrays[f"{name}_values"], arrays[f"{name}_indices"], indptr),
                      shape=(indptr.size - 1, n_features), copy=False)
    return SvmlightData(X=X, y=arrays[f"{name}_labels"], zero_based=True, path=folder,
                        row_lines=None, random_order=True)
