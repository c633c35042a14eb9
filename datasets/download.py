"""Downloads for users: stream a URL to the cache, verify its checksum, unpack.

Nothing in the package downloads on its own: `hogwild download NAME` (or
``download_dataset``) does it once, and loaders then find the file in the cache.
file:// URLs work too (tests use them, and a mirror on a shared drive).
"""
import hashlib
import os
import tempfile
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

from hogwild.errors import HogwildError

CHUNK = 1 << 20


def _progress_bar(total, name, enabled):
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="B", unit_scale=True, desc=name, disable=None)


def fetch(url, destination, md5=None, progress=True):
    """Stream ``url`` into ``destination`` (atomically: a partial download never
    lands there) and check its md5 when one is given."""
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=destination.parent, prefix=".download-")
    digest = hashlib.md5()
    try:
        with os.fdopen(fd, "wb") as out:
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
                        out.write(chunk)
                        digest.update(chunk)
                        if bar is not None:
                            bar.update(len(chunk))
                finally:
                    if bar is not None:
                        bar.close()
        if md5 is not None and digest.hexdigest() != md5:
            raise HogwildError(f"checksum mismatch for {url}: md5 {digest.hexdigest()}, "
                               f"expected {md5}; the download is corrupt or the file "
                               f"changed upstream")
        os.replace(tmp, destination)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return destination


def extract_member(archive, member, destination):
    """Copy one file out of a zip archive (atomically)."""
    destination = Path(destination)
    fd, tmp = tempfile.mkstemp(dir=destination.parent, prefix=".extract-")
    try:
        with os.fdopen(fd, "wb") as out, zipfile.ZipFile(archive) as z:
            if member not in z.namelist():
                raise HogwildError(f"{archive} has no {member}; it holds: "
                                   f"{', '.join(z.namelist()[:10])}")
            with z.open(member) as src:
                while chunk := src.read(CHUNK):
                    out.write(chunk)
        os.replace(tmp, destination)
    except zipfile.BadZipFile:
        raise HogwildError(f"{archive} is not a zip archive") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return destination
