"""Reading data files: whole, or as a stream of blocks of whole lines; plain,
gzip, bzip2, xz or zstd (detected from the bytes), with one-line errors that name
the file. Only regular files are read (a FIFO would block for ever, a device
never end), and no file may take more memory, as read or as decompressed, than
is available."""
import bz2
import gzip
import io
import lzma
import os
from dataclasses import dataclass

import numpy as np

from hogwild.errors import DataFormatError, HogwildError
from hogwild.limits import available_memory, size_text
from hogwild.paths import check_regular

CHUNK = 64 << 20  # bytes decompressed at a time, so that the total is checked as it grows
UTF8_BOM = b"\xef\xbb\xbf"
# The first bytes of each compressed format read (what `file` goes by)
MAGIC = {"gzip": b"\x1f\x8b", "bzip2": b"BZh", "xz": b"\xfd7zXZ\x00",
         "zstd": b"\x28\xb5\x2f\xfd"}
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")

def _open_regular(path):
    """A binary file object of the regular file ``path``, opened without blocking, so
    that a FIFO is refused rather than waited on; a HogwildError naming it else."""
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
    return os.fdopen(fd, "rb")


def read_bytes(path):
    """The file's bytes (a bytes or bytearray object), decompressed if it is gzip or
    bzip2. Opened without blocking, so a FIFO is refused rather than waited on."""
    with _open_regular(path) as f:
        fd = f.fileno()
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


# --- a text file as a stream of blocks of whole lines -----------------------------

def _zstd_reader(raw, path):
    try:
        import zstandard
    except ImportError:
        raise HogwildError(f"{path} is zstd-compressed: pip install 'hogwild[zstd]' (the "
                           "zstandard package) to read it, or decompress it first") from None
    return zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)


_READERS = {"gzip": lambda raw, path: gzip.GzipFile(fileobj=raw),
            "bzip2": lambda raw, path: bz2.BZ2File(raw),
            "xz": lambda raw, path: lzma.LZMAFile(raw), "zstd": _zstd_reader}


@dataclass
class Block:
    """Whole lines of a text file: ``data`` (uint8), the 1-based number of its first
    line being known only once the blocks before it are parsed; ``start`` its
    offset in the (decompressed) text, ``read`` the file's bytes read so far;
    ``buffer`` the memory ``data`` lies in (given back to TextBlocks' ``spare`` once
    the block is parsed, to hold a later block)."""

    data: np.ndarray
    start: int
    read: int
    buffer: bytearray = None


