"""Click logs in Criteo's display-ads layout, with a planted model ("criteo:ROWS").

Each line is a label (1: a click), 13 integer columns and 26 categorical ones,
tab-separated, no header, empty fields missing, as Criteo's Kaggle and Terabyte
logs are. Integer column j is missing with its own rate (5-45%) and is otherwise
floor(exp(N(mu_j, 1.5))) - shift_j (counts over orders of magnitude, a few
columns with small negative values); categorical column c is missing with its
own rate (0-40%) and otherwise takes one of K_c values (4 to 10^6 across the
columns) by a power law (Zipf, exponent 1, as datasets.clicks draws fields),
written as 8 hexadecimal digits of a hash of (c, value), as Criteo's are.

The label is a click with probability sigmoid(b + sum_j a_j log(1 + x_j) + sum_c
w_c(value)): each value's weight a normal draw of its own (from a hash of the
seed, the column and the value), smaller for rarer values (as a rare value's
effect is, in logs, mostly unknowable) and centred on its column's mean, so the
model is linear in exactly the features
that hogwild.datasets.delimited reads from the file (each categorical value
hashed within its column, each integer column's log); about a quarter of the
lines are clicks. Written in chunks on every core, each from a seed of its own:
the file depends on the seed alone. ``svmlight=True`` also writes the same rows
as svmlight text, with the features the generator itself hashed: a copy to
check the delimited reader against.
"""
import math
import os
import shutil
from pathlib import Path

import numpy as np
from numba import njit

from hogwild.datasets.cache import entry_in_progress, remove_entry
from hogwild.datasets.formatting import write_float, write_int
from hogwild.datasets.generated import check_disk, chunk_seeds, in_order, progress_bar
from hogwild.datasets.hashing import DEFAULT_HASH_BITS, MAX_HASH_BITS, hash_name, sort_row
from hogwild.errors import HogwildError, check_int
from hogwild.paths import data_cache_folder

INTEGER_COLUMNS, CATEGORICAL_COLUMNS = 13, 26
CHUNK_ROWS = 1 << 16
BIAS = -1.9
_VERSION = 1
# per integer column: log-mean, shift (negative values), missing rate, weight
_MU = np.array([0.5, 1.5, 1.0, 1.5, 6.0, 3.0, 1.5, 2.0, 3.5, 0.3, 0.8, 0.2, 1.6])
_SHIFT = np.array([0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], np.int64)
_INT_MISSING = np.array([0.45, 0.05, 0.2, 0.2, 0.05, 0.22, 0.05, 0.05, 0.05, 0.45, 0.05,
                         0.4, 0.2])
_INT_WEIGHT = np.array([0.25, -0.05, 0.0, -0.1, -0.08, 0.1, 0.2, 0.0, -0.05, 0.4, 0.3,
                        0.2, -0.1])
# per categorical column: values, missing rate, weights' standard deviation
_VALUES = np.unique(np.geomspace(4, 1_000_000, CATEGORICAL_COLUMNS).astype(np.int64))
_VALUES = np.resize(_VALUES, CATEGORICAL_COLUMNS)
_CAT_MISSING = np.array([0.0] * 18 + [0.05, 0.1, 0.2, 0.3, 0.4, 0.4, 0.0, 0.3])
_CAT_SIGMA = np.linspace(0.8, 0.3, CATEGORICAL_COLUMNS)
RARE_RANK = 100.0  # a value of rank k weighs 1 / (1 + k / RARE_RANK) of a frequent one's
_HEX = np.frombuffer(b"0123456789abcdef", np.uint8)
ROW_BYTES = 2 + INTEGER_COLUMNS * 21 + CATEGORICAL_COLUMNS * 9  # the longest a line can be


@njit(nogil=True, cache=True, inline="always")
def _mix(x):
    """splitmix64's finaliser: a 64-bit hash of x."""
    x = (x + np.uint64(0x9E3779B97F4A7C15))
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@njit(nogil=True, cache=True)
def _value_weight(salt, column, value, sigma):
    """The planted weight of a categorical value: sigma times a normal draw from a
    hash of (salt, column, value) (Box-Muller)."""
    h1 = _mix(np.uint64(salt) ^ _mix(np.uint64(column * 1_000_003 + value)))
    h2 = _mix(h1)
    u1 = (np.float64(h1 >> np.uint64(11)) + 1.0) / 9007199254740993.0
    u2 = np.float64(h2 >> np.uint64(11)) / 9007199254740992.0
    return sigma * math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


