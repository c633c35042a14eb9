"""Named datasets: the one shipped inside the package and the real benchmark
data in the shared data folder ($HOGWILD_DATA, see hogwild.paths)."""
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from hogwild.datasets.svmlight import load_svmlight
from hogwild.errors import HogwildError
from hogwild.paths import shared_data_dir


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
    )
}
DEFAULT_SVM_DATASET = "a9a"


def load_svm_data(data=DEFAULT_SVM_DATASET, test=None):
    """(train, test) SvmlightData for a dataset name or an svmlight file path.

    A named dataset brings its own test split unless ``test`` (a path) is given.
    The test file is aligned to the training features: features beyond them are
    dropped with one warning.
    """
    if data in SVM_DATASETS:
        spec = SVM_DATASETS[data]
        if not spec.available():
            raise HogwildError(
                f"dataset {data!r} is in the shared data folder, which does not have it: "
                f"{spec.folder() / spec.train} is missing (set HOGWILD_DATA)")
        train = load_svmlight(spec.folder() / spec.train, n_features=spec.n_features)
        test_path = Path(test) if test is not None else spec.folder() / spec.test
    else:
        path = Path(data)
        if not path.exists() and path.suffix == "" and "/" not in str(data):
            raise HogwildError(f"unknown dataset {data!r}; choose one of: "
                               f"{', '.join(SVM_DATASETS)}, or give an svmlight file path")
        train = load_svmlight(path)
        test_path = Path(test) if test is not None else None
    test_data = None
    if test_path is not None:
        test_data = load_svmlight(test_path, n_features=train.X.shape[1],
                                  zero_based=train.zero_based, extra_features="drop")
    return train, test_data
