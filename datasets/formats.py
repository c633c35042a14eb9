"""Which reader a file of labelled rows takes (svmlight, Vowpal Wabbit text or
delimited columns), and how: ``Reading``, the options of them all, and
``read_rows``, which tells the format from the file's name or first line where
it is not given and reads a test file as its training file was read."""
import math
from dataclasses import dataclass, replace
from pathlib import Path

from hogwild.datasets.files import TextBlocks
from hogwild.datasets.hashing import MAX_HASH_BITS
from hogwild.datasets.parts import FileRange, Parts, data_source, first_file
from hogwild.errors import HogwildError, check_int, choose

FORMATS = ("auto", "svmlight", "vw", "csv")
_SUFFIXES = {".svm": "svmlight", ".svmlight": "svmlight", ".libsvm": "svmlight",
             ".vw": "vw", ".csv": "csv", ".tsv": "csv"}
_COMPRESSED = (".gz", ".bz2", ".xz", ".zst")
# hash_bits=None: about one weight per this many bytes of text, within these bits
TEXT_BYTES_PER_WEIGHT = 32
HASH_BITS_RANGE = (18, 24)


@dataclass(frozen=True)
class Reading:
    """How a file of labelled rows is read: its ``format`` ("auto": from the file)
    and the options of the hashed formats (see load_vw and load_delimited):
    hash_bits (None: from the file's size, see default_hash_bits), quadratic
    namespace pairs (Vowpal Wabbit), and the delimited columns' roles."""

    format: str = "auto"
    hash_bits: int = None
    quadratic: tuple = ()
    label: str = None
    weight: str = None
    numeric: tuple = None
    categorical: tuple = None
    skip: tuple = None
    separator: str = None
    header: bool = None
    numeric_scale: str = "log"

    def __post_init__(self):
        choose(FORMATS, self.format, "format")
        if self.hash_bits is not None:
            check_int("hash_bits", self.hash_bits, 1, MAX_HASH_BITS)


def default_hash_bits(path, size=None):
    """2^bits weights for a hashed file of this size (``size`` bytes where given:
    the parts of a job that its ranks read apart): about one a
    TEXT_BYTES_PER_WEIGHT bytes of its text, from Vowpal Wabbit's default of 2^18
    (a 1 MB file) to 2^24 (500 MB and more: 335 MB of model), so that a large
    click log's features rarely collide."""
    if size is None:
        source = data_source(path)
        size = source.size() if isinstance(source, (Parts, FileRange)) \
            else source.stat().st_size
    low, high = HASH_BITS_RANGE
    return int(min(max(round(math.log2(max(size, 1) / TEXT_BYTES_PER_WEIGHT)), low), high))


def sniff(path):
    """The format of ``path``: by its name's suffix (.svm, .libsvm, .vw, .csv, .tsv,
    compressed or not), else by its first line: a '|' is Vowpal Wabbit's, a label
    and index:value pairs svmlight's, anything else delimited columns."""
    path = first_file(data_source(path))
    name = path.name.lower()
    for suffix in _COMPRESSED:
        if name.endswith(suffix):
            name = name[:-len(suffix)]
    for suffix, fmt in _SUFFIXES.items():
        if name.endswith(suffix):
            return fmt
    with TextBlocks(path, 1 << 16, 1 << 20) as blocks:
        first = next(iter(blocks), None)
    if first is None:
        return "svmlight"  # nothing to read: that reader says so
    text = bytes(first.data).decode("utf-8", "replace")
    line = next((line for line in text.split("\n") if line.strip()
                 and not line.lstrip().startswith("#")), "")
    if "|" in line:
        return "vw"
    if "," not in line and all(":" in token for token in line.split()[1:]):
        return "svmlight"
    return "csv"


def read_rows(path, reading=None, like=None, progress=None, layout=None):
    """The labelled rows of ``path`` (SvmlightData, VWData or DelimitedData), read
    as ``reading`` says; ``like``: the training set's rows, which a test file is
    read to match (its format, hashing, pairs and columns; svmlight features
    beyond the training ones are dropped with a warning); ``layout``: a delimited
    file's columns as another file's were read (datasets.delimited.Layout)."""
    reading = reading or Reading()
    fmt = reading.format if like is None else _format_of(like)
    if fmt == "auto":
        fmt = sniff(path)
    if fmt == "svmlight":
        from hogwild.datasets.svmlight import load_svmlight
        if like is None:
            return load_svmlight(path, progress=progress)
        return load_svmlight(path, n_features=like.X.shape[1], zero_based=like.zero_based,
                             extra_features="drop", progress=progress)
    if fmt == "vw":
        from hogwild.datasets.vw import load_vw
        if like is not None:
            letters = like.crossings
            pairs = reading.quadratic if letters is None else \
                [letters.letters[a] + letters.letters[b] for a, b in letters.pairs]
            return load_vw(path, like.hash_bits, pairs, progress=progress)
        bits = reading.hash_bits or default_hash_bits(path)
        return load_vw(path, bits, reading.quadratic, progress=progress)
    from hogwild.datasets.delimited import load_delimited
    if reading.quadratic:
        raise HogwildError("quadratic pairs cross Vowpal Wabbit namespaces; a delimited file "
                           "has none (cross its columns in a Vowpal Wabbit file instead)")
    if like is not None or layout is not None:
        return load_delimited(path, header=reading.header, like=like or layout,
                              progress=progress)
    return load_delimited(path, **_columns_of(path, reading), progress=progress)


