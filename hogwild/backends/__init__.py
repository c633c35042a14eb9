"""Backends execute EpochPlans: where the workers run (threads or processes; GPU
streams later), all behind the same calls: ``share`` (the arrays the workers will
use), ``warm_up``, ``run_epoch`` per epoch, ``export`` (the trained parameters) and
``close``. Backend "ray" is not one of them: it runs this engine on several nodes
(hogwild.distributed), and hogwild.fit hands the whole fit to it."""
from hogwild.backends.processes import ProcessesBackend
from hogwild.backends.threads import ThreadsBackend
from hogwild.errors import choose

BACKENDS = {"threads": ThreadsBackend, "processes": ProcessesBackend}
BACKEND_NAMES = (*BACKENDS, "ray")


def get_backend(name):
    return BACKENDS[choose(BACKEND_NAMES, name, "backend")]