@njit(nogil=True, cache=True)
def _column_means(salt):
    """Each categorical column's mean planted weight over its values' power law,
    taken out of every value's weight, so that the clicks' rate hardly depends
    on the seed."""
    means = np.zeros(CATEGORICAL_COLUMNS)
    for c in range(CATEGORICAL_COLUMNS):
        span = _VALUES[c]
        total = math.log(span + 1.0)
        for rank in range(span):  # P(rank) = ln((rank + 2) / (rank + 1)) / ln(span + 1)
            p = (math.log(rank + 2.0) - math.log(rank + 1.0)) / total
            means[c] += p * _value_weight(salt, c, rank, _CAT_SIGMA[c]) / (1.0 + rank / RARE_RANK)
    return means


@njit(nogil=True, cache=True)
def _draw(seed, salt, means, rows, mask, with_svmlight, tsv, svm):
    """Draw ``rows`` lines from ``seed`` into tsv (and their svmlight copy into svm);
    returns the bytes of each. numba's generator of the calling thread, seeded
    here: the chunk depends on its seed alone."""
    np.random.seed(seed)
    t = 0
    s = 0
    indices = np.empty(INTEGER_COLUMNS + CATEGORICAL_COLUMNS, np.int64)
    values = np.empty(INTEGER_COLUMNS + CATEGORICAL_COLUMNS, np.float64)
    hexes = np.empty(8, np.uint8)
    integer_seeds = np.empty(INTEGER_COLUMNS, np.int64)
    column_seeds = np.empty(CATEGORICAL_COLUMNS, np.int64)
    name = np.empty(4, np.uint8)
    line = np.empty(INTEGER_COLUMNS, np.int64)
    present = np.empty(INTEGER_COLUMNS, np.bool_)
    cats = np.empty(CATEGORICAL_COLUMNS, np.int64)
    for c in range(INTEGER_COLUMNS + CATEGORICAL_COLUMNS):  # the delimited reader's names
        length = write_int(name, 0, c + 1)
        if c < INTEGER_COLUMNS:
            integer_seeds[c] = hash_name(name, 0, length, 0)
        else:
            column_seeds[c - INTEGER_COLUMNS] = hash_name(name, 0, length, 0)
    for r in range(rows):
        logit = BIAS
        n = 0
        for j in range(INTEGER_COLUMNS):
            present[j] = np.random.random() >= _INT_MISSING[j]
            if present[j]:
                x = np.int64(math.exp(_MU[j] + 1.5 * np.random.standard_normal())) - _SHIFT[j]
                line[j] = x
                if x != 0:
                    v = math.copysign(math.log1p(abs(x)), x)
                    logit += _INT_WEIGHT[j] * v
                    indices[n] = integer_seeds[j] & mask
                    values[n] = np.float32(v)
                    n += 1
        for c in range(CATEGORICAL_COLUMNS):
            if np.random.random() < _CAT_MISSING[c]:
                cats[c] = -1
                continue
            span = _VALUES[c]
            rank = min(np.int64(math.exp(np.random.random() * math.log(span + 1.0))) - 1,
                       span - 1)
            cats[c] = rank
            logit += _value_weight(salt, c, rank, _CAT_SIGMA[c]) / (1.0 + rank / RARE_RANK) \
                - means[c]
        label = 1 if np.random.random() < 1.0 / (1.0 + math.exp(-logit)) else 0
        tsv[t] = 48 + label
        t += 1
        for j in range(INTEGER_COLUMNS):
            tsv[t] = 9
            t += 1
            if present[j]:
                t = write_int(tsv, t, line[j])
        for c in range(CATEGORICAL_COLUMNS):
            tsv[t] = 9
            t += 1
            if cats[c] >= 0:
                h = _mix(np.uint64(c * 1_000_003 + cats[c]) ^ np.uint64(0xC1EA0))
                for k in range(8):
                    hexes[k] = _HEX[(h >> np.uint64(4 * (7 - k))) & np.uint64(15)]
                    tsv[t + k] = hexes[k]
                t += 8
                if with_svmlight:
                    indices[n] = hash_name(hexes, 0, 8, column_seeds[c]) & mask
                    values[n] = 1.0
                    n += 1
        tsv[t] = 10
        t += 1
        if with_svmlight:
            end = sort_row(indices, values, 0, n)
            svm[s] = 48 + label
            s += 1
            for k in range(end):
                svm[s] = 32
                s = write_int(svm, s + 1, indices[k])
                svm[s] = 58
                s = write_float(svm, s + 1, values[k])
            svm[s] = 10
            s += 1
    return t, s


