"""Shared memory for worker processes: numpy arrays in memory-mapped files.

A run's segments are files in a private folder (mkdtemp: an unguessable name,
mode 0700) under /dev/shm where it exists (memory, not disk) or the temporary
folder; each file is created exclusively with mode 0600 and starts with a 64-byte
header: a magic word, the run's random 16-byte token and the payload size. A
worker attaches only after checking the owner, the mode, the token and the size,
so a stale or foreign file with a colliding name is refused, never used. Plain
files, unlike multiprocessing.shared_memory on Python < 3.13, involve no
resource tracker, so nothing warns or unlinks behind the run's back.

Once every worker has mapped the files, the parent unlinks them
(``unlink_files``): the memory lives on in the mappings and is freed with the last
process that maps it, so a parent killed with SIGKILL (its children die with it)
leaves at most an empty folder. The parent removes the folder when the run ends,
however it ends; a folder left by a parent that was itself killed is removed by
the next run of the same user.
"""
import mmap
import os
import secrets
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hogwild.errors import HogwildError

MAGIC = b"HOGWILD\x01"
HEADER_BYTES = 64
PREFIX = "hogwild-"


def segments_root():
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK):
        return shm
    return Path(tempfile.gettempdir())


@dataclass(frozen=True)
class SegmentSpec:
    """What a worker needs to attach one array (picklable, a few bytes)."""

    path: str
    dtype: str
    shape: tuple


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_folders(root=None):
    """Delete this user's segment folders whose creating process is gone."""
    root = Path(root or segments_root())
    for folder in root.glob(f"{PREFIX}*"):
        try:
            pid = int(folder.name.split("-")[1])
            if folder.stat().st_uid == os.getuid() and not _pid_alive(pid):
                shutil.rmtree(folder, ignore_errors=True)
        except (ValueError, IndexError, OSError):
            continue


class SegmentSet:
    """The parent's segments for one run; ``close`` unmaps and deletes them all."""

    def __init__(self, root=None):
        remove_stale_folders(root)
        self.folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-",
                                            dir=root or segments_root()))
        self.token = secrets.token_bytes(16)
        self._maps = []
        self._linked = []  # files not yet unlinked

    def create(self, shape, dtype, fill=None):
        """(array, spec): a zeroed (or ``fill``-copied) shared array."""
        dtype = np.dtype(dtype)
        shape = tuple(int(s) for s in shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        path = self.folder / f"{len(self._maps)}-{secrets.token_hex(8)}"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(fd, HEADER_BYTES + max(nbytes, 1))
            mapped = mmap.mmap(fd, HEADER_BYTES + max(nbytes, 1))
        finally:
            os.close(fd)
        mapped[:HEADER_BYTES] = (MAGIC + self.token + nbytes.to_bytes(8, "little")).ljust(
            HEADER_BYTES, b"\0")
        self._maps.append(mapped)
        self._linked.append(path)
        array = np.frombuffer(mapped, dtype, int(np.prod(shape, dtype=np.int64)),
                              HEADER_BYTES).reshape(shape)
        if fill is not None:
            array[...] = fill
        return array, SegmentSpec(str(path), dtype.str, shape)

    def share(self, array):
        """(shared copy, spec) of ``array``."""
        return self.create(array.shape, array.dtype, fill=array)

    def unlink_files(self):
        """Remove the files made so far, once every worker has attached them: the
        mappings keep the memory, and nothing is left behind if this process dies."""
        for path in self._linked:
            path.unlink(missing_ok=True)
        self._linked = []

    def close(self):
        for mapped in self._maps:
            try:
                mapped.close()
            except BufferError:  # a numpy view still holds it: the file goes anyway
                pass
        self._maps = []
        shutil.rmtree(self.folder, ignore_errors=True)


def attach(spec, token):
    """(array, mmap) for ``spec``, after checking that the file is this run's."""
    path = Path(spec.path)
    dtype = np.dtype(spec.dtype)
    count = int(np.prod(spec.shape, dtype=np.int64))
    nbytes = count * dtype.itemsize
    try:
        fd = os.open(path, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise HogwildError(f"shared segment {path} cannot be opened: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
            raise HogwildError(f"shared segment {path} is not owned by this user with mode "
                               "0600: refused")
        if info.st_size != HEADER_BYTES + max(nbytes, 1):
            raise HogwildError(f"shared segment {path} has {info.st_size} bytes, expected "
                               f"{HEADER_BYTES + max(nbytes, 1)}: refused")
        mapped = mmap.mmap(fd, info.st_size)
    finally:
        os.close(fd)
    header = mapped[:HEADER_BYTES]
    if header[:8] != MAGIC or header[8:24] != token or \
            int.from_bytes(header[24:32], "little") != nbytes:
        mapped.close()
        raise HogwildError(f"shared segment {path} does not carry this run's token: refused")
    return np.frombuffer(mapped, dtype, count, HEADER_BYTES).reshape(spec.shape), mapped
