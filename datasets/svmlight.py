"""Reading svmlight / libsvm files: plain, gzip or bzip2, with a binary cache.

    label index:value index:value ... [# comment]

Indices may be zero- or one-based ('auto': zero-based if any index 0 occurs),
'qid:N' tokens are ignored, blank and '#' lines are skipped. Parsed files are
cached as .npy arrays (memory-mapped on load), keyed by the file's path, inode,
size and times, so a repeat load takes milliseconds; the cache is used only in a
folder of this user's alone, and an entry that does not match its checksums is
parsed again (hogwild.datasets.cache).
"""
import hashlib
import json
import os
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from hogwild.datasets import svmlight_parser as P
from hogwild.datasets.cache import (Damaged, describe, entry_in_progress, open_arrays,
                                    read_header, remove_entry)
from hogwild.datasets.files import read_text_bytes
from hogwild.errors import DataFormatError, HogwildError, check_int
from hogwild.limits import MODEL_BYTES_PER_FEATURE, available_memory, size_text
from hogwild.paths import cache_dir, check_regular, data_cache_folder

_CACHE_VERSION = "svmlight-3"
_ARRAYS = ("indptr", "indices", "values", "labels", "row_lines")


@dataclass
class SvmlightData:
    X: sp.csr_matrix
    y: np.ndarray
    zero_based: bool
    path: Path
    row_lines: np.ndarray  # 1-based line number of each row, for error messages (or None)
    random_order: bool = False  # rows stored in random order: no shuffle needed


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
    """The cache entry's name: the file's path, inode, size and modification and
    change times (an edit, even one that restores the modification time, changes
    the change time), and how it is read."""
    info = path.stat()
    ident = json.dumps([_CACHE_VERSION, str(path.resolve()), info.st_ino, info.st_size,
                        info.st_mtime_ns, info.st_ctime_ns, str(zero_based)])
    return hashlib.sha256(ident.encode()).hexdigest()[:24]


def _load_cached(folder, path):
    """(arrays, zero_based) of the cache entry in ``folder``, or None when there is
    none; a damaged entry (see hogwild.datasets.cache) is removed, with a warning,
    so that the caller parses the file and caches it anew."""
    if not folder.exists():
        return None
    try:
        meta = read_header(folder, "meta.json")
        arrays = open_arrays(folder, meta.get("arrays"))
        if set(arrays) != set(_ARRAYS) or not isinstance(meta.get("zero_based"), bool):
            raise Damaged("it lacks some of its arrays")
    except Damaged as damage:
        warnings.warn(f"the binary cache of {path} in {folder} is damaged: {damage}; parsing "
                      "the file again", stacklevel=3)
        remove_entry(folder)
        return None
    return arrays, meta["zero_based"]


def _store_cached(root, folder, arrays, zero_based, source):
    """Best effort: a cache folder that cannot be written (a read-only or full disk)
    only means the next load parses the file again. The entry appears whole or not
    at all (written in a temporary folder, then renamed), its header last."""
    try:
        tmp = entry_in_progress(root)
    except OSError:
        return
    indices = arrays["indices"]
    meta = {"version": _CACHE_VERSION, "zero_based": zero_based, "source": str(source.resolve()),
            "rows": int(arrays["labels"].size), "nnz": int(indices.size),
            "max_index": int(indices.max()) if indices.size else -1,
            "arrays": describe({name: arrays[name] for name in _ARRAYS})}
    try:
        for name in _ARRAYS:
            np.save(tmp / f"{name}.npy", arrays[name])
        (tmp / "meta.json").write_text(json.dumps(meta))
        os.replace(tmp, folder)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # another process won the race, or no space


def cached_files():
    """What the binary cache holds: one dict per parsed file (source, rows, nnz,
    max_index, zero_based, bytes); entries it cannot read are left out."""
    root = cache_dir() / "datasets"
    entries = []
    for folder in sorted(root.iterdir()) if root.is_dir() else ():
        if folder.name.startswith("."):
            continue
        try:
            meta = read_header(folder, "meta.json")
            if meta.get("version") == _CACHE_VERSION:  # written by this version
                meta["bytes"] = sum(f.stat().st_size for f in folder.iterdir())
                entries.append(meta)
        except (Damaged, OSError):
            continue
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
                  cache=True) -> SvmlightData:
    """Load an svmlight/libsvm file (plain, .gz or .bz2; detected from its bytes).

    n_features: number of columns; default max index + 1. Indices beyond it are an
    error (extra_features="error") or are dropped with one warning ("drop"), which is
    how a test file is aligned to its training file's features.
    zero_based: True, False or "auto" (zero-based if any index 0 occurs).
    cache: keep a binary copy under the hogwild cache directory for fast reloads
    (only in a folder of this user's alone; a damaged copy is parsed anew).
    """
    if extra_features not in ("error", "drop"):
        raise HogwildError(f"extra_features must be 'error' or 'drop', got {extra_features!r}")
    if zero_based not in (True, False, "auto"):
        raise HogwildError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    if n_features is not None:
        check_int("n_features", n_features, 1)
    path = Path(path)
    check_regular(path)
    root = data_cache_folder("datasets") if cache else None
    entry = root / _cache_key(path, zero_based) if root is not None else None
    cached = _load_cached(entry, path) if entry is not None else None
    if cached is not None:
        arrays, zero_based = cached
    else:
        arrays = _parse_bytes(read_text_bytes(path), path)
        zero_based = _apply_base(arrays, zero_based, path)
        if entry is not None:
            _store_cached(root, entry, arrays, zero_based, path)
    max_index = int(arrays["indices"].max()) if arrays["indices"].size else -1
    if n_features is None:
        _check_feature_space(arrays, max_index, path)
        n_features = max_index + 1
    arrays = _align_features(arrays, n_features, extra_features, path)
    X = sp.csr_matrix((arrays["values"], arrays["indices"], arrays["indptr"]),
                      shape=(arrays["indptr"].size - 1, n_features), copy=False)
    return SvmlightData(X=X, y=np.asarray(arrays["labels"]), zero_based=zero_based, path=path,
                        row_lines=arrays["row_lines"])