def parse_criteo_spec(text):
    """'criteo:ROWS' (1e6 and 1_000_000 spelled either way) -> rows."""
    spec = text[len("criteo:"):]
    try:
        rows = int(float(spec.replace("_", "")))
    except ValueError:
        rows = 0
    if rows < 1:
        raise HogwildError(f"bad Criteo-layout size {text!r}; expected criteo:ROWS, e.g. "
                           "criteo:1000000")
    return rows


def write_criteo(path, rows, seed=0, part=0, svmlight=None, hash_bits=DEFAULT_HASH_BITS,
                 progress=False):
    """Write ``rows`` Criteo-layout lines (see the module docstring) to ``path``: the
    planted model is the seed's, the lines part ``part`` of its draws (0 for a
    training file, 1 for its test file); where ``svmlight`` names a file, the same
    rows there as svmlight text with the features hashed into 2^hash_bits (those
    hogwild.datasets.delimited reads, zero-based)."""
    rows = check_int("rows", rows, 1)
    hash_bits = check_int("hash_bits", hash_bits, 1, MAX_HASH_BITS)
    chunks = -(-rows // CHUNK_ROWS)
    salt = int(np.random.SeedSequence(seed).generate_state(1, np.uint32)[0])
    seeds = chunk_seeds(np.random.SeedSequence([seed, 1 + part]), chunks)
    mask = (1 << hash_bits) - 1
    means = _column_means(salt)

    def draw(index):
        count = min(CHUNK_ROWS, rows - index * CHUNK_ROWS)
        tsv = np.empty(count * ROW_BYTES, np.uint8)
        svm = np.empty(count * (2 + 39 * 28) if svmlight else 0, np.uint8)
        t, s = _draw(seeds[index], salt, means, count, mask, svmlight is not None, tsv, svm)
        return tsv[:t], svm[:s]

    bar = progress_bar(rows, "rows", "criteo", progress)
    with open(path, "wb") as out, (open(svmlight, "wb") if svmlight else open(
            "/dev/null", "wb")) as copy:
        for index, (tsv, svm) in enumerate(in_order(chunks, draw)):
            out.write(tsv)
            copy.write(svm)
            if bar is not None:
                bar.update(min(CHUNK_ROWS, rows - index * CHUNK_ROWS))
    if bar is not None:
        bar.close()
    return Path(path)


def make_criteo(rows, test_rows=None, seed=0, progress=False):
    """(train path, test path) of Criteo-layout files in the data cache (written once
    for each rows, test_rows and seed); test_rows default: 1% of rows, between
    1,000 and 1,000,000."""
    rows = check_int("rows", rows, 1)
    if test_rows is None:
        test_rows = int(min(max(rows // 100, 1000), 1_000_000))
    root = data_cache_folder("criteo")
    if root is None:
        raise HogwildError(f"criteo:{rows} is written to the data cache, and no cache folder "
                           "of this user's alone can be used (set HOGWILD_CACHE_DIR)")
    folder = root / f"v{_VERSION}-{rows}-t{test_rows}-s{seed}"
    paths = folder / "train.tsv", folder / "test.tsv"
    if not all(p.is_file() for p in paths):  # written whole or not at all
        check_disk(f"criteo:{rows}", "lines", (rows + test_rows) * 300, root)
        tmp = entry_in_progress(root)
        try:
            write_criteo(tmp / "train.tsv", rows, seed, progress=progress)
            write_criteo(tmp / "test.tsv", test_rows, seed, part=1)
            remove_entry(folder)
            os.replace(tmp, folder)
        except OSError as error:
            raise HogwildError(f"cannot write criteo:{rows} to {folder}: "
                               f"{error.strerror or error}") from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return paths
