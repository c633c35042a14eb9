"""Backends execute EpochPlans: where the workers run (threads now; processes,
GPU streams and Ray later), all behind the same ``run_epoch`` call."""
from hogwild.backends.threads import ThreadsBackend
from hogwild.errors import HogwildError

BACKENDS = {"threads": ThreadsBackend}


def get_backend(name):
    try:
        return BACKENDS[name]
    except (KeyError, TypeError):
        raise HogwildError(f"unknown backend {name!r}; choose one of: "
                           f"{', '.join(sorted(BACKENDS))}") from None
