"""Ratings in: the accepted input forms, checked values, and external ids mapped
to dense indices (and back)."""
import contextlib
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from hogwild.datasets.cache import entry_in_progress
from hogwild.datasets.ratings import Ratings
from hogwild.errors import HogwildError
from hogwild.disk_arrays import extremes, on_disk, pieces
from hogwild.paths import data_cache_folder


def ratings_arrays(ratings):
    """(users, items, values) from Ratings, a (users, items, values) tuple, a pandas
    DataFrame (columns user/item/rating if present, else the first three) or a
    scipy.sparse matrix (row = user, column = item)."""
    if isinstance(ratings, Ratings):
        return ratings.users, ratings.items, ratings.values
    if sp.issparse(ratings):
        coo = ratings.tocoo()
        return coo.row, coo.col, coo.data
    if hasattr(ratings, "columns") and hasattr(ratings, "iloc"):  # a pandas DataFrame
        names = [c for c in ("user", "item", "rating") if c in ratings.columns]
        frame = ratings[names] if len(names) == 3 else ratings.iloc[:, :3]
        if frame.shape[1] < 3:
            raise HogwildError("a ratings DataFrame needs user, item and rating columns")
        return tuple(frame.iloc[:, i].to_numpy() for i in range(3))
    if isinstance(ratings, (tuple, list)) and len(ratings) == 3:
        return tuple(np.asarray(a) for a in ratings)
    raise HogwildError("ratings must be hogwild Ratings, a (users, items, values) tuple, a "
                       f"pandas DataFrame or a scipy.sparse matrix, got {type(ratings).__name__}")


def check_values(values, what="ratings"):
    """float32 ratings; NaN, Inf or a value float32 cannot hold is an error that
    names the first bad position. Checked in chunks, so that 100 million ratings
    need no large temporaries."""
    given = np.asanyarray(values)  # a memory map stays one (see hogwild.streaming)
    if given.dtype.kind not in "fiu":
        raise HogwildError(f"{what} must be numbers, got dtype {given.dtype}")
    with np.errstate(over="ignore"):  # beyond float32's range becomes inf: refused below
        values = given.astype(np.float32, copy=False)
    start = 0
    for piece in pieces(values):
        bad = ~np.isfinite(piece)
        if bad.any():
            k = start + int(np.argmax(bad))
            total = sum(int(np.count_nonzero(~np.isfinite(p))) for p in pieces(values))
            raise HogwildError(f"{what} hold {total} NaN, Inf or values beyond float32's "
                               f"range (the first at position {k}: {given[k]})")
        start += piece.size
    return values


def _table_fits(ids):
    """A lookup table indexed by id (max id + 1 entries) only when it is small
    against the data: one hostile id of 10**12 must not ask for terabytes."""
    if ids.dtype.kind not in "iu" or ids.size == 0:
        return False
    low, high = extremes(ids)
    return low >= 0 and high < 4 * ids.size + (1 << 20)