def _columns_of(path, reading):
    """load_delimited's column options of ``reading``."""
    return dict(label=reading.label, numeric=reading.numeric,
                categorical=reading.categorical, weight=reading.weight,
                skip=reading.skip, separator=reading.separator, header=reading.header,
                hash_bits=reading.hash_bits or default_hash_bits(path),
                numeric_scale=reading.numeric_scale)


def _layout(path, reading):
    """The delimited columns of ``path`` read off its first lines as ``reading`` says."""
    from hogwild.datasets.delimited import delimited_layout
    return delimited_layout(path, **_columns_of(path, reading))


def _format_of(rows):
    name = type(rows).__name__
    return {"SvmlightData": "svmlight", "VWData": "vw", "DelimitedData": "csv"}[name]


def read_own_parts(parts, reading, comm, host, test=None, progress=None):
    """(train, test) of this rank of an MPI job (``comm``, on ``host``) whose ranks
    each read their own share of ``parts`` (datasets.parts.Parts: those its host
    holds, shared out by parts.assign); read alike on every rank (read_own). The
    ``test`` file is read by rank 0 alone (the rank that reports)."""
    from hogwild.datasets.parts import rank_parts
    mine, job_bytes = rank_parts(parts, comm, host)
    return read_own(mine, job_bytes, reading, comm, test, progress)


def read_own_share(path, reading, comm, test=None, progress=None):
    """(train, test) of this rank of an MPI job whose ranks read one uncompressed
    file in byte shares (datasets.parts.FileRange): the ranks that see the same file
    (its size and fingerprint: every rank, on a shared disk or with copies) share
    it out in rank order, and a host whose file differs reads its own among its
    ranks. Read alike on every rank (read_own)."""
    from hogwild.datasets.parts import fingerprint, share_of_file
    held = (Path(path).stat().st_size, fingerprint(path))  # the same file wherever its name
    every = comm.allgather(held)
    sharing = [rank for rank, other in enumerate(every) if other == held]
    mine = share_of_file(path, sharing.index(comm.Get_rank()), len(sharing))
    job_bytes = sum(size for size, _ in set(every))
    return read_own(mine, job_bytes, reading, comm, test, progress)


def read_own(mine, job_bytes, reading, comm, test=None, progress=None):
    """(train, test) of this rank's own rows ``mine`` (Parts or a FileRange), read
    alike on every rank: the format, and a delimited file's columns, as rank 0
    reads them off its own; the hashed formats' width from ``job_bytes`` (all the
    job's text); svmlight features numbered from 0 where any rank's are, as many
    as the widest rank's. ``test`` is read by rank 0 alone."""
    reading = reading or Reading()
    chief = comm.Get_rank() == 0
    fmt = comm.bcast((sniff(mine) if reading.format == "auto" else reading.format)
                     if chief else None, root=0)
    if fmt == "svmlight":
        from hogwild.datasets.svmlight import load_svmlight
        rows = load_svmlight(mine, progress=progress)
        zero_based = any(comm.allgather(rows.zero_based))
        shifted = zero_based and not rows.zero_based  # its index 1 is the job's 1, not 0
        width = max(comm.allgather(rows.X.shape[1] + int(shifted)))
        if shifted or width != rows.X.shape[1]:
            rows = load_svmlight(mine, n_features=width, zero_based=True if shifted else "auto",
                                 progress=progress)
    else:
        reading = replace(reading, format=fmt,
                          hash_bits=reading.hash_bits or default_hash_bits(mine, job_bytes))
        like = None
        if fmt == "csv":
            like = comm.bcast(_layout(mine, reading) if chief else None, root=0)
        rows = read_rows(mine, reading, layout=like, progress=progress)
    return rows, (read_rows(test, reading, like=rows, progress=progress)
                  if chief and test is not None else None)
