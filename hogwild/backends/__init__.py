"""Backends execute EpochPlans: where the workers run (threads, processes, GPU
streams, or nodes on Ray), all behind one contract (hogwild.backends.base.Backend)
with the engine, whose epoch loop drives them all."""
from hogwild.backends.processes import ProcessesBackend
from hogwild.backends.threads import ThreadsBackend
from hogwild.errors import choose

BACKENDS = {"threads": ThreadsBackend, "processes": ProcessesBackend}
BACKEND_NAMES = (*BACKENDS, "gpu", "ray")


def get_backend(name):
    """The backend class of ``name``; gpu and ray are imported only when asked (they
    import numba.cuda and, later, Ray)."""
    name = choose(BACKEND_NAMES, name, "backend")
    if name == "gpu":
        from hogwild.backends.gpu import GpuBackend
        return GpuBackend
    if name == "ray":
        from hogwild.backends.ray import RayBackend
        return RayBackend
    return BACKENDS[name]
