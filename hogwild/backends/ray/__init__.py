"""backend="ray": stale synchronous parallel (SSP) training over several nodes.

Hogwild! inside each node, a parameter server between nodes, and a bound on how
far the fastest node may run ahead of the slowest (Ho et al., "More Effective
Distributed ML via a Stale Synchronous Parallel Parameter Server", NIPS 2013;
Li et al., "Scaling Distributed Machine Learning with the Parameter Server",
OSDI 2014):

- Node actors each own a contiguous share of the samples and a local replica of
  the parameters, and run the local engine (the threads backend: hogwild, locked
  or serial) on it.
- The parameters, flattened into one vector, are split by key range across
  ``shards`` parameter-server actors.
- A node's clock: ``clock_every`` local updates, then push the deltas of the
  coordinates that changed (indices and values, never the dense vector), tick,
  wait until the slowest node is at most ``staleness`` clocks behind, and pull
  the coordinates that changed on the server since its last pull. After the pull
  the replica equals the server's state. (Where most of a shard's range changed,
  a push or pull sends the whole range's values instead: never more bytes than
  a dense exchange.)
- ``staleness=0`` is bulk synchronous: the server applies a clock's pushes in node
  order once all have arrived, so a run with a serial local engine is
  deterministic. ``staleness=None`` is fully asynchronous (Downpour-like).
- A push's staleness tau is the number of other nodes' pushes the shard applied
  since the pushing node's last pull. ``staleness_aware=True`` divides the push's
  deltas by tau where tau > 1, i.e. the step of stale updates (Zhang, Gupta, Lian
  and Liu, "Staleness-aware Async-SGD for Distributed Deep Learning", IJCAI 2016);
  a straggler's pushes are the stalest.
- Failures: a node actor that dies is restarted at its last clock; a server
  shard that dies is made again from the last checkpoint's values for its range
  (RayBackend.checkpointed keeps them), or without one the run stops naming it.

Messages between actors carry numpy arrays and numbers only. The objective's
Python functions travel once, from the driver to the node actors, when they start.

The driver runs hogwild.fit's epoch loop like every backend: RayBackend's epoch
waits for the nodes' epoch (the nodes run ahead within the staleness bound), its
loss sum adds the nodes' losses, and its host copy of the parameters is the
server's state.

Where each part lives: settings.py (SSPSettings), server.py (the parameter
server's shards and the clock table), node.py (a node actor and
ParameterServer, its Reconciler), cluster.py (starting a private local Ray or
joining a cluster), host.py (the process that owns a local instance and removes
it when the driver ends) and backend.py (RayBackend). Nothing here imports Ray on
import: import_ray does, when a run starts.
"""
from hogwild.backends.ray.backend import RayBackend
from hogwild.backends.ray.cluster import import_ray, parse_address, ray_token_path, \
    start_local_ray
from hogwild.backends.ray.host import INSTANCE_VARIABLE
from hogwild.backends.ray.settings import SSPSettings

__all__ = ["INSTANCE_VARIABLE", "RayBackend", "SSPSettings", "import_ray", "parse_address",
           "ray_token_path", "start_local_ray"]
