"""Backends execute EpochPlans: where the workers run (threads now; processes,
GPU streams and Ray later), all behind the same ``run_epoch`` call."""
from hogwild.backends.threads import ThreadsBackend
from hogwild.errors import choose

BACKENDS = {"threads": ThreadsBackend}


def get_backend(name):
    return choose(BACKENDS, name, "backend")
