"""Reading data files whole: plain, gzip or bzip2 (detected from the bytes), with
one-line errors that name the file. Only regular files are read (a FIFO would
block for ever, a device never end), and no file may take more memory, as read
or as decompressed, than is available."""
import bz2
import gzip
import io
import os

from hogwild.errors import DataFormatError, HogwildError
from hogwild.limits import available_memory, size_text
from hogwild.paths import check_regular

CHUNK = 64 << 20  # bytes decompressed at a time, so that the total is checked as it grows
UTF8_BOM = b"\xef\xbb\xbf"

def read_bytes(path):
    """The file's bytes (a bytes or bytearray object), decompressed if it is gzip or
    bzip2. Opened without blocking, so a FIFO is refused rather than waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise HogwildError(f"cannot read {path}: no such file") from None
    except IsADirectoryError:
        raise HogwildError(f"cannot read {path}: it is a directory") from None
    except OSError as exc:
        raise HogwildError(f"cannot read {path}: {exc.strerror}") from None
    try:
        check_regular(path, fd)
    except HogwildError:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(fd).st_size
        memory = available_memory()
        if memory is not None and size > memory:
            raise HogwildError(f"cannot read {path}: its {size_text(size)} are more than the "
                               f"{size_text(memory)} of memory available")
        try:
            raw = f.read()
        except OSError as exc:
            raise HogwildError(f"cannot read {path}: {exc.strerror}") from None
    if raw[:2] == b"\x1f\x8b":
        return _decompress(path, lambda f: gzip.GzipFile(fileobj=f), raw, memory)
    if raw[:3] == b"BZh":
        return _decompress(path, bz2.BZ2File, raw, memory)
    return raw


def _decompress(path, opener, raw, memory):
    """The decompressed bytes of ``raw``, chunk by chunk, refused as soon as they
    pass the memory that is left (a small file can inflate to terabytes)."""
    cap = None if memory is None else max(memory - len(raw), 0)
    out = bytearray()
    try:
        with opener(io.BytesIO(raw)) as stream:
            while chunk := stream.read(CHUNK):
                out += chunk
                if cap is not None and len(out) > cap:
                    raise HogwildError(f"cannot read {path}: it decompresses to more than the "
                                       f"{size_text(cap)} of memory available")
    except (OSError, EOFError, ValueError) as exc:
        if isinstance(exc, HogwildError):
            raise
        raise DataFormatError(f"cannot decompress {path}: {exc}") from None
    return out


def read_text_bytes(path):
    """read_bytes of a text file whose lines the parsers split at '\n': a UTF-8
    byte-order mark (Windows editors write one) dropped, so that the first id keeps
    no invisible character, and lone carriage returns (classic Mac line ends) made
    newlines, so that every line is read rather than the first. Copied only where
    something changes."""
    raw = read_bytes(path)
    if raw[:3] == UTF8_BOM:
        raw = raw[3:]
    if raw.count(b"\r") != raw.count(b"\r\n"):
        raw = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return raw
