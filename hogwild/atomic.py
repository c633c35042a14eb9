"""One atomic writer for every file hogwild writes (checkpoints, models, labels).

The content goes to a temporary file in the destination's folder, is flushed and
fsynced, then renamed over the destination, and the folder is fsynced: a crash,
Ctrl-C or a full disk at any moment leaves either the previous file or the new
one, never a truncated mixture. Each writer's temporary file is its own (named
with its pid and a random suffix), so writers of one path never disturb each
other: the last rename wins. A temporary file left by a writer that was killed
(its pid no longer runs on this machine) is removed by the next write.
"""
import contextlib
import os
import secrets
from pathlib import Path

from hogwild.errors import HogwildError
from hogwild.paths import pid_alive


@contextlib.contextmanager
def atomic_file(path, mode="wb"):
    """``with atomic_file(path) as f: f.write(...)``: path gets the content only if
    the block completes. OSError (a missing folder, a full or read-only disk)
    becomes a one-line HogwildError naming the path."""
    path = Path(path)
    if path.exists() and not path.is_file():  # renaming would replace a folder or device
        raise HogwildError(f"cannot write {path}: it exists and is not a regular file")
    temporary = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(8)}.tmp")
    try:
        _remove_dead_writers(path)
        with open(temporary, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    except OSError as error:
        raise HogwildError(f"cannot write {path}: {error.strerror or error}") from None
    finally:
        try:
            temporary.unlink(missing_ok=True)
        except OSError:  # a read-only folder, where it was never made
            pass


def _remove_dead_writers(path):
    """Remove the temporary files for ``path`` of writers that were killed mid-write
    (their pid does not run); a live writer's stays."""
    for stale in path.parent.glob(f".{path.name}.*.tmp"):
        writer = stale.name[len(path.name) + 2:].split("-")[0]
        if writer.isdigit() and not pid_alive(int(writer)):
            stale.unlink(missing_ok=True)
