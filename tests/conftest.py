"""Shared fixtures: the real datasets in the shared data folder ($HOGWILD_DATA)."""
import pytest

from hogwild.datasets.ratings import split_ratings
from hogwild.datasets.registry import RATINGS_DATASETS, SVM_DATASETS, load_svm_data, load_ratings


def shared_dataset(name):
    """(train, test) of a shared dataset, or skip the test saying where it was looked for."""
    spec = SVM_DATASETS[name]
    if not spec.available():
        pytest.skip(f"shared dataset {name!r} not found at {spec.folder() / spec.train} "
                    "(set HOGWILD_DATA to the shared data folder)")
    return load_svm_data(name)


@pytest.fixture(scope="session")
def a9a():
    return load_svm_data("a9a")


@pytest.fixture(scope="session")
def news20():
    return shared_dataset("news20-bydate")


@pytest.fixture(scope="session")
def imdb():
    return shared_dataset("imdb-aclimdb")


def shared_ratings(name):
    """A rating dataset from the shared data folder, or skip saying where it was looked for."""
    spec = RATINGS_DATASETS[name]
    if spec.locate() is None:
        pytest.skip(f"rating dataset {name!r} not found in the shared data folder or the "
                    "download cache (set HOGWILD_DATA to the shared data folder)")
    return load_ratings(name)


@pytest.fixture(scope="session")
def ml100k():
    return shared_ratings("ml-100k")


@pytest.fixture(scope="session")
def ml1m_split():
    """MovieLens 1M, random 80/20 split of the ratings with seed 0."""
    return split_ratings(shared_ratings("ml-1m"), test_fraction=0.2, seed=0)
