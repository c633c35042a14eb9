"""Reading svmlight / libsvm files (plain or compressed) through a binary cache.

    label [qid:N] index:value index:value ... [# comment]

Indices may be zero- or one-based ('auto': zero-based if any index 0 occurs),
'qid:N' tokens are kept apart (SvmlightData.qids), blank and '#' lines are
skipped. A file is parsed on every core, in blocks, straight into a cache entry
of .npy arrays (hogwild.datasets.ingest), memory-mapped on load and keyed by the
file's path, inode, size and times, so that a repeat load takes milliseconds and
a file larger than memory loads as a small one does; the cache is used only in a
folder of this user's alone, and an entry that does not match its checksums is
parsed again (hogwild.datasets.cache).
"""
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from hogwild.datasets import svmlight_parser as P
from hogwild.datasets.parts import check_files, data_source
from hogwild.datasets.ingest import (Piece, TextFormat, block_arrays, cached_entries,
                                     parsed)
from hogwild.disk_arrays import on_disk
from hogwild.errors import DataFormatError, HogwildError, check_int
from hogwild.limits import MODEL_BYTES_PER_FEATURE, available_memory, size_text

_CACHE_VERSION = "svmlight-4"


@dataclass
class SvmlightData:
    X: sp.csr_matrix
    y: np.ndarray
    zero_based: bool
    path: Path
    row_lines: np.ndarray  # 1-based line number of each row, for error messages (or None)
    random_order: bool = False  # rows stored in random order: no shuffle needed
    qids: np.ndarray = None  # each row's qid (-1 where it has none), where the file gives any

    @property
    def trained_in_place(self):
        """Whether the rows train where they are, with no shuffled copy (each epoch's
        plan shuffles runs of rows): rows in random order, or memory-mapped from
        the binary cache, which may be larger than memory."""
        return self.random_order or on_disk(self.X.data)


class SvmlightFormat(TextFormat):
    """svmlight/libsvm lines for hogwild.datasets.ingest: indices stored minus the
    base (zero_based="auto": the first block's, 0 if it writes an index 0, else 1;
    a later 0 makes the file zero-based after all, fixed once at the end)."""

    fields = {"indptr": np.int64, "indices": np.int32, "values": np.float32,
              "labels": np.float64, "row_lines": np.int64, "qids": np.int64}
    offsets, lines, what = {"indptr": "indices"}, "row_lines", "svmlight line"
    version = _CACHE_VERSION
    header = {"zero_based": bool, "max_index": int, "qids": bool, "rows": int, "nnz": int}

    def __init__(self, zero_based):
        self.zero_based = zero_based
        self.base = 0 if zero_based is True else 1 if zero_based is False else None
        self.needs_first = self.base is None

    def parse(self, data, first=False):
        rows, nonzeros = (data.size + 1) // 2 + 1, (data.size + 1) // 4 + 1
        out = block_arrays({"indptr": (rows + 1, np.int64), "indices": (nonzeros, np.int32),
                            "values": (nonzeros, np.float32), "labels": (rows, np.float64),
                            "row_lines": (rows, np.int64), "qids": (rows, np.int64)})
        base = 0 if self.base is None else self.base
        (rows, nnz, lines, status, bad_line, bad_at, low, high, any_qid) = P.parse_block(
            data, base, self.zero_based is False, out["indptr"], out["indices"], out["values"],
            out["labels"], out["row_lines"], out["qids"])
        error = None if status == P.OK else (P.REASONS[status], bad_line,
                                             None if status == P.ZERO_INDEX else bad_at)
        arrays = {name: a[:nnz] if name in ("indices", "values") else
                  a[:rows + 1] if name == "indptr" else a[:rows] for name, a in out.items()}
        return Piece(arrays, rows, lines, error,
                     {"low": low, "high": high, "qid": any_qid, "base": base})

    def first(self, piece):
        """Choose the base from the first block (read with base 0): its indices are
        shifted where the file turns out one-based."""
        if self.base is None:
            self.base = 0 if piece.stats["low"] == 0 else 1
            if self.base == 1 and piece.error is None:
                piece.arrays["indices"] = piece.arrays["indices"] - 1
                piece.crcs.pop("indices", None)
                piece.stats["base"] = 1

    def merge(self, total, stats):
        return {"low": min(total["low"], stats["low"]), "high": max(total["high"], stats["high"]),
                "qid": total["qid"] or stats["qid"], "base": total["base"]}

    def finish(self, sink, totals):
        """The header; a one-based guess that a later index 0 refuted is undone
        (every index shifted back: the file is zero-based)."""
        stats = totals.stats
        shift = stats["base"] == 1 and stats["low"] == 0
        if shift:
            sink.rewrite("indices", lambda piece: piece + np.int32(1))
        base = 0 if shift else stats["base"]
        return {"zero_based": base == 0, "nnz": totals.lengths["indices"],
                "max_index": max(stats["high"] - base, -1), "qids": bool(stats["qid"])}


