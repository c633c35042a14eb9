"""Backends execute EpochPlans: where the workers run (threads or processes now;
GPU streams and Ray later), all behind the same calls: ``share`` (the arrays the
workers will use), ``warm_up``, ``run_epoch`` per epoch, ``export`` (the trained
parameters) and ``close``."""
from hogwild.backends.processes import ProcessesBackend
from hogwild.backends.threads import ThreadsBackend
from hogwild.errors import choose

BACKENDS = {"threads": ThreadsBackend, "processes": ProcessesBackend}


def get_backend(name):
    return choose(BACKENDS, name, "backend")
