"""Reading data files whole: plain, gzip or bzip2 (detected from the bytes), with
one-line errors that name the file; and the memory a dataset may ask for."""
import bz2
import gzip
import os

from hogwild.errors import DataFormatError, HogwildError


def physical_memory():
    """This machine's memory in bytes (None where the OS does not say): data that
    cannot fit is refused up front, not discovered by the OOM killer."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def read_bytes(path):
    """The file's bytes, decompressed if it is gzip or bzip2."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise HogwildError(f"cannot read {path}: no such file") from None
    except IsADirectoryError:
        raise HogwildError(f"cannot read {path}: it is a directory") from None
    except OSError as exc:
        raise HogwildError(f"cannot read {path}: {exc.strerror}") from None
    try:
        if raw[:2] == b"\x1f\x8b":
            return gzip.decompress(raw)
        if raw[:3] == b"BZh":
            return bz2.decompress(raw)
    except (OSError, EOFError, ValueError) as exc:
        raise DataFormatError(f"cannot decompress {path}: {exc}") from None
    return raw
