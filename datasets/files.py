"""Reading data files whole: plain, gzip or bzip2 (detected from the bytes), with
one-line errors that name the file."""
import bz2
import gzip

from hogwild.errors import DataFormatError, HogwildError


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
