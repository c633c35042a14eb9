"""Named datasets: the one shipped inside the package, the real benchmark data in
the shared data folder ($HOGWILD_DATA, see hogwild.paths), and rating datasets
that users download once (`hogwild download NAME`) into the cache."""
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Optional

from hogwild.atomic import atomic_file
from hogwild.datasets.cache import file_record
from hogwild.datasets.download import extract_member, fetch
from hogwild.datasets.formats import Reading
from hogwild.datasets.ratings import read_ratings
from hogwild.datasets.svmlight import cached_files, load_svmlight
from hogwild.errors import HogwildError, choose
from hogwild.limits import available_memory
from hogwild.paths import cache_dir, check_regular, data_cache_folder, shared_data_dir


@dataclass(frozen=True)
class SvmDataset:
    name: str
    where: str  # "shipped" (inside the package) or "shared" (in the shared data folder)
    train: str
    test: str
    n_features: int
    description: str

    def folder(self) -> Path:
        if self.where == "shipped":
            return Path(str(resources.files("hogwild.datasets") / "data"))
        return shared_data_dir()

    def available(self) -> bool:
        return (self.folder() / self.train).is_file()


SVM_DATASETS = {
    d.name: d for d in (
        SvmDataset("a9a", "shipped", "a9a/a9a.gz", "a9a/a9a.t.gz", 123,
                   "UCI Adult census income, binarised by LIBSVM (embedded default)"),
        SvmDataset("news20-bydate", "shared", "news20-bydate/train.svm.gz",
                   "news20-bydate/test.svm.gz", 53644,
                   "20 Newsgroups bydate, comp+sci+forsale vs rest, TF-IDF"),
        SvmDataset("imdb-aclimdb", "shared", "imdb-aclimdb/train.svm.gz",
                   "imdb-aclimdb/test.svm.gz", 44489,
                   "IMDB movie reviews (Maas et al. 2011), sentiment, TF-IDF"),
        SvmDataset("news20-bydate-multiclass", "shared",
                   "news20-bydate-multiclass/train.svm.gz",
                   "news20-bydate-multiclass/test.svm.gz", 53644,
                   "20 Newsgroups bydate, the 20 groups as classes, TF-IDF"),
    )
}
DEFAULT_SVM_DATASET = "a9a"


def load_svm_data(data=DEFAULT_SVM_DATASET, test=None, progress=False, reading=None):
    """(train, test) labelled rows for a dataset name, a file of labelled rows
    (svmlight, Vowpal Wabbit text or delimited columns: see
    hogwild.datasets.formats; ``reading`` says how, a formats.Reading) or a
    folder or glob pattern of such part files (read as one: datasets.parts), a
    generated click log "clicks:ROWSxFEATURESxNNZ" (hogwild.datasets.clicks) or
    Criteo-layout log "criteo:ROWS" (hogwild.datasets.criteo).

    A named dataset or a generated log brings its own test split unless ``test``
    (a path) is given. The test file is read as the training file was: svmlight
    features beyond the training ones are dropped with one warning.
    ``progress``: a bar while a file is read or a log made.
    """
    from hogwild.datasets.formats import read_rows
    from hogwild.datasets.parts import Parts, is_pattern

    bar = reading_bar(progress)
    if isinstance(data, str) and data.startswith("clicks:"):
        from hogwild.datasets.clicks import make_clicks, parse_clicks_spec

        train, test_data, _ = make_clicks(*parse_clicks_spec(data), progress=progress)
        if test is not None:
            test_data = read_rows(test, reading, like=train, progress=bar)
        return train, test_data
    if isinstance(data, str) and data.startswith("criteo:"):
        from hogwild.datasets.criteo import make_criteo, parse_criteo_spec

        train_path, test_path = make_criteo(parse_criteo_spec(data), progress=progress)
        train = read_rows(train_path, reading or Reading(format="csv"), progress=bar)
        return train, read_rows(test or test_path, reading, like=train, progress=bar)
    if data in SVM_DATASETS:
        spec = SVM_DATASETS[data]
        if not spec.available():
            raise HogwildError(
                f"dataset {data!r} is in the shared data folder, which does not have it: "
                f"{spec.folder() / spec.train} is missing (set HOGWILD_DATA)")
        train = load_svmlight(spec.folder() / spec.train, n_features=spec.n_features)
        test_path = Path(test) if test is not None else spec.folder() / spec.test
    else:
        path = data if isinstance(data, Parts) else Path(data)
        if not isinstance(path, Parts) and not _exists(path) and path.suffix == "" and \
                "/" not in str(data) and not is_pattern(str(data)):
            raise HogwildError(f"unknown dataset {data!r}; choose one of: "
                               f"{', '.join(SVM_DATASETS)}, or give a file path")
        train = read_rows(path, reading, progress=bar)
        test_path = Path(test) if test is not None else None
    test_data = None
    if test_path is not None:
        test_data = read_rows(test_path, reading, like=train, progress=bar)
    return train, test_data


