"""Reading svmlight / libsvm files: plain, gzip or bzip2, with a binary cache.

    label index:value index:value ... [# comment]

Indices may be zero- or one-based ('auto': zero-based if any index 0 occurs),
'qid:N' tokens are ignored, blank and '#' lines are skipped. Parsed files are
cached as .npy arrays (memory-mapped on load), keyed by the file's path, size and
modification time, so a repeat load takes milliseconds.
"""
import hashlib
import json
import os
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from hogwild.datasets import svmlight_parser as P
from hogwild.datasets import files
from hogwild.datasets.files import read_bytes
from hogwild.errors import DataFormatError, HogwildError, check_int
from hogwild.paths import cache_dir, cache_folder

_CACHE_VERSION = "svmlight-2"
_ARRAYS = ("indptr", "indices", "values", "labels", "row_lines")


@dataclass
class SvmlightData:
    X: sp.csr_matrix
    y: np.ndarray
    zero_based: bool
    path: Path
    row_lines: np.ndarray  # 1-based line number of each row, for error messages


def _parse_bytes(raw, path):
    buf = np.frombuffer(raw, dtype=np.uint8)
    max_rows, max_nnz = P.count_upper_bounds(buf)
    indptr = np.empty(max_rows + 1, dtype=np.int64)
    indices = np.empty(max_nnz, dtype=np.int64)
    values = np.empty(max_nnz, dtype=np.float32)
    labels = np.empty(max_rows, dtype=np.float64)
    row_lines = np.empty(max_rows, dtype=np.int64)
    rows, nnz, status, line, start = P.parse(buf, indptr, indices, values, labels, row_lines)
    if status != P.OK:
        end = raw.find(b"\n", start)
        text = raw[start:end if end >= 0 else len(raw)].decode("utf-8", "replace").rstrip()
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise DataFormatError(f"{path}, line {line}: malformed svmlight line "
                              f"({P.REASONS[status]}): {shown!r}")
    if rows == 0:
        raise HogwildError(f"empty data: {path} holds no samples")
    return {"indptr": indptr[:rows + 1], "indices": indices[:nnz], "values": values[:nnz],
            "labels": labels[:rows], "row_lines": row_lines[:rows]}


def _apply_base(arrays, zero_based, path):
    indices = arrays["indices"]
    has_zero = indices.size > 0 and indices.min() == 0
    if zero_based == "auto":
        zero_based = bool(has_zero)
    elif not zero_based and has_zero:
        row = np.searchsorted(arrays["indptr"], np.argmax(indices == 0), side="right") - 1
        raise DataFormatError(f"{path}, line {arrays['row_lines'][row]}: feature index 0 in a "
                              "file read as one-based; pass zero_based=True")
    shifted = indices if zero_based else indices - 1
    arrays["indices"] = shifted.astype(np.int32)
    return zero_based


def _cache_key(path, zero_based):
    stat = path.stat()
    ident = json.dumps([_CACHE_VERSION, str(path.resolve()), stat.st_size, stat.st_mtime_ns,
                        str(zero_based)])
    return hashlib.sha256(ident.encode()).hexdigest()[:24]


def _load_cached(folder):
    meta = json.loads((folder / "meta.json").read_text())
    arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in _ARRAYS}
    return arrays, meta["zero_based"]


def _store_cached(folder, arrays, zero_based, source):
    """Best effort: a cache folder that cannot be written (a read-only disk) only
    means the next load parses the file again."""
    try:
        tmp = Path(tempfile.mkdtemp(dir=cache_folder("datasets"), prefix=".tmp-"))
    except OSError:
        return
    indices = arrays["indices"]
    meta = {"zero_based": zero_based, "source": str(source.resolve()),
            "rows": int(arrays["labels"].size), "nnz": int(indices.size),
            "max_index": int(indices.max()) if indices.size else -1}
    try:
        for name in _ARRAYS:
            np.save(tmp / f"{name}.npy", arrays[name])
        (tmp / "meta.json").write_text(json.dumps(meta))
        os.replace(tmp, folder)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # another process won the race, or no space


