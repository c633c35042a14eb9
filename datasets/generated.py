"""What the generators of data larger than memory share (datasets.jumbo,
datasets.clicks): chunks drawn on every core, written to .npy files with plain
file writes (CRC-32s taken on the way) into a cache entry that appears whole or
not at all, checks for room before a byte is written, and the entry read back as
read-only memory maps (made again, with a warning, when damaged)."""
import json
import os
import shutil
import warnings
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from hogwild.datasets.cache import (Damaged, entry_in_progress, open_arrays, read_header,
                                    remove_entry)
from hogwild.errors import HogwildError
from hogwild.limits import physical_memory, return_freed_memory, size_text, usable_cores


def parse_sizes(text, prefix, what, example):
    """The three sizes of a generator's spec ``prefix:AxBxC`` (1e8 and 100_000_000
    spelled either way), or a HogwildError naming ``what`` and showing ``example``."""
    spec = text[len(prefix) + 1:] if text.startswith(prefix + ":") else text
    parts = spec.lower().replace("_", "").split("x")
    try:
        first, second, third = (int(float(p)) for p in parts)
    except ValueError:
        raise HogwildError(f"bad {what} size {text!r}; expected {example}") from None
    return first, second, third


def in_order(count, draw):
    """Yield draw(0), ..., draw(count - 1) in order, computed on every core with at
    most two results a core in memory at once (draw must release the GIL: a
    compiled nogil kernel does)."""
    cores = usable_cores()
    with ThreadPoolExecutor(cores) as pool:
        pending = [pool.submit(draw, i) for i in range(min(count, 2 * cores))]
        for index in range(count):
            yield pending[index].result()
            pending[index] = None
            if index + 2 * cores < count:
                pending.append(pool.submit(draw, index + 2 * cores))


def chunk_seeds(sequence, count):
    """A 32-bit seed for each of ``count`` chunks (numba's generator takes one)."""
    return sequence.generate_state(max(count, 1), np.uint32).astype(np.int64)


def check_room(spec, what, needed):
    """A clear error when ``needed`` bytes of memory exceed this machine's."""
    memory = physical_memory()
    if memory is not None and needed > memory:
        raise HogwildError(f"{spec} needs {size_text(needed)} for {what}, more than "
                           f"this machine's {size_text(memory)} of memory")


def check_disk(spec, what, needed, folder):
    """A clear error before a byte is written when ``needed`` bytes cannot fit on the
    disk of ``folder`` (the first existing folder up its path)."""
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    free = shutil.disk_usage(folder).free
    if needed > free:
        raise HogwildError(f"{spec} needs {size_text(needed)} on disk for its {what}, "
                           f"more than the {size_text(free)} free in {folder}")


def write_entry(folder, info, sets, bar=None):
    """Write each (name, {field: (dtype, length)}, chunks) of ``sets`` into
    ``folder``/name_field.npy, chunks yielding one tuple of arrays (in the fields'
    order) at a time; the header info.json (``info`` plus the arrays' checksums)
    last, in a temporary folder renamed when whole. ``bar`` advances by the first
    field's length of each chunk."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = entry_in_progress(folder.parent)
    try:
        records = {}
        for name, fields, chunks in sets:
            files = {field: open(tmp / f"{name}_{field}.npy", "wb") for field in fields}
            try:
                for field, (dtype, length) in fields.items():
                    np.lib.format.write_array_header_1_0(
                        files[field], {"descr": np.dtype(dtype).str, "fortran_order": False,
                                       "shape": (length,)})
                crcs = dict.fromkeys(files, 0)
                for chunk in chunks:
                    for (field, f), part in zip(files.items(), chunk):
                        f.write(part.data)
                        crcs[field] = zlib.crc32(part.data, crcs[field])
                    if bar is not None:
                        bar.update(chunk[0].size)
            finally:
                for f in files.values():
                    f.close()
            for field, (dtype, length) in fields.items():
                records[f"{name}_{field}"] = {"dtype": np.dtype(dtype).str, "shape": [length],
                                              "crc32": crcs[field]}
        (tmp / "info.json").write_text(json.dumps({**info, "arrays": records}))
        remove_entry(folder)  # an interrupted earlier attempt
        os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        return_freed_memory()  # the chunks, freed in the drawing threads' arenas


def open_entry(folder, version, names, what):
    """{name: read-only memory map} of a generated entry's arrays ``names``, or None
    when it was made by another version (removed) or lacks them or does not match
    its checksums (removed, with a warning naming ``what``), so that the caller
    makes it again."""
    try:
        header = read_header(folder, "info.json")
        if header.get("version") != version:
            remove_entry(folder)
            return None
        arrays = open_arrays(folder, header["arrays"])
        return {name: arrays[name] for name in names}
    except (Damaged, KeyError, HogwildError) as damage:
        reason = f"it lacks {damage}" if isinstance(damage, KeyError) else damage
        warnings.warn(f"the {what} cached in {folder} is damaged: {reason}; making it "
                      "again", stacklevel=3)
        remove_entry(folder)
        return None


def progress_bar(total, unit, desc, progress):
    """A tqdm bar when ``progress`` and tqdm is installed, else None."""
    if not progress:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit=unit, unit_scale=True, desc=desc, disable=None)
