"""Ray itself: importing it, starting a private local instance, joining a
cluster with token authentication, and sending a user's code by value."""
import atexit
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from hogwild.errors import HogwildError

def import_ray():
    try:
        import ray
    except ImportError:
        raise HogwildError("backend 'ray' needs Ray: pip install 'hogwild[distributed]'") \
            from None
    return ray



def start_local_ray(ray, num_cpus):
    """A new Ray instance of this machine alone: every service bound to the
    loopback interface, never RAY_ADDRESS's or an already running cluster
    (address="local"), its files created private (umask 077: the token file
    ~/.ray/auth_token grants access to the instance) in a folder of this user's
    alone (Ray makes its session folders mode 0777, and its default /tmp/ray is
    shared by every user without the sticky bit), removed when this process ends."""
    from ray._private import ray_constants

    folder = tempfile.mkdtemp(prefix="hogwild-ray-")  # mode 0700
    atexit.register(shutil.rmtree, folder, True)
    loopback_only = ray_constants.ENABLE_RAY_CLUSTER  # Ray's own switch, off on macOS
    ray_constants.ENABLE_RAY_CLUSTER = False  # and Windows: services on 127.0.0.1
    umask = os.umask(0o077)
    try:
        ray.init(address="local", num_cpus=num_cpus, include_dashboard=False,
                 log_to_driver=False, _temp_dir=folder)
    finally:
        os.umask(umask)
        ray_constants.ENABLE_RAY_CLUSTER = loopback_only
    _make_private(ray_token_path())


def ray_token_path():
    """Where Ray keeps its authentication token unless told otherwise."""
    return Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray" / "auth_token")


def _make_private(path):
    """Mode 0600 for a file of ours that grants access (Ray writes it 0644)."""
    try:
        if path.is_file() and path.stat().st_uid == os.getuid():
            path.chmod(0o600)
    except OSError:
        pass


CONNECT_SECONDS = 10  # to reach a cluster's address before Ray itself tries
JOIN_SECONDS = 60  # for a trial join in a child process (Ray alone may retry for many minutes)


def parse_address(address):
    """(host, port) of a cluster address 'HOST:PORT' or 'ray://HOST:PORT' (an IPv6
    host in brackets), or a HogwildError saying what is expected."""
    found = re.fullmatch(r"(?:ray://)?(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})",
                         str(address).strip())
    if not found or not 1 <= int(found.group(2)) <= 65535:
        raise HogwildError(f"Ray address {address!r}: expected HOST:PORT (the head's address, "
                           "e.g. 10.0.0.5:6379) or ray://HOST:PORT, with a port from 1 to 65535")
    return found.group(1).strip("[]"), int(found.group(2))


def join_cluster(ray, address):
    """Join the cluster at ``address`` (asked for explicitly), with Ray's token
    authentication: a cluster without it runs anyone's code. An address nobody
    answers at fails within CONNECT_SECONDS, and one where something other than
    Ray answers within JOIN_SECONDS: a child process joins first, and is killed
    if it has not joined by then (Ray alone retries for many minutes)."""
    host, port = parse_address(address)
    mode = os.environ.get("RAY_AUTH_MODE", "").lower()
    if mode == "disabled" or not (os.environ.get("RAY_AUTH_TOKEN")
                                  or ray_token_path().is_file()):
        raise HogwildError(f"joining the Ray cluster at {address} needs Ray's token "
                           "authentication: set RAY_AUTH_MODE=token and give the cluster's "
                           "token in RAY_AUTH_TOKEN or ~/.ray/auth_token (see the README)")
    try:
        socket.create_connection((host, port), timeout=CONNECT_SECONDS).close()
    except OSError as error:
        reason = "no answer" if isinstance(error, TimeoutError) else \
            (error.strerror or str(error))
        raise HogwildError(f"cannot reach the Ray cluster at {address} ({reason}, within "
                           f"{CONNECT_SECONDS} s): is Ray running there ('ray start --head')?") \
            from None
    os.environ["RAY_AUTH_MODE"] = "token"
    trial = [sys.executable, "-c", "import sys, ray; ray.init(address=sys.argv[1], "
             "include_dashboard=False, log_to_driver=False, logging_level='error'); "
             "ray.shutdown()", address]
    try:
        joined = subprocess.run(trial, capture_output=True, text=True, timeout=JOIN_SECONDS)
    except subprocess.TimeoutExpired:
        raise HogwildError(f"cannot join the Ray cluster at {address}: something answers there, "
                           f"but no Ray cluster joined within {JOIN_SECONDS} s") from None
    if joined.returncode != 0:
        said = [line for line in joined.stderr.strip().splitlines() if line.strip()]
        raise HogwildError(f"cannot join the Ray cluster at {address}: "
                           f"{said[-1] if said else f'exit status {joined.returncode}'}")
    ray.init(address=address, include_dashboard=False, log_to_driver=False)


def send_by_value(ray, *functions):
    """Send the objective's own code with it: a user's module (a test file, a
    script's sibling) need not be importable on the nodes. The library's modules
    and __main__ (which cloudpickle sends by value anyway) are left alone."""
    for function in functions:
        if function is None:  # an objective without a penalty
            continue
        name = getattr(function, "__module__", None) or "__main__"
        if name != "__main__" and name.split(".")[0] != "hogwild" and name in sys.modules:
            ray.cloudpickle.register_pickle_by_value(sys.modules[name])