class TextBlocks:
    """A text file read as blocks of whole lines (about ``block_bytes`` each) for
    parsers that run on several blocks at once: decompressed on the way (gzip,
    bzip2, xz and zstd, by their first bytes), a UTF-8 byte-order mark dropped,
    classic Mac line ends (a lone carriage return) made newlines, and a line longer
    than ``max_line_bytes`` refused by name rather than held whole. ``identity``
    is the file's (device, inode, size, times) when opened: ``check_unchanged``
    compares it after the read, and a file edited while it was read is refused.
    ``window`` (first, last): the lines that start in those bytes alone, of an
    uncompressed file (one rank's share of it). ``spare``: a list of buffers that
    blocks already parsed gave back (Block.buffer), taken before new ones are made:
    new memory for every block costs a page fault every 4 KB of it."""

    def __init__(self, path, block_bytes, max_line_bytes, window=None, spare=None):
        self.path, self.block_bytes, self.max_line_bytes = path, block_bytes, max_line_bytes
        self.spare = [] if spare is None else spare
        self.raw = _open_regular(path)
        self.size = os.fstat(self.raw.fileno()).st_size
        self.identity = _identity(os.fstat(self.raw.fileno()))
        head = os.pread(self.raw.fileno(), 8, 0)
        if head.startswith(UTF16_BOMS):
            self.raw.close()
            raise DataFormatError(f"{path} is UTF-16 text (it starts with a UTF-16 byte-order "
                                  "mark); save it as UTF-8 (iconv -f UTF-16 -t UTF-8)")
        self.compression = next((name for name, magic in MAGIC.items()
                                 if head.startswith(magic)), None)
        if window is not None:
            if self.compression is not None:
                self.raw.close()
                raise HogwildError(f"{path} is {self.compression}-compressed: a share of its "
                                   "bytes cannot be read apart (give part files)")
            fd = self.raw.fileno()
            first, last = (line_start(fd, offset, self.size) for offset in window)
            self.stream = _Window(fd, first, last)
            self.size = last - first
        else:
            self.stream = self.raw if self.compression is None else \
                _READERS[self.compression](self.raw, path)

    def close(self):
        self.stream.close()
        self.raw.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def bytes_read(self):
        """The file's bytes read so far (compressed ones, for a compressed file)."""
        if isinstance(self.stream, _Window):
            return self.stream.done
        try:
            return self.raw.tell()
        except (OSError, ValueError):
            return 0

    def _fill(self, buffer, at):
        """Read into ``buffer`` from ``at`` until it is full or the file ends; the end."""
        view = memoryview(buffer)
        while at < len(buffer):
            try:
                got = self.stream.readinto(view[at:])
            except (OSError, EOFError, lzma.LZMAError, ValueError) as error:
                raise self._broken(error) from None
            except Exception as error:  # zstandard's ZstdError
                if type(error).__name__ != "ZstdError":
                    raise
                raise self._broken(error) from None
            if not got:
                break
            at += got
        return at

    def _broken(self, error):
        reason = "it ends before its end-of-stream marker (truncated?)" \
            if isinstance(error, EOFError) else str(error) or type(error).__name__
        return DataFormatError(f"cannot decompress {self.path}: {reason}, at byte "
                               f"{self.bytes_read():,} of {self.size:,}")

    def __iter__(self):
        """Blocks of whole lines, each in a buffer of its own (parsed while the next
        is read); the last may end without a newline."""
        carry, start, lone_cr = b"", 0, None
        size = self.block_bytes
        while True:
            buffer = self.spare.pop() if self.spare and len(self.spare[-1]) == size else \
                bytearray(size)
            buffer[:len(carry)] = carry
            end = self._fill(buffer, len(carry))
            ended = end < len(buffer)  # the file's end is in this buffer
            if lone_cr is None:  # the first block says how lines end
                if buffer.startswith(UTF8_BOM):
                    del buffer[:len(UTF8_BOM)]
                    end -= len(UTF8_BOM)
                    start = len(UTF8_BOM)
                lone_cr = buffer.find(b"\n", 0, end) < 0 and buffer.find(b"\r", 0, end) >= 0
            if lone_cr:  # classic Mac line ends: each CR a newline
                buffer = buffer[:end].replace(b"\r", b"\n")
            if end == 0:
                return
            cut = end if ended else buffer.rfind(b"\n", 0, end) + 1
            if cut == 0:  # no line end in a whole buffer: a longer line
                if size >= self.max_line_bytes:
                    raise DataFormatError(
                        f"{self.path}: a line at byte {start:,} is longer than "
                        f"{size_text(self.max_line_bytes)} (no line end within it): not a "
                        "text file of lines, or one whose lines are too long to read")
                carry, size = bytes(buffer[:end]), min(2 * size, self.max_line_bytes)
                continue
            carry, size = bytes(buffer[cut:end]), self.block_bytes
            yield Block(np.frombuffer(buffer, np.uint8, cut), start, self.bytes_read(), buffer)
            start += cut
            if ended:
                return

    def check_unchanged(self):
        """A DataFormatError when the file changed (size, times, inode) since it was
        opened: what was read may mix two versions of it."""
        try:
            now = _identity(os.stat(self.path))
        except OSError:
            now = None
        if now != self.identity:
            raise DataFormatError(f"{self.path} changed while it was read (its size or time "
                                  "is not what it was); read it again once it is complete")


def line_start(fd, offset, size):
    """The first line start at or after byte ``offset`` of the file open as ``fd``
    (0 at 0; ``size`` where no line starts there)."""
    if offset <= 0:
        return 0
    at = offset - 1
    while at < size:
        chunk = os.pread(fd, 1 << 16, at)
        found = chunk.find(b"\n")
        if found >= 0:
            return at + found + 1
        at += len(chunk)
    return size


class _Window:
    """The bytes first..last-1 of the file open as ``fd``, as a stream to read into."""

    def __init__(self, fd, first, last):
        self.fd, self.at, self.last, self.done = fd, first, last, 0

    def readinto(self, view):
        count = min(len(view), self.last - self.at)
        if count <= 0:
            return 0
        got = os.preadv(self.fd, [view[:count]], self.at)
        self.at += got
        self.done += got
        return got

    def close(self):
        pass


def _identity(stat):
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns
