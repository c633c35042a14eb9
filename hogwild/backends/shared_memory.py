"""Shared memory for worker processes: numpy arrays in memory-mapped files.

On Linux a segment is an anonymous memory file (memfd_create, mode 0600) that has
no name in any folder: a child maps it through /proc/PARENT/fd/N, which only this
user's processes may open, and the memory is freed with the last process that maps
it or holds it open. A SIGKILL at any moment, start-up included, leaves nothing in
/dev/shm. Elsewhere (or with an explicit ``root``) segments are files in a private
folder (mkdtemp: an unguessable name, mode 0700) under /dev/shm where it exists
(memory, not disk) or the temporary folder, created exclusively with mode 0600.

Every segment starts with a 64-byte header: a magic word, the run's random
16-byte token and the payload size. A worker attaches only after checking the
owner, the mode, the token and the size, so a stale or foreign segment is refused,
never used. Neither kind, unlike multiprocessing.shared_memory on Python < 3.13,
involves a resource tracker, so nothing warns or unlinks behind the run's back.

Once every worker has mapped the segments, the parent lets go of their names
(``unlink_files``: it closes its memory files, or unlinks the files): the memory
lives on in the mappings. The parent removes its folder when the run ends,
however it ends; a folder left by a process that was itself killed (a run of the
folder kind, or an MPI job's, see hogwild.backends.mpi) is removed by the next
run of the same user on this machine (``remove_stale_folders``: its creator's
pid no longer runs).
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
from hogwild.paths import pid_alive

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


def remove_stale_folders(root=None):
    """Delete this user's segment folders (PREFIX + the creating process's pid + '-'
    + anything) whose creating process is gone."""
    root = Path(root or segments_root())
    for folder in root.glob(f"{PREFIX}*"):
        try:
            pid = int(folder.name.split("-")[1])
            if folder.lstat().st_uid == os.getuid() and not pid_alive(pid):
                shutil.rmtree(folder, ignore_errors=True)
        except (ValueError, IndexError, OSError):
            continue


def _anonymous_files():
    """Whether memory files without a name (memfd_create) can be shared with child
    processes here: Linux with /proc."""
    return hasattr(os, "memfd_create") and os.path.isdir(f"/proc/{os.getpid()}/fd")


class SegmentSet:
    """The parent's segments for one run; ``close`` unmaps and deletes them all.
    ``root``: a folder for named segment files (default: anonymous memory files
    where the OS has them, else a private folder under segments_root())."""

    def __init__(self, root=None):
        remove_stale_folders(root)
        self.folder = None
        if root is not None or not _anonymous_files():
            self.folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-",
                                                dir=root or segments_root()))
        self.token = secrets.token_bytes(16)
        self._maps = []
        self._named = []  # what still has a name: open memory files or files not unlinked

    def _open(self, size):
        """(fd, path a child opens) of a new segment file of ``size`` bytes."""
        if self.folder is None:
            fd = os.memfd_create(f"{PREFIX}{len(self._maps)}", os.MFD_CLOEXEC)
            os.fchmod(fd, 0o600)
            path = f"/proc/{os.getpid()}/fd/{fd}"
        else:
            path = str(self.folder / f"{len(self._maps)}-{secrets.token_hex(8)}")
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(fd, size)
        except OSError:
            os.close(fd)
            raise
        return fd, path

    def create(self, shape, dtype, fill=None):
        """(array, spec): a zeroed (or ``fill``-copied) shared array."""
        dtype = np.dtype(dtype)
        shape = tuple(int(s) for s in shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        fd, path = self._open(HEADER_BYTES + max(nbytes, 1))
        try:
            mapped = mmap.mmap(fd, HEADER_BYTES + max(nbytes, 1))
        except OSError:
            os.close(fd)
            raise
        if self.folder is None:
            self._named.append(fd)  # open until every worker has mapped it
        else:
            os.close(fd)
            self._named.append(Path(path))
        mapped[:HEADER_BYTES] = (MAGIC + self.token + nbytes.to_bytes(8, "little")).ljust(
            HEADER_BYTES, b"\0")
        self._maps.append(mapped)
        array = np.frombuffer(mapped, dtype, int(np.prod(shape, dtype=np.int64)),
                              HEADER_BYTES).reshape(shape)
        if fill is not None:
            array[...] = fill
        return array, SegmentSpec(path, dtype.str, shape)

    def share(self, array):
        """(shared copy, spec) of ``array``."""
        return self.create(array.shape, array.dtype, fill=array)

    def unlink_files(self):
        """Let go of the names of the segments made so far, once every worker has
        attached them: the mappings keep the memory, and nothing is left behind if
        this process dies."""
        for named in self._named:
            if isinstance(named, int):
                os.close(named)
            else:
                named.unlink(missing_ok=True)
        self._named = []

    def close(self):
        self.unlink_files()
        for mapped in self._maps:
            try:
                mapped.close()
            except BufferError:  # a numpy view still holds it: the memory goes with it
                pass
        self._maps = []
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


def attach(spec, token):
    """(array, mmap) for ``spec``, after checking that the file is this run's."""
    path = Path(spec.path)
    dtype = np.dtype(spec.dtype)
    count = int(np.prod(spec.shape, dtype=np.int64))
    nbytes = count * dtype.itemsize
    # a parent's memory file is a /proc link to follow; a named file must not be one
    follow = 0 if spec.path.startswith("/proc/") else getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, os.O_RDWR | follow)
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
