"""Shared fixtures: the real datasets in the shared data folder ($HOGWILD_DATA)."""
import pytest

from hogwild.datasets.registry import SVM_DATASETS, load_svm_data


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
