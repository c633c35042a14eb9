"""Downloads for users: stream a URL to the cache, verify its checksum, unpack.

Nothing in the package downloads on its own: `hogwild download NAME` (or
``download_dataset``) does it once, and loaders then find the file in the cache.
file:// URLs work too (tests use them, and a mirror on a shared drive). Every
download is checked against a SHA-256 (an md5 only where no SHA-256 of the
original is known), and downloads and extracted files are capped in size, so a
hostile server or archive cannot fill the disk.
"""
import contextlib
import errno
import hashlib
import os
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

from hogwild.errors import HogwildError
from hogwild.paths import not_regular

CHUNK = 1 << 20
MAX_DOWNLOAD_BYTES = 2 << 30    # the largest MovieLens archive is 262 MB
MAX_EXTRACTED_BYTES = 4 << 30   # its largest ratings file is 678 MB


def _progress_bar(total, name, enabled):
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="B", unit_scale=True, desc=name, disable=None)


def _too_large(what, limit):
    return HogwildError(f"{what} is larger than {limit:,} bytes: refused (a download "
                        "or archive that large is not a rating dataset)")


WRITE_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES)


@contextlib.contextmanager
def _written(destination):
    """A write into the cache that fails for want of room or rights: one error line
    naming the file, not a traceback (the partial file is removed by the caller)."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in WRITE_ERRORS:
            raise
        raise HogwildError(f"cannot write {destination}: {exc.strerror}; free space there, "
                           "or set HOGWILD_CACHE_DIR to a folder with room") from None


def fetch(url, destination, sha256=None, md5=None, progress=True):
    """Stream ``url`` into ``destination`` (atomically: a partial download never
    lands there), at most MAX_DOWNLOAD_BYTES, and check its ``sha256`` (else its
    ``md5``) when one is given."""
    destination = Path(destination)
    local = urllib.request.url2pathname(urllib.parse.urlparse(url).path) \
        if url.startswith("file://") else None
    kind = not_regular(os.stat(local).st_mode) if local and os.path.exists(local) else None
    if kind is not None:  # a FIFO would block the read for ever
        raise HogwildError(f"cannot download {url}: it is {kind}, not a regular file")
    with _written(destination):
        destination.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=destination.parent, prefix=".download-")
    kind, expected = ("sha256", sha256) if sha256 is not None or md5 is None else ("md5", md5)
    digest = hashlib.new(kind)
    received = 0
    try:
        with _written(destination), os.fdopen(fd, "wb") as out:
            try:
                response = urllib.request.urlopen(url, timeout=60)
            except (urllib.error.URLError, OSError, ValueError) as exc:
                reason = getattr(exc, "reason", None) or exc
                raise HogwildError(f"cannot download {url}: {reason}") from None
            with response:
                total = response.headers.get("Content-Length") if response.headers else None
                bar = _progress_bar(int(total) if total else None, destination.name, progress)
                try:
                    while chunk := response.read(CHUNK):
                        received += len(chunk)
                        if received > MAX_DOWNLOAD_BYTES:
                            raise _too_large(f"the download of {url}", MAX_DOWNLOAD_BYTES)
                        out.write(chunk)
                        digest.update(chunk)
                        if bar is not None:
                            bar.update(len(chunk))
                finally:
                    if bar is not None:
                        bar.close()
        if expected is not None and digest.hexdigest() != expected.lower():
            raise HogwildError(f"checksum mismatch for {url}: {kind} {digest.hexdigest()}, "
                               f"expected {expected}; the download is corrupt or the file "
                               f"changed upstream")
        os.replace(tmp, destination)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return destination


def extract_member(archive, member, destination):
    """Copy one file out of a zip archive (atomically), at most MAX_EXTRACTED_BYTES
    (counted as it is inflated: a zip header's sizes can lie)."""
    destination = Path(destination)
    with _written(destination):
        fd, tmp = tempfile.mkstemp(dir=destination.parent, prefix=".extract-")
    try:
        with _written(destination), os.fdopen(fd, "wb") as out, zipfile.ZipFile(archive) as z:
            if member not in z.namelist():
                raise HogwildError(f"{archive} has no {member}; it holds: "
                                   f"{', '.join(z.namelist()[:10])}")
            written = 0
            with z.open(member) as src:
                while chunk := src.read(CHUNK):
                    written += len(chunk)
                    if written > MAX_EXTRACTED_BYTES:
                        raise _too_large(f"{member} in {archive}", MAX_EXTRACTED_BYTES)
                    out.write(chunk)
        os.replace(tmp, destination)
    except zipfile.BadZipFile:
        raise HogwildError(f"{archive} is not a zip archive") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return destination
