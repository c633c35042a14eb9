"""Backends execute EpochPlans: where the workers run (threads, processes, GPU
streams, or nodes on Ray), all behind one contract (hogwild.backends.base.Backend)
with the engine, whose epoch loop drives them all."""
from hogwild.backends.processes import ProcessesBackend
from hogwild.backends.threads import ThreadsBackend
from hogwild.errors import HogwildError, choose

BACKENDS = {"threads": ThreadsBackend, "processes": ProcessesBackend}
BACKEND_NAMES = (*BACKENDS, "gpu", "ray", "mpi")


def get_backend(name):
    """The backend class of ``name``; gpu, ray and mpi are imported only when asked
    (they import numba.cuda and, later, Ray or mpi4py)."""
    name = choose(BACKEND_NAMES, name, "backend")
    if name == "gpu":
        from hogwild.backends.gpu import GpuBackend
        return GpuBackend
    if name == "ray":
        from hogwild.backends.ray import RayBackend
        return RayBackend
    if name == "mpi":
        from hogwild.backends.mpi import MPIBackend
        return MPIBackend
    return BACKENDS[name]


def distributed_settings(backend, settings):
    """TrainingConfig.distributed checked for ``backend``: the settings object of
    backend "ray" (SSPSettings) or "mpi" (AllreduceSettings), given as one or as a
    dict of its fields (None: the defaults); other backends take none."""
    if backend == "ray":
        from hogwild.backends.ray import SSPSettings as kind  # Ray itself is imported later
    elif backend == "mpi":
        from hogwild.backends.mpi import AllreduceSettings as kind  # and mpi4py
    elif settings is None:
        return None
    else:
        raise HogwildError(f"distributed settings are for backend='ray' or 'mpi', not "
                           f"{backend!r}")
    settings = kind() if settings is None else settings
    if isinstance(settings, dict):
        settings = kind(**settings)
    if not isinstance(settings, kind):
        raise HogwildError(f"distributed must be a hogwild.backends.{backend}.{kind.__name__} or a "
                           f"dict, got {type(settings).__name__}")
    return settings.checked()
