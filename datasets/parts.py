"""Data sets in several files (the part files that Spark, Hadoop or ``split`` write):
a folder of them, or a glob pattern, read as one data set in name order (numbers
by value: day_2 before day_10); and, in an
MPI job whose hosts each hold some of them on their own disks, which parts each
rank reads (``assign``), so that N machines hold N times the data of one.

A part is known by its name, size and a fingerprint of its first and last bytes:
the same part seen by several hosts (a shared file system, or copies) is read by
one rank alone; parts of the same name that differ are different parts. One
uncompressed file several ranks see is read in byte shares instead
(``FileRange``), each rank the lines that start in its share."""
import glob
import os
import re
import zlib
from pathlib import Path

from hogwild.errors import HogwildError
from hogwild.paths import check_regular

# A folder's files that are not data: hidden files, and Hadoop's and Spark's markers
# and checksums (_SUCCESS, _committed_..., .part-00000.crc)
SKIPPED_PREFIXES = (".", "_")
FINGERPRINT_BYTES = 1 << 16


class Parts(tuple):
    """The files of a data set in several files, in name order; ``spec`` is the
    folder or pattern they were found by (what messages name)."""

    def __new__(cls, files, spec):
        parts = super().__new__(cls, [Path(f) for f in files])
        parts.spec = str(spec)
        return parts

    def __str__(self):
        return self.spec

    def __reduce__(self):
        return Parts, (tuple(self), self.spec)

    def size(self):
        """The files' bytes together."""
        return sum(f.stat().st_size for f in self)


def _name_order(path):
    """Sorting key of a part: its name with runs of digits compared as numbers."""
    return [(0, int(piece), "") if piece.isdigit() else (1, 0, piece)
            for piece in re.split(r"(\d+)", str(path))]


class FileRange:
    """The lines of one uncompressed file that start in its bytes first..last-1:
    one rank's share of a file several ranks read apart (each line in one share,
    whatever the cut)."""

    def __init__(self, path, first, last):
        self.path, self.first, self.last = Path(path), int(first), int(last)

    def __str__(self):
        return f"{self.path} (bytes {self.first:,} to {self.last:,})"

    def __reduce__(self):
        return FileRange, (self.path, self.first, self.last)

    def size(self):
        return self.last - self.first


def read_in_shares(path):
    """Whether ``path`` is one uncompressed regular file, which ranks can read in
    byte shares (a compressed one is read from its start: whole, on every rank)."""
    from hogwild.datasets.files import MAGIC
    path = Path(path)
    try:
        if not path.is_file():
            return False
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError:
        return False
    return not any(head.startswith(magic) for magic in MAGIC.values())


def share_of_file(path, index, count):
    """The FileRange of share ``index`` of ``count`` nearly equal byte shares."""
    size = Path(path).stat().st_size
    return FileRange(path, index * size // count, (index + 1) * size // count)


def is_pattern(text):
    return any(c in text for c in "*?[")


def part_files(spec):
    """The Parts of ``spec`` (a folder: its data files; a glob pattern: the regular
    files it matches), or None where ``spec`` names one file. A folder or
    pattern without data files is a HogwildError."""
    text = str(spec)
    path = Path(text)
    if path.is_dir():
        files = sorted((p for p in path.iterdir()
                        if not p.name.startswith(SKIPPED_PREFIXES) and p.is_file()),
                       key=_name_order)
        if not files:
            raise HogwildError(f"{text} is a folder without data files (hidden files and "
                               "names starting with '_' are not read)")
        return Parts(files, text)
    if is_pattern(text) and not path.exists():
        files = sorted((Path(p) for p in glob.glob(os.path.expanduser(text))),
                       key=_name_order)
        files = [p for p in files if p.is_file()]
        if not files:
            raise HogwildError(f"no file matches {text}")
        return Parts(files, text)
    return None


def check_files(source, what=""):
    """check_regular of a file, a FileRange's file, or each file of Parts."""
    for path in source if isinstance(source, Parts) else (source,):
        check_regular(path.path if isinstance(path, FileRange) else path, what=what)


def listing(parts):
    """What a host holds of ``parts``: (name, size, fingerprint) of each file; the
    name is relative to the folder or to the pattern's fixed part, so that hosts
    with different roots still agree."""
    root = Path(parts.spec) if Path(parts.spec).is_dir() else \
        Path(os.path.commonpath([str(p.parent) for p in parts]))
    return [(str(p.relative_to(root)) if p.is_relative_to(root) else p.name,
             p.stat().st_size, fingerprint(p)) for p in parts]


def fingerprint(path):
    """CRC-32 of the file's first and last FINGERPRINT_BYTES."""
    with open(path, "rb") as f:
        head = f.read(FINGERPRINT_BYTES)
        size = os.fstat(f.fileno()).st_size
        tail = os.pread(f.fileno(), FINGERPRINT_BYTES, max(size - FINGERPRINT_BYTES, 0))
    return zlib.crc32(tail, zlib.crc32(head))


def assign(listings, spec):
    """Which parts each rank reads: ``listings[r]`` is rank r's (host, listing()),
    the result a list per rank of the names it reads. Each distinct part goes to
    one of the ranks whose host holds it, the largest first, each to the rank of
    those with the fewest bytes so far (the lowest on a tie), so that the ranks'
    shares are about even. Every rank must get one: a HogwildError else, the same
    on every rank (each computes this from the same listings)."""
    holders = {}  # part: the ranks whose host holds it
    for rank, (_, held) in enumerate(listings):
        for part in held:
            holders.setdefault(tuple(part), []).append(rank)
    if len(holders) < len(listings):
        raise HogwildError(f"{len(listings)} ranks read the {len(holders)} part file"
                           f"{'s' * (len(holders) != 1)} of {spec}: each rank needs one at "
                           "least (split them into more, e.g. split -n l/N)")
    loads, names = [0] * len(listings), [[] for _ in listings]
    for part in sorted(holders, key=lambda p: (-p[1], p[0], p[2])):
        rank = min(holders[part], key=lambda r: (loads[r], r))
        loads[rank] += part[1]
        names[rank].append(part[0])
    idle = [rank for rank, mine in enumerate(names) if not mine]
    if idle:  # a host with more ranks than parts, or none of its own
        host = listings[idle[0]][0]
        raise HogwildError(f"rank {idle[0]} (host {host}) has no part file of {spec} to read: "
                           "every rank needs one on its own host (more parts, or fewer ranks "
                           "there)")
    return [sorted(mine) for mine in names]


def rank_parts(parts, comm, host):
    """The Parts this rank of ``comm`` reads of ``parts`` (the files its host holds),
    and the bytes of all distinct parts of the job (what sizes the hashed
    formats' features alike on every rank)."""
    held = listing(parts)
    listings = comm.allgather((host, held))
    mine = set(assign(listings, parts.spec)[comm.Get_rank()])
    distinct = {tuple(part) for _, others in listings for part in others}
    return Parts([path for path, (name, _, _) in zip(parts, held) if name in mine],
                 parts.spec), sum(size for _, size, _ in distinct)


def data_source(path):
    """``path`` as the readers take it: Parts and a FileRange as they are, a folder
    or glob pattern as its Parts, anything else a Path."""
    if isinstance(path, (Parts, FileRange)):
        return path
    return part_files(path) or Path(path)


def first_file(source):
    """The file a format is read off (the first of Parts, a FileRange's file)."""
    if isinstance(source, FileRange):
        return source.path
    return source[0] if isinstance(source, Parts) else source
