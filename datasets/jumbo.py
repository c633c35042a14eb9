"""A "Jumbo"-style rating generator (the Hogwild! paper's synthetic workload).

A planted rank-r matrix M = A B^T, with A and B entries drawn N(0, r^-1/2) so
that every entry of M has variance 1, observed at uniformly random cells with
Gaussian noise of standard deviation ``noise``:

    z_uv = A_u . B_v + noise * eps,    eps ~ N(0, 1)

so the best achievable test RMSE is ``noise`` itself. Ratings are drawn in
chunks on every core and written to .npy files (12 bytes per rating), in random
order, so that 100 million of them take 1.2 GB on disk and the memory of a few
chunks to make: data larger than memory is made as easily (2.5 x 10^9 ratings,
30 GB), and models can read it back memory-mapped.
"""
import warnings
from pathlib import Path

import numpy as np
from numba import njit

from hogwild.datasets.generated import (check_disk, check_room, chunk_seeds, in_order,
                                        open_entry, parse_sizes, progress_bar,
                                        write_entry)
from hogwild.datasets.ratings import Ratings
from hogwild.errors import HogwildError, check_int
from hogwild.paths import data_cache_folder
from hogwild.random_init import normal_array

_VERSION = 3  # 3: chunks drawn in compiled code, each from a seed of its own
CHUNK = 1 << 22
FIELDS = (("users", np.int32), ("items", np.int32), ("values", np.float32))
RATING_BYTES = 12  # int32 user, int32 item, float32 value


def parse_jumbo_spec(text):
    """'jumbo:ROWSxCOLSxNNZ' (e.g. jumbo:1000000x100000x100000000) -> (rows, cols, nnz)."""
    return parse_sizes(text, "jumbo", "Jumbo", "jumbo:ROWSxCOLSxNNZ, e.g. "
                       "jumbo:100000x20000x10000000")


@njit(nogil=True, cache=True)
def _draw(A, B, noise, seed, users, items, values):
    """One chunk of ratings from its own seed (numba's generator of the calling
    thread, seeded here: the chunk depends on its seed alone, not on which thread
    draws it)."""
    np.random.seed(seed)
    for k in range(values.size):  # the draws first: then the reads of random rows
        users[k] = np.random.randint(0, A.shape[0])  # below have no dependency between
        items[k] = np.random.randint(0, B.shape[0])  # them and overlap in the core
        values[k] = noise * np.float32(np.random.standard_normal())
    for k in range(values.size):
        u, v = users[k], items[k]
        z = np.float32(0.0)
        for j in range(A.shape[1]):
            z += A[u, j] * B[v, j]
        values[k] += z