def cached_files():
    """What the binary cache holds: one dict per parsed file (source, rows, nnz,
    max_index, zero_based, bytes)."""
    root = cache_dir() / "datasets"
    entries = []
    for folder in sorted(root.iterdir()) if root.is_dir() else ():
        meta_path = folder / "meta.json"
        if folder.name.startswith(".") or not meta_path.is_file():
            continue
        meta = json.loads(meta_path.read_text())
        if "source" in meta:  # written by this version
            meta["bytes"] = sum(f.stat().st_size for f in folder.iterdir())
            entries.append(meta)
    return entries


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


# What a linear model needs per feature, at least: weights and their degree-scaled
# regulariser (float32 each), the feature degrees (int64) and the engine's copy of
# the weights (float32).
MODEL_BYTES_PER_FEATURE = 20


def _check_feature_space(arrays, max_index, path):
    """Refuse a largest feature index whose model cannot fit in this machine's
    memory (one index of 2e9 asked for 15 GiB before any error), naming its line."""
    memory = files.physical_memory()
    needed = (max_index + 1) * MODEL_BYTES_PER_FEATURE
    if memory is None or needed <= memory:
        return
    first = int(np.argmax(arrays["indices"] == max_index))
    row = int(np.searchsorted(arrays["indptr"], first, side="right") - 1)
    raise DataFormatError(
        f"{path}, line {arrays['row_lines'][row]}: feature index {max_index} makes a model "
        f"of {max_index + 1:,} features, which needs {needed / 2**30:.1f} GiB, more than "
        f"this machine's {memory / 2**30:.1f} GiB of memory; renumber the features densely "
        f"(or hash them into fewer)")


def load_svmlight(path, n_features=None, zero_based="auto", extra_features="error",
                  cache=True) -> SvmlightData:
    """Load an svmlight/libsvm file (plain, .gz or .bz2; detected from its bytes).

    n_features: number of columns; default max index + 1. Indices beyond it are an
    error (extra_features="error") or are dropped with one warning ("drop"), which is
    how a test file is aligned to its training file's features.
    zero_based: True, False or "auto" (zero-based if any index 0 occurs).
    cache: keep a binary copy under the hogwild cache directory for fast reloads.
    """
    if extra_features not in ("error", "drop"):
        raise HogwildError(f"extra_features must be 'error' or 'drop', got {extra_features!r}")
    if zero_based not in (True, False, "auto"):
        raise HogwildError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    if n_features is not None:
        check_int("n_features", n_features, 1)
    path = Path(path)
    if not path.is_file():
        raise HogwildError(f"cannot read {path}: "
                           f"{'it is a directory' if path.is_dir() else 'no such file'}")
    arrays = None
    if cache:
        folder = cache_dir() / "datasets" / _cache_key(path, zero_based)
        if (folder / "meta.json").is_file():
            arrays, zero_based = _load_cached(folder)
    if arrays is None:
        arrays = _parse_bytes(read_bytes(path), path)
        zero_based = _apply_base(arrays, zero_based, path)
        if cache:
            _store_cached(folder, arrays, zero_based, path)
    max_index = int(arrays["indices"].max()) if arrays["indices"].size else -1
    if n_features is None:
        _check_feature_space(arrays, max_index, path)
        n_features = max_index + 1
    arrays = _align_features(arrays, n_features, extra_features, path)
    X = sp.csr_matrix((arrays["values"], arrays["indices"], arrays["indptr"]),
                      shape=(arrays["indptr"].size - 1, n_features), copy=False)
    return SvmlightData(X=X, y=np.asarray(arrays["labels"]), zero_based=zero_based, path=path,
                        row_lines=arrays["row_lines"])