def reading_bar(progress):
    """progress(bytes_read, file_bytes) moving a tqdm bar in MB/s on stderr (one per
    file read), when ``progress`` and tqdm is installed; else None."""
    if not progress:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    bars = {}

    def moved(done, total):
        bar = bars.get(total)
        if bar is None or done < bar.n:
            if bar is not None:
                bar.close()
            bar = bars[total] = tqdm(total=total, unit="B", unit_scale=True, desc="read",
                                     leave=False, disable=None)
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    return moved


# --- rating datasets ------------------------------------------------------------------

_GROUPLENS = "https://files.grouplens.org/datasets/movielens/"


@dataclass(frozen=True)
class RatingsDataset:
    """A rating dataset found in the shared data folder or downloaded by the user.

    ``sha256``: the archive's SHA-256, as TensorFlow Datasets records it for the
    same GroupLens URL (tensorflow/datasets: url_checksums/movielens.txt); for
    ml-10m, which it does not list, the md5 GroupLens publishes is checked instead.
    ml-latest-small changes with new releases: a mismatch then says so, and
    ``--url`` with ``--sha256`` accepts a newer file.
    """

    name: str
    description: str
    url: str
    sha256: Optional[str]
    member: str  # the ratings file inside the zip archive
    shared: Optional[str] = None  # path in the shared data folder, when it has it
    md5: Optional[str] = None  # only where no SHA-256 is known

    def downloaded_path(self) -> Path:
        return cache_dir() / "downloads" / self.name / Path(self.member).name

    def locate(self) -> Optional[Path]:
        """The ratings file: the shared folder's copy, else a downloaded one (in a
        cache folder of this user's alone), else None."""
        if self.shared is not None and (shared_data_dir() / self.shared).is_file():
            return shared_data_dir() / self.shared
        if data_cache_folder("downloads", self.name, create=False) is None:
            return None
        path = self.downloaded_path()
        return path if path.is_file() else None

    def check_download(self, path):
        """Refuse a downloaded ratings file that is not what was extracted (its size
        and CRC-32 are recorded beside it at download): a damaged cache entry."""
        record = path.with_name(path.name + DOWNLOAD_RECORD)
        try:
            expected = json.loads(record.read_text())
            intact = expected == file_record(path)
        except (OSError, ValueError):
            intact = False
        if not intact:
            raise HogwildError(f"the downloaded {path} is damaged (it does not match the size "
                               f"and checksum recorded at download); run 'hogwild download "
                               f"{self.name}' again")


RATINGS_DATASETS = {
    d.name: d for d in (
        RatingsDataset("ml-100k", "MovieLens 100K: 100,000 ratings, 943 users, 1,682 movies",
                       _GROUPLENS + "ml-100k.zip",
                       "50d2a982c66986937beb9ffb3aa76efe955bf3d5c6b761f4e3a7cd717c6a3229",
                       "ml-100k/u.data", shared="movielens-100k/u.data"),
        RatingsDataset("ml-1m", "MovieLens 1M: 1,000,209 ratings, 6,040 users, 3,706 movies",
                       _GROUPLENS + "ml-1m.zip",
                       "a6898adb50b9ca05aa231689da44c217cb524e7ebd39d264c56e2832f2c54e20",
                       "ml-1m/ratings.dat", shared="movielens-1m/ratings_reindexed.tsv.gz"),
        RatingsDataset("ml-10m", "MovieLens 10M: 10,000,054 ratings, 69,878 users",
                       _GROUPLENS + "ml-10m.zip", None, "ml-10M100K/ratings.dat",
                       md5="ce571fd55effeba0271552578f2648bd"),
        RatingsDataset("ml-20m", "MovieLens 20M: 20,000,263 ratings, 138,493 users",
                       _GROUPLENS + "ml-20m.zip",
                       "96f243c338a8665f6bcc89c53edf6ee39162a846940de6b7c8c48aeada765ff3",
                       "ml-20m/ratings.csv"),
        RatingsDataset("ml-25m", "MovieLens 25M: 25,000,095 ratings, 162,541 users",
                       _GROUPLENS + "ml-25m.zip",
                       "8b21cfb7eb1706b4ec0aac894368d90acf26ebdfb6aced3ebd4ad5bd1eb9c6aa",
                       "ml-25m/ratings.csv"),
        RatingsDataset("ml-latest-small", "MovieLens latest, small: about 100,000 ratings",
                       _GROUPLENS + "ml-latest-small.zip",
                       "696d65a3dfceac7c45750ad32df2c259311949efec81f0f144fdfb91ebc9e436",
                       "ml-latest-small/ratings.csv"),
    )
}


