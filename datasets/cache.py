"""Entries of the data caches (parsed svmlight files, generated Jumbo matrices,
downloaded ratings), checked for damage before use.

The folders are hogwild.paths.data_cache_folder's: this user's alone, or not used
at all. An entry's header (a JSON file written last, after its arrays) records
each array's dtype, shape and CRC-32 (a downloaded file's: its size and CRC-32);
an entry whose arrays do not match it (a truncated or edited file, one deleted, a
disk error) is reported as damaged, and the caller rebuilds it from its source
(or, for a download, asks for it again). A CRC-32 finds accidental damage at a few
GB/s; it is no defence against someone who can write the folder, which is what
the trust rule is for.
"""
import json
import mmap
import os
import shutil
import tempfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from hogwild import file_content
from hogwild.disk_arrays import pieces
from hogwild.errors import HogwildError
from hogwild.limits import usable_cores
from hogwild.paths import not_regular, pid_alive

CHUNK = 64 << 20  # bytes of a file checksummed at a time


def crc32(array):
    """The CRC-32 of an array's bytes (a read-only memory map is read from its file,
    not through the map: see hogwild.disk_arrays.pieces); Damaged if its file ends
    early."""
    value = 0
    try:
        for piece in pieces(array.reshape(-1) if not isinstance(array, np.memmap)
                            else array):
            value = zlib.crc32(np.ascontiguousarray(piece).reshape(-1).view(np.uint8), value)
    except HogwildError as error:
        raise Damaged(str(error)) from None
    return value


def file_record(path):
    """{"bytes", "crc32"} of a whole file, read chunk by chunk."""
    value, size = 0, 0
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            value = zlib.crc32(chunk, value)
            size += len(chunk)
    return {"bytes": size, "crc32": value}


def describe(arrays):
    """The header's record of ``arrays`` (name -> array): dtype, shape and CRC-32."""
    return {name: {"dtype": array.dtype.str, "shape": list(array.shape),
                   "crc32": crc32(array)} for name, array in arrays.items()}


def remove_entry(path):
    """Remove whatever is at an entry's ``path``: its folder, or the FIFO, file or
    link that something left there (shutil.rmtree leaves those alone, and the next
    attempt would then wait on the FIFO for ever); nothing where nothing is."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except OSError:
        pass  # gone already, or not ours to remove: the caller's next step says which


class Damaged(Exception):
    """A cache entry does not match its header; the message says how."""


def _regular(path):
    """Damaged where ``path`` is not a regular file: opening a FIFO planted in an
    entry would block for ever."""
    kind = not_regular(os.stat(path).st_mode)
    if kind is not None:
        raise Damaged(f"{path.name} is {kind}, not a regular file")


def read_header(folder, name):
    """The JSON header ``name`` of the entry in ``folder`` (a dict), or Damaged."""
    try:
        _regular(Path(folder) / name)
        header = json.loads((Path(folder) / name).read_text())
    except (OSError, ValueError) as exc:
        raise Damaged(f"its header {name} cannot be read ({type(exc).__name__})") from None
    if not isinstance(header, dict):
        raise Damaged(f"its header {name} is not a JSON object")
    return header


def open_arrays(folder, described, verified=False):
    """{name: read-only memory map} of the entry's .npy files, each checked against
    ``described`` (a header's "arrays"), or Damaged naming the first that differs.
    ``verified``: the entry was just written, its CRC-32s taken from what was
    written; only its dtypes and shapes are checked again."""
    if not isinstance(described, dict):
        raise Damaged("its header does not describe its arrays")

    def opened(name):
        path = Path(folder) / f"{name}.npy"
        try:
            _regular(path)
            return np.load(path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError, EOFError, SyntaxError) as exc:
            raise Damaged(f"{path.name} cannot be read ({type(exc).__name__})") from None

    def matches(array, record):
        if not (isinstance(record, dict) and array.dtype.str == record.get("dtype")
                and list(array.shape) == record.get("shape")
                and (verified or crc32(array) == record.get("crc32"))):
            return False
        file_content.record(array, record["crc32"])  # what a streamed run must read
        return True

    # Opened one at a time: np.load parses each header with ast, which CPython 3.11
    # cannot do from several threads at once ("AST constructor recursion depth
    # mismatch"). zlib releases the GIL while it checksums: those run on every core.
    arrays = {name: opened(name) for name in described}
    with ThreadPoolExecutor(min(usable_cores(), max(len(described), 1))) as pool:
        checked = {name: pool.submit(matches, arrays[name], record)
                   for name, record in described.items()}
        for name, future in checked.items():
            if not future.result():
                raise Damaged(f"{name}.npy does not match the checksum and shape "
                              "recorded for it")
    return arrays


def release_pages(*arrays):
    """Drop the pages of read-only memory maps (the arrays open_arrays gives) from
    this process's resident memory once they have been read into another layout:
    the kernel keeps them in its page cache and reads them back on the next
    access, but they no longer count against the run's memory. Other arrays are
    left alone."""
    for array in arrays:
        region = getattr(array, "_mmap", None)  # np.memmap's map of the whole file
        if isinstance(array, np.memmap) and array.mode == "r" and region is not None \
                and hasattr(region, "madvise"):
            region.madvise(mmap.MADV_DONTNEED)


def entry_in_progress(root):
    """A new temporary folder in ``root`` for an entry being written (renamed into
    place when whole), named after this process. Those of processes that are gone
    (killed while writing: up to 30 GB for a Jumbo matrix) are removed first."""
    for folder in Path(root).glob(".tmp-*"):
        pid = folder.name.split("-")[1]
        try:
            if pid.isdigit() and not pid_alive(int(pid)) and \
                    folder.lstat().st_uid == os.getuid():
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:
            continue
    return Path(tempfile.mkdtemp(dir=root, prefix=f".tmp-{os.getpid()}-"))
