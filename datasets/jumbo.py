"""A "Jumbo"-style rating generator (the Hogwild! paper's synthetic workload).

A planted rank-r matrix M = A B^T, with A and B entries drawn N(0, r^-1/2) so
that every entry of M has variance 1, observed at uniformly random cells with
Gaussian noise of standard deviation ``noise``:

    z_uv = A_u . B_v + noise * eps,    eps ~ N(0, 1)

so the best achievable test RMSE is ``noise`` itself. Ratings are written in
chunks to memory-mapped .npy files (12 bytes per rating), in random order, so
that 100 million of them take 1.2 GB on disk and little memory to make, and
models can train on them without a copy.
"""
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np

from hogwild.datasets.cache import Damaged, describe, open_arrays, read_header
from hogwild.datasets.ratings import Ratings
from hogwild.errors import HogwildError, check_int
from hogwild.limits import physical_memory
from hogwild.paths import data_cache_folder

_VERSION = 2
CHUNK = 1 << 22
FIELDS = (("users", np.int32), ("items", np.int32), ("values", np.float32))
RATING_BYTES = 12  # int32 user, int32 item, float32 value


def parse_jumbo_spec(text):
    """'jumbo:ROWSxCOLSxNNZ' (e.g. jumbo:1000000x100000x100000000) -> (rows, cols, nnz)."""
    spec = text[len("jumbo:"):] if text.startswith("jumbo:") else text
    parts = spec.lower().replace("_", "").split("x")
    try:
        rows, cols, nnz = (int(float(p)) for p in parts)
    except ValueError:
        raise HogwildError(f"bad Jumbo size {text!r}; expected jumbo:ROWSxCOLSxNNZ, e.g. "
                           "jumbo:100000x20000x10000000") from None
    return rows, cols, nnz


def _write_chunks(arrays, A, B, noise, rng, progress):
    users, items, values = arrays
    n = values.shape[0]
    for start in range(0, n, CHUNK):
        stop = min(start + CHUNK, n)
        u = rng.integers(0, A.shape[0], stop - start, dtype=np.int32)
        v = rng.integers(0, B.shape[0], stop - start, dtype=np.int32)
        z = np.einsum("ij,ij->i", A[u], B[v])
        z += noise * rng.standard_normal(stop - start, dtype=np.float32)
        users[start:stop], items[start:stop], values[start:stop] = u, v, z
        if progress is not None:
            progress.update(stop - start)


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
    needed = (n_ratings + test_ratings) * RATING_BYTES + (n_rows + n_cols) * rank * 4
    memory = physical_memory()
    if memory is not None and needed > memory:
        raise HogwildError(f"jumbo:{n_rows}x{n_cols}x{n_ratings} needs {needed / 2**30:,.1f} "
                           f"GiB for its ratings and planted factors, more than this "
                           f"machine's {memory / 2**30:.1f} GiB of memory")
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

    rng = np.random.default_rng(seed)
    scale = np.float32(rank ** -0.25)
    A = (rng.standard_normal((n_rows, rank), dtype=np.float32) * scale)
    B = (rng.standard_normal((n_cols, rank), dtype=np.float32) * scale)
    bar = None
    if progress:
        try:
            from tqdm import tqdm
            bar = tqdm(total=n_ratings + test_ratings, unit="ratings", unit_scale=True,
                       desc="jumbo", disable=None)
        except ImportError:
            pass
    sizes = (("train", n_ratings), ("test", test_ratings))
    try:
        if folder is not None:
            state = rng.bit_generator.state
            try:
                return _write(Path(folder), sizes, A, B, np.float32(noise), rng, bar, info) \
                    + (info,)
            except OSError as error:  # a full or read-only disk: the run goes on in memory
                if not automatic:
                    raise HogwildError(f"cannot write the Jumbo matrix to {folder}: "
                                       f"{error.strerror or error}") from None
                warnings.warn(f"cannot cache the Jumbo matrix in {folder} "
                              f"({error.strerror or error}); it is made in memory", stacklevel=2)
                rng.bit_generator.state = state
                if bar is not None:
                    bar.reset()
        sets = []
        for _, n in sizes:
            arrays = tuple(np.empty(n, dtype) for _, dtype in FIELDS)
            _write_chunks(arrays, A, B, np.float32(noise), rng, bar)
            sets.append(Ratings(*arrays, source="jumbo"))
        return sets[0], sets[1], info
    finally:
        if bar is not None:
            bar.close()


def _write(folder, sizes, A, B, noise, rng, bar, info):
    """Write the ratings into ``folder`` (a temporary folder beside it, renamed when
    whole, its header last) and return them memory-mapped, as _open does."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".tmp-jumbo-"))
    try:
        written = {}
        for name, n in sizes:
            arrays = tuple(np.lib.format.open_memmap(tmp / f"{name}_{field}.npy", "w+",
                                                     dtype, (n,))
                           for field, dtype in FIELDS)
            _write_chunks(arrays, A, B, noise, rng, bar)
            for (field, _), array in zip(FIELDS, arrays):
                array.flush()
                written[f"{name}_{field}"] = array
            del arrays
        (tmp / "info.json").write_text(json.dumps({**info, "arrays": describe(written)}))
        del written
        shutil.rmtree(folder, ignore_errors=True)  # an interrupted earlier attempt
        os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    opened = _open(folder)
    if opened is None:
        raise HogwildError(f"the Jumbo matrix written to {folder} does not read back")
    return opened


def _open(folder):
    """(train, test) Ratings memory-mapped read-only from a Jumbo folder, or None
    (with a warning, the folder removed) when it does not match its checksums, so
    that the caller makes it again."""
    try:
        header = read_header(folder, "info.json")
        if header.get("version") != _VERSION:  # made by another hogwild: made again
            shutil.rmtree(folder, ignore_errors=True)
            return None
        arrays = open_arrays(folder, header["arrays"])
        sets = tuple(Ratings(*(arrays[f"{name}_{field}"] for field, _ in FIELDS),
                             source=str(folder)) for name in ("train", "test"))
    except (Damaged, KeyError, HogwildError) as damage:
        reason = f"it lacks {damage}" if isinstance(damage, KeyError) else damage
        warnings.warn(f"the Jumbo matrix cached in {folder} is damaged: {reason}; making it "
                      "again", stacklevel=3)
        shutil.rmtree(folder, ignore_errors=True)
        return None
    return sets
