"""Text files parsed on every core straight into a binary cache entry.

A reader (datasets.files.TextBlocks) cuts the file into blocks of whole lines,
decompressing on the way; a thread per usable core parses blocks with a format's
compiled kernel (nogil), and this thread appends each block's arrays, in the
file's order, to the .npy files of a cache entry being written, numbering its
rows' lines and shifting its row offsets as it goes. What is in memory at any
moment is a few blocks and their parsed arrays (``Budget``), whatever the file's
size: a 30 GB file is read as a 30 MB one is, and trained on from the entry by
memory maps (streamed from disk where it does not fit).

The entry appears whole or not at all: it is written in a temporary folder of
this process (removed on any error, Ctrl-C included; one left by a process that
was killed is removed by the next writer) and renamed into place, its header
last, with each array's CRC-32 taken as it was written. A bad line stops the
read with a one-line error naming the file, the line and what was expected.
Where no cache folder can be used, the same blocks are gathered in memory.
"""
import contextlib
import hashlib
import json
import os
import shutil
import threading
import warnings
import zlib
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from hogwild.datasets.cache import (Damaged, entry_in_progress, open_arrays, read_header,
                                    remove_entry)
from hogwild.datasets.files import TextBlocks
from hogwild.datasets.parts import FileRange, Parts
from hogwild.errors import DataFormatError, HogwildError
from hogwild.file_content import combined
from hogwild.limits import available_memory, size_text, usable_cores
from hogwild.paths import cache_dir, data_cache_folder

# What a read may hold at once (blocks of text and what they parse into), at most:
# several blocks a core keep every core busy; more only costs memory.
DEFAULT_BUDGET = 256 << 20
BLOCKS_PER_CORE = 2  # in flight a core: one parsed while the next waits
MIN_BLOCK = 1 << 20
MAX_BLOCK = 16 << 20
# A parsed block may take this many times its text (svmlight's 8 bytes a nonzero
# of at least 4 characters: 2x; rows of one short label: more, but rare)
PARSED_PER_TEXT = 3
_HEADER_BYTES = 128  # a .npy header of fixed size, written again with the final shape


