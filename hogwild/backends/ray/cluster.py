"""Ray itself: importing it, starting a private local instance, joining a
cluster with token authentication, and sending a user's code by value."""
import os
import re
import secrets
import select
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



SOCKET_PATH_BYTES = 107  # AF_UNIX's limit on Linux
SESSION_SOCKET_CHARS = 65  # what Ray adds: /session_DATE_TIME_PID/sockets/plasma_store
START_SECONDS = 120  # for the local instance to come up


def instance_folder():
    """A new private folder (mode 0700) for a local instance's files: in TMPDIR,
    or in /tmp where TMPDIR's path leaves Ray's socket paths too long (Ray puts
    them under the folder, and a Unix socket's path has at most 107 bytes)."""
    longest = SOCKET_PATH_BYTES - SESSION_SOCKET_CHARS - len("/hogwild-ray-12345678")
    places = [tempfile.gettempdir(), "/tmp"]
    for place in places:
        if len(os.fsencode(os.path.abspath(place))) <= longest:
            try:
                return tempfile.mkdtemp(prefix="hogwild-ray-", dir=place)
            except OSError:
                continue
    raise HogwildError(f"a local Ray instance needs a writable temporary folder whose path "
                       f"has at most {longest} bytes (Ray's socket paths under it are limited "
                       f"to {SOCKET_PATH_BYTES}): TMPDIR={tempfile.gettempdir()} is too long "
                       "and /tmp is not writable; set TMPDIR to a shorter writable folder")


class LocalRay:
    """A new Ray instance of this machine alone, owned by a host process of its own
    (hogwild.backends.ray.host: its own session, so a signal to the driver's
    process group never reaches Ray's services, and it removes every process and
    file of the instance when the driver closes it or dies). Every service listens
    on the loopback interface; RAY_ADDRESS or an instance already running here is
    never joined; its files are private, in a folder of this user's alone (Ray makes
    its session folders mode 0777, and its default /tmp/ray is every user's); its
    authentication token is this process's own, given in the environment, so
    nothing is written to ~/.ray."""

    def __init__(self, ray, num_cpus):
        self.ray, self.folder = ray, instance_folder()
        self.restore = {name: os.environ.get(name) for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN")}
        if os.environ.get("RAY_AUTH_MODE", "").lower() != "disabled":
            os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=_TOKEN)
            _reload_auth_settings()
        log = open(os.path.join(self.folder, "host.log"), "wb")
        with log:
            self.host = subprocess.Popen(
                [sys.executable, "-m", "hogwild.backends.ray.host", self.folder, str(num_cpus)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                start_new_session=True)
        try:
            address = self._address()
            loopback_only = ray_constants().ENABLE_RAY_CLUSTER
            ray_constants().ENABLE_RAY_CLUSTER = False  # the driver's services on 127.0.0.1 too
            try:
                ray.init(address=address, include_dashboard=False, log_to_driver=False)
            finally:
                ray_constants().ENABLE_RAY_CLUSTER = loopback_only
        except BaseException:
            self.close()
            raise
        _errors_to_stderr(ray)

    def _address(self):
        """The instance's address, once the host says it is up; or the host's
        last line as a HogwildError."""
        ready = select.select([self.host.stdout], [], [], START_SECONDS)[0]
        line = self.host.stdout.readline().decode(errors="replace").strip() if ready else ""
        self.host.stdout.close()
        if line:
            return line
        if self.host.poll() is None:
            raise HogwildError(f"a local Ray instance did not start within {START_SECONDS} s")
        self.host.wait()
        said = [text for text in Path(self.folder, "host.log").read_text(
            errors="replace").splitlines() if text.strip()]
        raise HogwildError("could not start a local Ray instance: " + (
            said[-1] if said else f"exit status {self.host.returncode}"))

    def close(self):
        """Disconnect, and wait until the host has removed the instance."""
        if self.ray.is_initialized():
            self.ray.shutdown()
        if self.host.stdin:
            self.host.stdin.close()
        try:
            self.host.wait(timeout=START_SECONDS)
        except subprocess.TimeoutExpired:
            self.host.kill()
            self.host.wait()
        shutil.rmtree(self.folder, ignore_errors=True)
        for name, value in self.restore.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        _reload_auth_settings()


_TOKEN = secrets.token_hex(32)  # this process's local instances' (one: Ray caches it)


def _reload_auth_settings():
    """Make this process's Ray read RAY_AUTH_MODE and the token again (it reads
    them once, when first asked)."""
    from ray._raylet import AuthenticationTokenLoader, Config

    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


def ray_constants():
    from ray._private import ray_constants

    return ray_constants


def _errors_to_stderr(ray):
    """Ray's driver prints the errors its raylet reports ('A worker died or was
    killed ...') on stdout, where hogwild's output (--json) goes: on stderr
    instead, beside hogwild's own line on what it did about it."""
    worker = ray._private.worker
    printing = worker.print_to_stdstream
    if getattr(printing, "to_stderr", False):
        return

    def print_to_stderr(data, ignore_prefix):
        printing({**data, "is_err": True}, ignore_prefix)

    print_to_stderr.to_stderr = True
    worker.print_to_stdstream = print_to_stderr


def start_local_ray(ray, num_cpus):
    """A private local Ray instance with ``num_cpus`` CPUs, joined by this process
    (see LocalRay); close() it to stop it (it stops when this process ends anyway)."""
    return LocalRay(ray, num_cpus)


def ray_token_path():
    """Where Ray keeps its authentication token unless told otherwise."""
    return Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray" / "auth_token")


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