def download_dataset(name, url=None, sha256=None, progress=True) -> Path:
    """Download a rating dataset into the cache, verify it, and extract its ratings
    file; returns that file's path. ``url`` points at a mirror and needs the
    ``sha256`` of its archive: nothing unchecked lands in the cache."""
    spec = choose(RATINGS_DATASETS, name, "rating dataset")
    if url is not None and not _is_sha256(sha256):
        raise HogwildError(f"--url needs --sha256, the 64 hex digits of the mirror's archive "
                           f"(sha256sum prints them); got {sha256!r}")
    if data_cache_folder("downloads", spec.name) is None:
        raise HogwildError(f"cannot keep {name} in the cache folder {cache_dir()} (see the "
                           "warning); set HOGWILD_CACHE_DIR to a private folder")
    target = spec.downloaded_path()
    archive = target.parent / Path(spec.url).name
    if url is None:
        fetch(spec.url, archive, sha256=spec.sha256, md5=spec.md5, progress=progress)
    else:
        fetch(url, archive, sha256=sha256, progress=progress)
    try:
        extract_member(archive, spec.member, target)
    finally:
        archive.unlink()
    with atomic_file(target.with_name(target.name + DOWNLOAD_RECORD), "w") as out:
        out.write(json.dumps(file_record(target)))
    return target


DOWNLOAD_RECORD = ".check.json"  # beside a downloaded file: its size and CRC-32


def _exists(path):
    """Whether something is at ``path``; a name the OS refuses (too long, say) is
    nothing there, and reading it then names the OS's reason."""
    try:
        return path.exists()
    except OSError:
        return False


def _is_sha256(text):
    return isinstance(text, str) and len(text) == 64 and \
        all(c in "0123456789abcdefABCDEF" for c in text)


def load_ratings(data):
    """Ratings from a dataset name (see RATINGS_DATASETS) or a file path."""
    if data in RATINGS_DATASETS:
        spec = RATINGS_DATASETS[data]
        path = spec.locate()
        if path is None:
            raise HogwildError(f"dataset {data!r} is not here: run 'hogwild download {data}' "
                               f"(or point HOGWILD_DATA at a folder that has it)")
        if path == spec.downloaded_path():
            spec.check_download(path)
        return read_ratings(path)
    path = Path(data)
    if not _exists(path) and path.suffix == "" and "/" not in str(data):
        raise HogwildError(f"unknown dataset {data!r}; choose one of: "
                           f"{', '.join(RATINGS_DATASETS)}, or give a ratings file path")
    return read_ratings(path)


# --- graphs (graph cuts, colouring) --------------------------------------------------

GRAPH_DATASETS = {
    "snap-facebook-combined": ("snap-facebook-combined/facebook_combined.txt",
                               "SNAP ego-Facebook friendships"),
    "snap-email-Enron": ("snap-email-Enron/Email-Enron.txt.gz",
                         "SNAP Enron e-mail network"),
    "snap-ca-GrQc": ("snap-ca-GrQc/CA-GrQc.txt",
                     "SNAP arXiv GR-QC co-authorships"),
}