@dataclass(frozen=True)
class Budget:
    """How a read cuts its file: ``block_bytes`` of text a block, ``in_flight``
    blocks at once, on ``workers`` threads."""

    block_bytes: int
    in_flight: int
    workers: int

    @classmethod
    def for_memory(cls, memory=None, workers=None):
        """The blocks for a read holding at most ``memory`` bytes at once (default:
        DEFAULT_BUDGET, or an eighth of the memory available if that is less)."""
        # a thread more than the cores: one that waits for its turn to append
        # leaves its core to another
        workers = workers or usable_cores() + 1
        if memory is None:
            available = available_memory()
            memory = DEFAULT_BUDGET if available is None else \
                min(DEFAULT_BUDGET, max(available // 8, MIN_BLOCK * 8))
        in_flight = BLOCKS_PER_CORE * workers
        block = memory // (in_flight * (1 + PARSED_PER_TEXT))
        return cls(int(min(max(block, MIN_BLOCK), MAX_BLOCK)), in_flight, workers)

    @property
    def max_line_bytes(self):
        """The longest line read: what one block may grow to."""
        return max(64 * self.block_bytes, 256 << 20)


@dataclass
class Piece:
    """One block parsed: its arrays (by field name), how many rows and lines it
    held, and, where it stopped at a bad line, ``error`` = (reason, the line's
    number within the block, the line's offset in the block). ``stats``: what the
    format gathers (the largest index, ...), combined by its ``merge``."""

    arrays: dict
    rows: int
    lines: int
    error: tuple = None  # (reason, line, its offset; None: the reason is the whole message)
    stats: dict = field(default_factory=dict)
    crcs: dict = field(default_factory=dict)


_PARSING = threading.local()  # a read's parsing thread: its output arrays, reused


def block_arrays(shapes):
    """A format's output arrays for one block, {name: (length, dtype)} -> {name:
    array}: inside a read's parsing thread, the same memory for each of its blocks
    in turn (its last block was appended before the next is parsed), since new
    pages for every block cost the threads page faults taken in turn on the
    process's one memory map; elsewhere, new arrays."""
    held = getattr(_PARSING, "arrays", None)
    if held is None:
        return {name: np.empty(length, dtype) for name, (length, dtype) in shapes.items()}
    out = {}
    for name, (length, dtype) in shapes.items():
        array = held.get(name)
        if array is None or array.size < length or array.dtype != dtype:
            array = held[name] = np.empty(length, dtype)
        out[name] = array[:length]
    return out


def _parsing_thread():
    _PARSING.arrays = {}


class TextFormat:
    """What a format gives the reader: ``fields`` {name: dtype} of the arrays it
    writes, ``offsets`` {field of end offsets: the field they index} (a CSR
    matrix's indptr into its indices; each offsets field starts with a 0 and
    each block's is shifted by what came before), ``lines`` (the field of rows'
    line numbers, or None), a ``parse`` of one block (a Piece), ``merge`` of two
    Pieces' stats, and ``what``, the name of its lines in errors."""

    fields = {}
    offsets = {}
    lines = None
    what = "line"
    samples = "samples"  # what a file holds, in the error of one that holds none
    version = None  # of its cache entries: another version's are parsed anew
    header = {}  # {key: type} that finish puts in an entry's header
    needs_first = False  # the first block is parsed alone, and ``first`` sees it

    def parse(self, data, first=False):
        """One block of whole lines (the file's first where ``first``): a Piece."""
        raise NotImplementedError

    def first(self, piece):
        """What the format learns from the first block, before the others are parsed."""

    def merge(self, total, stats):
        return {**total, **stats}

    def finish(self, sink, totals):
        """The entry's header fields (``header``) once every block is in ``sink``,
        which the format may still rewrite (EntrySink.rewrite)."""
        return {}


# --- where the arrays go ------------------------------------------------------------

class EntrySink:
    """A cache entry being written: each field a .npy file in a temporary folder of
    ``root``, appended piece by piece with its CRC-32; ``finish`` writes the final
    headers and ``meta`` (with each array's dtype, shape and CRC-32) and renames the
    folder to ``folder``. OSError where the folder cannot be made; a write that
    fails (a full disk) is a HogwildError naming ``source`` and the folder."""

    def __init__(self, root, fields, source):
        self.fields, self.root, self.source = fields, root, source
        self.files = {}
        self.tmp = entry_in_progress(root)
        try:
            for name in fields:
                self.files[name] = open(self.tmp / f"{name}.npy", "wb")
                self.files[name].write(b"\0" * _HEADER_BYTES)
        except BaseException:
            self.abort()
            raise
        self.lengths = dict.fromkeys(fields, 0)
        self.crcs = {name: [] for name in fields}

    def _failed(self, error):
        return HogwildError(f"cannot write the binary cache of {self.source} in {self.root}: "
                            f"{error.strerror or error}; free space there, or set "
                            "HOGWILD_CACHE_DIR to a folder on a disk with room")

    def append(self, name, array, crc=None):
        array = np.ascontiguousarray(array, self.fields[name])
        if array.size == 0:
            return
        view = memoryview(array.reshape(-1).view(np.uint8))
        try:
            self.files[name].write(view)
        except OSError as error:
            raise self._failed(error) from None
        self.crcs[name].append((zlib.crc32(view) if crc is None else crc, array.nbytes))
        self.lengths[name] += array.size

    def rewrite(self, name, change, rows=1 << 22):
        """Replace field ``name``'s values written so far by ``change(piece)`` of
        them, a piece at a time (its CRC-32s taken anew)."""
        f, dtype = self.files[name], np.dtype(self.fields[name])
        f.flush()
        crcs = []
        for start in range(0, self.lengths[name], rows):
            count = min(rows, self.lengths[name] - start)
            at = _HEADER_BYTES + start * dtype.itemsize
            piece = np.ascontiguousarray(change(np.frombuffer(
                os.pread(f.fileno(), count * dtype.itemsize, at), dtype)), dtype)
            os.pwrite(f.fileno(), memoryview(piece.view(np.uint8)), at)
            crcs.append((zlib.crc32(memoryview(piece.view(np.uint8))), piece.nbytes))
        self.crcs[name] = crcs

    def finish(self, folder, meta, header_name="meta.json"):
        """Close the entry and move it to ``folder``; its arrays' header records."""
        described = {}
        try:
            for name, f in self.files.items():
                f.seek(0)
                f.write(_npy_header(self.fields[name], self.lengths[name]))
                f.close()
                described[name] = {"dtype": np.dtype(self.fields[name]).str,
                                   "shape": [self.lengths[name]],
                                   "crc32": combined(self.crcs[name])}
            (self.tmp / header_name).write_text(json.dumps({**meta, "arrays": described}))
            remove_entry(folder)  # an earlier entry of the same name, damaged or partial
            os.replace(self.tmp, folder)
        except OSError as error:
            raise self._failed(error) from None
        return described

    def abort(self):
        for f in self.files.values():
            try:
                f.close()
            except OSError:  # a full disk refuses the buffered rest: it is removed anyway
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)


class MemorySink:
    """The arrays gathered in memory, where no cache folder can be used: refused as
    soon as they pass the memory available (a compressed file can inflate to
    terabytes), which must also hold their joined copy. The same methods as
    EntrySink."""

    def __init__(self, fields, source):
        self.fields, self.source = fields, source
        self.parts = {name: [] for name in fields}
        self.held = 0

    def append(self, name, array, crc=None):
        self.parts[name].append(np.array(array, self.fields[name], copy=True))
        self.held += array.nbytes
        memory = available_memory()
        if memory is not None and self.held > memory:
            raise HogwildError(f"cannot read {self.source}: what it holds passes the "
                               f"{size_text(memory)} of memory available (with a binary "
                               "cache folder, HOGWILD_CACHE_DIR, it would be kept on disk)")

    def rewrite(self, name, change):
        self.parts[name] = [np.asarray(change(part), self.fields[name])
                            for part in self.parts[name]]

    def arrays(self):
        return {name: np.concatenate(parts) if parts else np.empty(0, self.fields[name])
                for name, parts in self.parts.items()}

    def abort(self):
        self.parts.clear()


def _npy_header(dtype, length):
    """A .npy (version 1.0) header of exactly _HEADER_BYTES for a 1-d array."""
    text = repr({"descr": np.dtype(dtype).str, "fortran_order": False, "shape": (length,)})
    body = text.encode("latin1").ljust(_HEADER_BYTES - 10 - 1) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(body).to_bytes(2, "little") + body


# --- the read ------------------------------------------------------------------------

@dataclass
class Totals:
    """What the pieces so far held: rows, lines, per-nonzero entries, stats."""

    rows: int = 0
    lines: int = 0
    file_start: int = 0  # the lines before the file being read (of several)
    lengths: dict = field(default_factory=dict)  # of the fields that offsets index
    stats: dict = field(default_factory=dict)


class _InOrder:
    """Tickets 0, 1, 2, ... taking turns: ``turn(k)`` waits until every ticket before
    k has had its turn (the thread pool runs its jobs in the order given, so the
    ticket whose turn it is always runs)."""

    def __init__(self):
        self.next = 0
        self.ready = threading.Condition()

    @contextlib.contextmanager
    def turn(self, ticket):
        with self.ready:
            self.ready.wait_for(lambda: self.next == ticket)
        try:
            yield
        finally:
            with self.ready:
                self.next += 1
                self.ready.notify_all()


def read_text(path, fmt, sink, budget=None, progress=None):
    """Parse the text file ``path`` (or each file of datasets.parts.Parts, in order)
    with ``fmt`` (a TextFormat) into ``sink`` (an EntrySink or MemorySink), blocks
    on every core (``budget``: a Budget); returns the Totals. Each thread parses its
    block, then appends it to the sink in its turn (the files' order), while this
    one reads the next blocks. ``progress(bytes_read, bytes)`` is called as blocks
    are done. A bad line is a DataFormatError naming the file and line; the sink
    is left for the caller to finish or abort."""
    budget = budget or Budget.for_memory()
    files = list(path) if isinstance(path, Parts) else [path]
    total_bytes = sum(f.size() if isinstance(f, FileRange) else os.stat(f).st_size
                      for f in files)
    totals, order, failed = Totals(lengths=dict.fromkeys(fmt.offsets.values(), 0)), _InOrder(), []
    for offsets in fmt.offsets:
        sink.append(offsets, np.zeros(1, fmt.fields[offsets]))

    def job(ticket, file, block, opens_file, before, decided):
        piece = _parsed(fmt, block.data, opens_file)  # (a header's lines skipped)
        if decided is not None:  # the first block: what the format learns from it
            fmt.first(piece)
            decided.set()
        with order.turn(ticket):
            if not failed:
                try:
                    if opens_file:
                        totals.file_start = totals.lines
                    _take(files[file], fmt, sink, totals, block, piece)
                except BaseException:
                    failed.append(ticket)
                    raise
        return before + block.read

    spare = []  # the buffers of blocks parsed and appended, for the next blocks

    def finished(job):
        future, block = job
        done = future.result()
        if len(block.buffer) == budget.block_bytes and len(spare) < budget.in_flight:
            spare.append(block.buffer)  # (a longer line's, or CR-ended text's, is not)
        if progress is not None:
            progress(done, total_bytes)

    with ThreadPoolExecutor(budget.workers, thread_name_prefix="hogwild-parse",
                            initializer=_parsing_thread) as pool:
        pending, ticket, before = deque(), 0, 0
        try:
            for file, name in enumerate(files):
                share = name if isinstance(name, FileRange) else None
                with TextBlocks(name if share is None else share.path, budget.block_bytes,
                                budget.max_line_bytes,
                                None if share is None else (share.first, share.last),
                                spare) as blocks:
                    for k, block in enumerate(blocks):
                        decided = threading.Event() if fmt.needs_first and ticket == 0 else None
                        opens_file = k == 0 and (share is None or share.first == 0)
                        pending.append((pool.submit(job, ticket, file, block, opens_file,
                                                    before, decided), block))
                        ticket += 1
                        if decided is not None:
                            while not decided.wait(0.05) and not pending[0][0].done():
                                pass
                        while pending and (len(pending) >= budget.in_flight or
                                           pending[0][0].done()):
                            finished(pending.popleft())
                        if failed:
                            break
                    if not failed:
                        blocks.check_unchanged()
                    before += blocks.size
                if failed:
                    break
            while pending:
                finished(pending.popleft())
        finally:
            failed.append(None)  # the jobs still queued skip their turn's work
            for future, _ in pending:
                future.cancel()
    return totals


def _parsed(fmt, data, first):
    """fmt.parse(data, first), with each per-nonzero and per-row array's CRC-32
    taken here (zlib releases the GIL) but for the offsets and lines, which are
    shifted when appended."""
    piece = fmt.parse(data, first)
    if piece.error is None:
        piece.crcs = {name: zlib.crc32(memoryview(np.ascontiguousarray(a).reshape(-1)
                                                  .view(np.uint8)))
                      for name, a in piece.arrays.items()
                      if name not in fmt.offsets and name != fmt.lines}
    return piece


def _take(path, fmt, sink, totals, block, piece):
    """Append one parsed block to the sink (in the file's order), or raise the
    error of its bad line, numbered from the file's start."""
    if piece.error is not None:
        reason, line, offset = piece.error
        if offset is None:  # a reason that says it all
            raise _bad_line(f"{path}, line {totals.lines - totals.file_start + line}: "
                            f"{reason}", reason)
        data = block.data
        end = offset
        while end < data.size and data[end] != 10:
            end += 1
        text = bytes(data[offset:min(end, offset + 200)]).decode("utf-8", "replace").rstrip()
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise _bad_line(f"{path}, line {totals.lines - totals.file_start + line}: "
                        f"malformed {fmt.what} "
                        f"({reason}): {shown!r}", reason)
    for name, array in piece.arrays.items():
        if name in fmt.offsets:
            sink.append(name, array[1:] + totals.lengths[fmt.offsets[name]])
        elif name == fmt.lines:
            sink.append(name, array + totals.lines)
        else:
            sink.append(name, array, piece.crcs.get(name))
    for offsets, indexed in fmt.offsets.items():
        totals.lengths[indexed] += int(piece.arrays[offsets][-1])
    totals.rows += piece.rows
    totals.lines += piece.lines
    totals.stats = fmt.merge(totals.stats, piece.stats) if totals.stats else dict(piece.stats)


def _bad_line(message, reason):
    """The DataFormatError of a bad line, its ``reason`` kept for callers that read
    some files another way (a ratings file of text ids)."""
    error = DataFormatError(message)
    error.reason = reason
    return error


# --- a parsed file's cache entry ----------------------------------------------------

def entry_name(path, version, how):
    """The cache entry's name of text file ``path`` (or of the files of Parts
    together) read by a format of ``version`` in the way ``how`` says (a JSON-able
    list): each file's path, inode, size and modification and change times (an
    edit, even one that puts the modification time back, changes the change time)."""
    files = []
    for name in path if isinstance(path, Parts) else (path,):
        share = [name.first, name.last] if isinstance(name, FileRange) else []
        name = name.path if isinstance(name, FileRange) else name
        info = name.stat()
        files.append([str(name.resolve()), info.st_ino, info.st_size, info.st_mtime_ns,
                      info.st_ctime_ns, *share])
    ident = json.dumps([version, *(files if isinstance(path, Parts) else files[0]), how])
    return hashlib.sha256(ident.encode()).hexdigest()[:24]


def parsed(path, fmt, how, cache=True, progress=None):
    """(arrays, header) of the text file ``path`` (or the files of Parts, as one)
    read by ``fmt`` (a TextFormat) in the way ``how`` says: memory maps of its
    cache entry, made now where there is none (or the one there is damaged:
    removed, with a warning); with
    ``cache=False``, or where no cache folder can be used, arrays parsed into
    memory. ``progress(bytes_read, file_bytes)`` is called as blocks are read."""
    root = data_cache_folder("datasets") if cache else None
    entry = root / entry_name(path, fmt.version, how) if root is not None else None
    if entry is not None and entry.exists():
        cached = _open_cached(entry, path, fmt)
        if cached is not None:
            return cached
    sink = None
    if root is not None:
        try:
            sink = EntrySink(root, fmt.fields, path)
        except OSError:  # a read-only or full disk: parsed into memory, as without a cache
            sink = None
    sink = sink or MemorySink(fmt.fields, path)
    try:
        totals = read_text(path, fmt, sink, progress=progress)
        if totals.rows == 0:
            raise HogwildError(f"empty data: {path} holds no {fmt.samples}")
        source = f"{path} ({len(path)} files)" if isinstance(path, Parts) else \
            str(path) if isinstance(path, FileRange) else str(path.resolve())
        meta = {"version": fmt.version, "source": source, "rows": totals.rows,
                **fmt.finish(sink, totals)}
        if isinstance(sink, MemorySink):
            return sink.arrays(), meta
        described = sink.finish(entry, meta)
    except BaseException:
        sink.abort()
        raise
    return open_arrays(entry, described, verified=True), meta


def _open_cached(folder, path, fmt):
    """(arrays, header) of the cache entry in ``folder``, or None when it is damaged
    (see hogwild.datasets.cache: removed, with a warning, to be parsed anew)."""
    try:
        meta = read_header(folder, "meta.json")
        arrays = open_arrays(folder, meta.get("arrays"))
        if set(arrays) != set(fmt.fields) or any(
                not isinstance(meta.get(key), kind) for key, kind in fmt.header.items()):
            raise Damaged("it lacks some of its arrays or fields")
    except Damaged as damage:
        warnings.warn(f"the binary cache of {path} in {folder} is damaged: {damage}; parsing "
                      "the file again", stacklevel=4)
        remove_entry(folder)
        return None
    return arrays, meta


def cached_entries():
    """What the binary cache of parsed files holds: each entry's header (source,
    rows, version and the format's fields) and bytes; entries it cannot read are
    left out."""
    root = cache_dir() / "datasets"
    entries = []
    for folder in sorted(root.iterdir()) if root.is_dir() else ():
        if folder.name.startswith("."):
            continue
        try:
            meta = read_header(folder, "meta.json")
            meta["bytes"] = sum(f.stat().st_size for f in folder.iterdir())
            entries.append(meta)
        except (Damaged, OSError):
            continue
    return entries