def _chunks(n, A, B, noise, seeds):
    """Yield (users, items, values) chunk by chunk, in order, drawn on every core."""
    def draw(index):
        arrays = tuple(np.empty(min(CHUNK, n - index * CHUNK), dtype) for _, dtype in FIELDS)
        _draw(A, B, noise, seeds[index], *arrays)
        return arrays

    return in_order(-(-n // CHUNK), draw)


def make_jumbo(n_rows, n_cols, n_ratings, rank=10, noise=0.5, test_ratings=None, seed=0,
               folder="auto", progress=False):
    """(train, test, info): Ratings of a planted rank-``rank`` matrix plus noise.

    test_ratings: held-out ratings drawn the same way (default 1% of n_ratings,
    between 1,000 and 1,000,000). folder: "auto" keeps the files in the cache
    (reused by later calls with the same arguments), None keeps everything in
    memory, or a directory path. Ids are 0-based and dense (every user and item
    index exists, whether rated or not).
    """
    n_rows = check_int("rows", n_rows, 1)
    n_cols = check_int("columns", n_cols, 1)
    n_ratings = check_int("ratings", n_ratings, 1)
    rank = check_int("rank", rank, 1, min(n_rows, n_cols))
    if max(n_rows, n_cols) >= 2 ** 31:
        raise HogwildError("Jumbo rows and columns must be < 2**31")
    if not noise >= 0:
        raise HogwildError(f"noise must be >= 0, got {noise!r}")
    if test_ratings is None:
        test_ratings = int(min(max(n_ratings // 100, 1000), 1_000_000))
    test_ratings = check_int("test_ratings", test_ratings, 1)
    spec = f"jumbo:{n_rows}x{n_cols}x{n_ratings}"
    ratings_bytes = (n_ratings + test_ratings) * RATING_BYTES
    factor_bytes = (n_rows + n_cols) * rank * 4
    check_room(spec, "its planted factors", factor_bytes)
    info = {"version": _VERSION, "rows": n_rows, "cols": n_cols, "ratings": n_ratings,
            "test_ratings": test_ratings, "rank": rank, "noise": float(noise), "seed": seed}
    automatic = folder == "auto"
    if automatic:  # None where the cache cannot be used: generated in memory
        root = data_cache_folder("jumbo")
        folder = None if root is None else root / (
            f"{n_rows}x{n_cols}x{n_ratings}-r{rank}-n{noise:g}-t{test_ratings}-s{seed}")
    if folder is not None and Path(folder).exists():
        opened = _open(Path(folder))
        if opened is not None:
            return opened + (info,)
    if folder is None:
        check_room(spec, "its ratings and planted factors in memory (no cache folder)",
                   factor_bytes + ratings_bytes)
    else:
        check_disk(spec, "ratings", ratings_bytes, Path(folder).parent)

    factor_seeds = np.random.SeedSequence(seed).spawn(4)
    scale = rank ** -0.25
    A = normal_array((n_rows, rank), scale, factor_seeds[0])
    B = normal_array((n_cols, rank), scale, factor_seeds[1])
    sizes = (("train", n_ratings, factor_seeds[2]), ("test", test_ratings, factor_seeds[3]))
    bar = progress_bar(n_ratings + test_ratings, "ratings", "jumbo", progress)
    noise = np.float32(noise)
    try:
        if folder is not None:
            try:
                return _write(Path(folder), sizes, A, B, noise, bar, info) + (info,)
            except OSError as error:  # a full or read-only disk: the run goes on in memory
                if not automatic:
                    raise HogwildError(f"cannot write the Jumbo matrix to {folder}: "
                                       f"{error.strerror or error}") from None
                check_room(spec, f"its ratings in memory, since they cannot be cached in "
                           f"{folder} ({error.strerror or error})", factor_bytes + ratings_bytes)
                warnings.warn(f"cannot cache the Jumbo matrix in {folder} "
                              f"({error.strerror or error}); it is made in memory", stacklevel=2)
                if bar is not None:
                    bar.reset()
        sets = []
        for _, n, chunk_seed in sizes:
            arrays = tuple(np.empty(n, dtype) for _, dtype in FIELDS)
            start = 0
            for chunk in _chunks(n, A, B, noise, _chunk_seeds(chunk_seed, n)):
                for whole, part in zip(arrays, chunk):
                    whole[start:start + part.size] = part
                start += chunk[0].size
                if bar is not None:
                    bar.update(chunk[0].size)
            sets.append(Ratings(*arrays, source="jumbo"))
        return sets[0], sets[1], info
    finally:
        if bar is not None:
            bar.close()


def _chunk_seeds(sequence, n):
    return chunk_seeds(sequence, -(-n // CHUNK))


def _write(folder, sizes, A, B, noise, bar, info):
    """Write the ratings chunk by chunk into the cache entry ``folder`` (see
    datasets.generated.write_entry: the memory of a few chunks, whatever the size)
    and return them memory-mapped, as _open does."""
    write_entry(folder, info, [
        (name, {field: (dtype, n) for field, dtype in FIELDS},
         _chunks(n, A, B, noise, _chunk_seeds(chunk_seed, n)))
        for name, n, chunk_seed in sizes], bar)
    opened = _open(folder)
    if opened is None:
        raise HogwildError(f"the Jumbo matrix written to {folder} does not read back")
    return opened


def _open(folder):
    """(train, test) Ratings memory-mapped read-only from a Jumbo folder, or None
    when it must be made again (see datasets.generated.open_entry)."""
    names = [f"{name}_{field}" for name in ("train", "test") for field, _ in FIELDS]
    arrays = open_entry(folder, _VERSION, names, "Jumbo matrix")
    if arrays is None:
        return None
    return tuple(Ratings(*(arrays[f"{name}_{field}"] for field, _ in FIELDS),
                         source=str(folder)) for name in ("train", "test"))