def load_graph(data, seed=0):
    """(n_vertices, u, v, w, ids) of a weighted undirected graph, each edge once:
    a name of GRAPH_DATASETS (shared data folder), ``random:VERTICESxEDGES`` (a
    uniform random graph, unit weights, seeded), a DIMACS file (.col, unit weights)
    or an edge list 'u v [weight]' (see datasets.graphs.read_weighted_edges)."""
    import numpy as np

    from hogwild.datasets.graphs import read_dimacs, read_weighted_edges

    if data.startswith("random:"):
        try:
            n, m = (int(part) for part in data[len("random:"):].lower().split("x"))
        except ValueError:
            n = m = 0
        if not (2 <= n < 2**31 and 1 <= m < 2**31):
            raise HogwildError(f"expected random:VERTICESxEDGES with 2 to 2**31 - 1 vertices "
                               f"and 1 to 2**31 - 1 edges, got {data!r}")
        needed, memory = 64 * m + 16 * n, available_memory()  # edges drawn, sorted, kept
        if memory is not None and needed > memory:
            raise HogwildError(f"{data}: a random graph that large needs about "
                               f"{needed / 2**30:.1f} GiB, more than the "
                               f"{memory / 2**30:.1f} GiB of memory available")
        rng = np.random.default_rng(seed)
        a, b = rng.integers(0, n, m), rng.integers(0, n, m)
        keep = a != b
        pairs = np.unique(np.stack([np.minimum(a, b), np.maximum(a, b)], 1)[keep], axis=0)
        return n, pairs[:, 0], pairs[:, 1], np.ones(len(pairs)), np.arange(n)
    if data in GRAPH_DATASETS:
        path = shared_data_dir() / GRAPH_DATASETS[data][0]
        if not path.is_file():
            raise HogwildError(f"graph {data!r} is in the shared data folder, which does not "
                               f"have it: {path} is missing (set HOGWILD_DATA)")
    else:
        path = Path(data)
        if not _exists(path):
            raise HogwildError(f"no graph {data!r}: give one of {', '.join(GRAPH_DATASETS)}, "
                               "random:VERTICESxEDGES, or a DIMACS / edge-list file")
        check_regular(path)
    if path.name.endswith((".col", ".col.gz")):
        graph = read_dimacs(path)
        u, v = graph.edges()
        return graph.n_vertices, u, v, np.ones(u.size), np.arange(1, graph.n_vertices + 1)
    return read_weighted_edges(path)


def dataset_listing():
    """Lines describing every dataset hogwild knows (shipped, shared or downloaded,
    with shapes), the folders it reads and the binary cache: ``hogwild datasets``."""
    import numpy as np

    yield f"shared data folder: {shared_data_dir()} (set HOGWILD_DATA to change)"
    yield f"cache folder: {cache_dir()} (set HOGWILD_CACHE_DIR to change)"
    yield (f"{'name':<15} {'where':<8} {'train rows x features':<24} {'nonzeros':>10} "
           f"{'test rows':>10}  description")
    for spec in SVM_DATASETS.values():
        if not spec.available():
            yield (f"{spec.name:<15} {spec.where:<8} {'(absent)':<24} {'':>10} {'':>10}  "
                   f"{spec.description}")
            continue
        train, test = load_svm_data(spec.name)
        shape = f"{train.X.shape[0]} x {train.X.shape[1]}"
        yield (f"{spec.name:<15} {spec.where:<8} {shape:<24} {train.X.nnz:>10} "
               f"{test.X.shape[0]:>10}  {spec.description}")
    yield (f"\n{'rating data':<15} {'where':<10} {'ratings':>11} {'users':>8} {'items':>7}  "
           "description")
    for spec in RATINGS_DATASETS.values():
        path = spec.locate()
        if path is None:
            yield (f"{spec.name:<15} {'(absent)':<10} {'':>11} {'':>8} {'':>7}  "
                   f"{spec.description}; hogwild download {spec.name}")
            continue
        where = "downloaded" if path == spec.downloaded_path() else "shared"
        ratings = read_ratings(path)
        yield (f"{spec.name:<15} {where:<10} {len(ratings):>11,} "
               f"{np.unique(ratings.users).size:>8,} {np.unique(ratings.items).size:>7,}  "
               f"{spec.description}")
    yield f"\n{'graph':<23} {'where':<10} {'vertices':>9} {'edges':>9}  description"
    for name, (relative, description) in GRAPH_DATASETS.items():
        if not (shared_data_dir() / relative).is_file():
            yield f"{name:<23} {'(absent)':<10} {'':>9} {'':>9}  {description}"
            continue
        n, u, _, _, _ = load_graph(name)
        yield f"{name:<23} {'shared':<10} {n:>9,} {u.size:>9,}  {description}"
    yield ""
    entries = cached_files()
    size = sum(entry["bytes"] for entry in entries)
    yield (f"binary cache: {len(entries)} parsed files, {size / 2**20:.1f} MiB in "
           f"{cache_dir() / 'datasets'}")
    for entry in sorted(entries, key=lambda entry: entry["source"]):
        shape = f"{entry['rows']} x {entry['max_index'] + 1}"
        base = "zero" if entry["zero_based"] else "one"
        yield f"  {shape:<24} {entry['nnz']:>10} nonzeros, {base}-based: {entry['source']}"