def cached_files():
    """What the binary cache holds of svmlight files: one dict per parsed file
    (source, rows, nnz, max_index, zero_based, bytes)."""
    return [entry for entry in cached_entries() if entry.get("version") == _CACHE_VERSION]


def _align_features(arrays, n_features, extra_features, path):
    """Enforce 0 <= index < n_features: raise, or drop the extra features with one warning."""
    indices, indptr = arrays["indices"], arrays["indptr"]
    beyond = indices >= n_features
    if not beyond.any():
        return arrays
    first = int(np.argmax(beyond))
    row = int(np.searchsorted(indptr, first, side="right") - 1)
    if extra_features == "error":
        raise DataFormatError(
            f"{path}, line {arrays['row_lines'][row]}: feature index out of range "
            f"({int(indices[first])} as zero-based, n_features={n_features})")
    dropped_features = np.unique(indices[beyond])
    warnings.warn(f"{path}: dropped {int(beyond.sum())} values of {dropped_features.size} "
                  f"features beyond the training data's {n_features} features", stacklevel=3)
    keep = ~beyond
    kept_per_row = np.add.reduceat(keep.astype(np.int64), indptr[:-1]) \
        if indices.size else np.zeros(indptr.size - 1, np.int64)
    kept_per_row[np.diff(indptr) == 0] = 0  # reduceat repeats a value for empty rows
    new_indptr = np.concatenate([[0], np.cumsum(kept_per_row)])
    return dict(arrays, indptr=new_indptr, indices=indices[keep],
                values=arrays["values"][keep])


def _check_feature_space(arrays, max_index, path):
    """Refuse a largest feature index whose model cannot fit in the memory available
    now (one index of 2e9 asked for 15 GiB before any error), naming its line."""
    memory = available_memory()
    needed = (max_index + 1) * MODEL_BYTES_PER_FEATURE
    if memory is None or needed <= memory:
        return
    first = int(np.argmax(arrays["indices"] == max_index))
    row = int(np.searchsorted(arrays["indptr"], first, side="right") - 1)
    raise DataFormatError(
        f"{path}, line {arrays['row_lines'][row]}: feature index {max_index} makes a model "
        f"of {max_index + 1:,} features, which needs {size_text(needed)}, more than the "
        f"{size_text(memory)} of memory available; renumber the features densely "
        f"(or hash them into fewer)")


def load_svmlight(path, n_features=None, zero_based="auto", extra_features="error",
                  cache=True, progress=None) -> SvmlightData:
    """Load an svmlight/libsvm file (plain, gzip, bzip2, xz or zstd; detected from its
    bytes), parsed on every core into the binary cache and memory-mapped from it,
    so that a file larger than memory loads too (and trains from disk).

    n_features: number of columns; default max index + 1. Indices beyond it are an
    error (extra_features="error") or are dropped with one warning ("drop"), which is
    how a test file is aligned to its training file's features.
    zero_based: True, False or "auto" (zero-based if any index 0 occurs).
    cache: keep a binary copy under the hogwild cache directory for fast reloads
    (only in a folder of this user's alone; a damaged copy is parsed anew); False
    parses into memory.
    progress: called as progress(bytes_read, file_bytes) while the file is parsed.
    """
    if extra_features not in ("error", "drop"):
        raise HogwildError(f"extra_features must be 'error' or 'drop', got {extra_features!r}")
    if zero_based not in (True, False, "auto"):
        raise HogwildError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    if n_features is not None:
        check_int("n_features", n_features, 1)
    path = data_source(path)
    check_files(path)
    arrays, meta = parsed(path, SvmlightFormat(zero_based), [str(zero_based)], cache, progress)
    max_index = meta["max_index"]
    if n_features is None:
        _check_feature_space(arrays, max_index, path)
        n_features = max_index + 1
    if max_index >= n_features:
        arrays = _align_features(arrays, n_features, extra_features, path)
    X = sp.csr_matrix((arrays["values"], arrays["indices"], arrays["indptr"]),
                      shape=(arrays["indptr"].size - 1, n_features), copy=False)
    return SvmlightData(X=X, y=arrays["labels"], zero_based=meta["zero_based"], path=path,
                        row_lines=arrays["row_lines"],
                        qids=arrays["qids"] if meta["qids"] else None)
