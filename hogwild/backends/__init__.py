"""Backends execute EpochPlans: where the workers run (threads, processes or GPU
streams), all behind the same calls: ``share`` (the arrays the workers will use; given
the number of samples for the GPU's streaming of data that does not fit), ``warm_up``
(compiles; it is given the objective for forms of the update that only one backend runs,
such as the GPU's ``warp_update``), ``run_epoch`` per epoch, ``to_host`` (parameters the
CPU can read, for evaluation), ``export`` (the trained parameters) and ``close``.
Backend "ray" is not one of them: it runs this engine on several nodes
(hogwild.distributed), and hogwild.fit hands the whole fit to it."""
from hogwild.backends.processes import ProcessesBackend
from hogwild.backends.threads import ThreadsBackend
from hogwild.errors import choose

BACKENDS = {"threads": ThreadsBackend, "processes": ProcessesBackend}
BACKEND_NAMES = (*BACKENDS, "gpu", "ray")


def get_backend(name):
    if choose(BACKEND_NAMES, name, "backend") == "gpu":
        from hogwild.backends.gpu import GpuBackend  # imports numba.cuda: only when asked
        return GpuBackend
    return BACKENDS[name]
