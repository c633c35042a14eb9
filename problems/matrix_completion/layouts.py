"""Block layouts of rating files kept in the data cache, so that a later run with
the same seed and grid trains at once: the laid-out ratings are read (memory
mapped) instead of mapping ids and laying out 10^8 ratings again (7 s of a 10^8
run's set-up), and ratings on disk that do not fit in memory stream from them.

A layout is kept only for ratings that are files on disk (read-only memory maps:
a Jumbo matrix, a binary cache), under a key of those files' identity (path,
inode, size, modification time), and only for a fixed seed (without one the
layout is drawn afresh each run). One layout per set of files: a layout for
another seed or grid replaces it. Entries are checked like every data cache
entry (hogwild.datasets.cache): a damaged one is made again.
"""
import hashlib
import json
import os
import shutil
import warnings
from pathlib import Path

import numpy as np

from hogwild.datasets.cache import (Damaged, describe, entry_in_progress, open_arrays,
                                    read_header)
from hogwild.disk_arrays import on_disk
from hogwild.paths import data_cache_folder

_VERSION = 1
_ARRAYS = ("users", "items", "values", "offsets", "user_ids", "item_ids")


def layout_key(raw_arrays, grid, seed):
    """(folder, settings) of the cached layout of ``raw_arrays`` (users, items,
    values) for ``grid`` and ``seed`` (a SeedSequence), or None when they cannot be
    cached: an array not on disk, a seed drawn from the operating system."""
    if seed is None or not all(on_disk(a) for a in raw_arrays):
        return None
    sources = []
    for array in raw_arrays:
        stat = os.stat(array.filename)
        sources.append([str(Path(array.filename).resolve()), stat.st_ino, stat.st_size,
                        stat.st_mtime_ns, int(array.offset), array.dtype.str,
                        list(array.shape)])
    root = data_cache_folder("layouts")
    if root is None:
        return None
    name = hashlib.sha256(json.dumps(sources).encode()).hexdigest()[:32]
    settings = {"version": _VERSION, "sources": sources, "grid": int(grid),
                "seed": [str(seed.entropy), list(seed.spawn_key)]}
    return root / name, settings


def load_layout(key):
    """{name: read-only memory map} of the layout cached under ``key``, or None."""
    folder, settings = key
    try:
        header = read_header(folder, "layout.json")
        if {k: header.get(k) for k in settings} != settings:
            return None  # another seed or grid, or the files changed: made again
        return open_arrays(folder, header["arrays"])
    except (Damaged, KeyError) as damage:
        if folder.exists():
            warnings.warn(f"the block layout cached in {folder} is damaged ({damage}); "
                          "laying the ratings out again", stacklevel=3)
        return None


def store_layout(key, arrays):
    """Keep ``arrays`` (see _ARRAYS) under ``key``, replacing the layout there; a
    full or read-only disk costs the cache, not the run."""
    folder, settings = key
    try:
        tmp = entry_in_progress(folder.parent)
        try:
            for name in _ARRAYS:
                np.save(tmp / f"{name}.npy", arrays[name])
            (tmp / "layout.json").write_text(json.dumps(
                {**settings, "arrays": describe({name: arrays[name] for name in _ARRAYS})}))
            shutil.rmtree(folder, ignore_errors=True)
            os.replace(tmp, folder)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    except OSError as error:
        warnings.warn(f"cannot keep the block layout in {folder} ({error.strerror or error});"
                      " it is made again next run", stacklevel=3)
