"""Which reader a file of labelled rows takes (svmlight, Vowpal Wabbit text or
delimited columns), and how: ``Reading``, the options of them all, and
``read_rows``, which tells the format from the file's name or first line where
it is not given and reads a test file as its training file was read."""
import math
from dataclasses import dataclass
from pathlib import Path

from hogwild.datasets.files import TextBlocks
from hogwild.datasets.hashing import MAX_HASH_BITS
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


def default_hash_bits(path):
    """2^bits weights for a hashed file of this size: about one a
    TEXT_BYTES_PER_WEIGHT bytes of its text, from Vowpal Wabbit's default of 2^18
    (a 1 MB file) to 2^24 (500 MB and more: 335 MB of model), so that a large
    click log's features rarely collide."""
    size = max(Path(path).stat().st_size, 1)
    low, high = HASH_BITS_RANGE
    return int(min(max(round(math.log2(size / TEXT_BYTES_PER_WEIGHT)), low), high))


def sniff(path):
    """The format of ``path``: by its name's suffix (.svm, .libsvm, .vw, .csv, .tsv,
    compressed or not), else by its first line: a '|' is Vowpal Wabbit's, a label
    and index:value pairs svmlight's, anything else delimited columns."""
    name = Path(path).name.lower()
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


def read_rows(path, reading=None, like=None, progress=None):
    """The labelled rows of ``path`` (SvmlightData, VWData or DelimitedData), read
    as ``reading`` says; ``like``: the training set's rows, which a test file is
    read to match (its format, hashing, pairs and columns; svmlight features
    beyond the training ones are dropped with a warning)."""
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
    if like is not None:
        return load_delimited(path, header=reading.header, like=like, progress=progress)
    return load_delimited(path, label=reading.label, numeric=reading.numeric,
                          categorical=reading.categorical, weight=reading.weight,
                          skip=reading.skip, separator=reading.separator,
                          header=reading.header,
                          hash_bits=reading.hash_bits or default_hash_bits(path),
                          numeric_scale=reading.numeric_scale, progress=progress)


def _format_of(rows):
    name = type(rows).__name__
    return {"SvmlightData": "svmlight", "VWData": "vw", "DelimitedData": "csv"}[name]