class IdIndex:
    """Maps external ids (any hashable type) to dense indices 0..n-1 and back.

    ``ids[i]`` is the external id of index i. Integer ids use a lookup table when
    it is small against the number of ids (no sort, O(number of ratings)) and a
    sorted search otherwise; other ids a dictionary.
    """

    def __init__(self, ids):
        self.ids = ids
        self._table = None
        self._sorted = None
        if _table_fits(ids):
            self._table = np.full(int(ids.max()) + 1, -1, np.int32)
            self._table[ids] = np.arange(ids.size, dtype=np.int32)
        elif ids.dtype.kind in "iu":
            order = np.argsort(ids, kind="stable")
            self._sorted = (ids[order], order)
        else:
            self._lookup = {key: i for i, key in enumerate(ids.tolist())}

    @classmethod
    def build(cls, raw, scratch=None, name="ids"):
        """(index, dense int32 indices of raw): ids in sorted order. Where raw lies on
        disk (a cache's maps) and ``scratch`` (a folder, see scratch_folder) is
        given, the dense indices are written to a file there, name.npy, and
        memory-mapped from it read-only: they take no memory, and a run streams
        them from disk as it would raw."""
        index, keys, table = cls.keyed(raw)
        if table is None:
            return index, keys.astype(np.int32, copy=False)
        if scratch is not None and on_disk(raw):
            path = scratch / f"{name}.npy"
            with open(path, "wb") as f:
                np.lib.format.write_array_header_1_0(f, {"descr": "<i4", "fortran_order": False,
                                                         "shape": (keys.size,)})
                for piece in pieces(keys):
                    f.write(table[piece].data)
            return index, np.load(path, mmap_mode="r")
        dense, start = np.empty(keys.size, np.int32), 0
        for piece in pieces(keys):  # keys on disk are read, not mapped into memory
            dense[start:start + piece.size] = table[piece]
            start += piece.size
        return index, dense

    @classmethod
    def keyed(cls, raw):
        """(index, keys, table): the dense index of raw[k] is table[keys[k]], or
        keys[k] itself where table is None. Integer ids that a small table maps
        are their own keys (raw itself, no copy: 10^8 ids are 0.4-0.8 GB), the
        table int32 with -1 for absent ids; other ids become dense int32 keys."""
        raw = np.asanyarray(raw)  # a memory map stays one (see hogwild.streaming)
        if raw.size == 0:
            raise HogwildError("empty data: no ratings")
        if _table_fits(raw):
            present = np.zeros(int(extremes(raw)[1]) + 1, bool)
            for piece in pieces(raw):
                present[piece] = True
            keys = raw if raw.dtype in (np.int32, np.int64) else raw.astype(np.int64)
            if present.all():
                return cls(np.arange(present.size)), keys, None  # already dense
            table = np.cumsum(present, dtype=np.int32) - 1
            table[~present] = -1
            return cls(np.flatnonzero(present)), keys, table
        try:
            ids, dense = np.unique(raw, return_inverse=True)
        except TypeError:  # mixed types that do not sort
            ids = np.array(list(dict.fromkeys(raw.tolist())), dtype=object)
            lookup = {key: i for i, key in enumerate(ids.tolist())}
            dense = np.fromiter((lookup[key] for key in raw.tolist()), np.int64, raw.size)
        return cls(ids), dense.astype(np.int32), None

    def __len__(self):
        return self.ids.size

    def find(self, raw):
        """Dense indices of raw ids; -1 where an id was never seen."""
        raw = np.asarray(raw)
        if self._table is not None or self._sorted is not None:
            out = np.full(raw.shape, -1, np.int64)
            if raw.dtype.kind not in "iu":
                return out  # integer ids only: anything else was never seen
            if self._table is not None:
                inside = (raw >= 0) & (raw < self._table.size)
                out[inside] = self._table[raw[inside]]
                return out
            known, order = self._sorted
            inside = (raw >= known[0]) & (raw <= known[-1])  # also keeps uint64 in range
            wanted = raw[inside].astype(known.dtype)
            where = np.minimum(np.searchsorted(known, wanted), known.size - 1)
            out[inside] = np.where(known[where] == wanted, order[where], -1)
            return out
        return np.fromiter((self._lookup.get(key, -1) for key in raw.tolist()), np.int64,
                           raw.size)


@contextlib.contextmanager
def scratch_folder():
    """A folder of this process's in the cache for arrays a fit writes for itself
    (dense ids of ratings on disk), removed when the fit ends, or by a later one
    once this process is gone (killed meanwhile); with no usable cache folder, a
    temporary folder."""
    root = data_cache_folder("scratch")
    folder = entry_in_progress(root) if root is not None else \
        Path(tempfile.mkdtemp(prefix="hogwild-scratch-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def relabelled(ids, labels):
    """ids reordered so that new index labels[i] holds the id of old index i."""
    out = np.empty_like(ids)
    out[labels] = ids
    return out


def warn_unseen(u, i, what, stacklevel=3):
    """One warning for the pairs whose user or item was never seen in training,
    ``stacklevel`` frames up (the user's call)."""
    unseen = (u < 0) | (i < 0)
    if unseen.any():
        warnings.warn(f"{int(unseen.sum())} of {unseen.size} {what} have a user or item never "
                      "seen in training; predicted by the training mean plus the known "
                      "side's bias", stacklevel=stacklevel)
