"""The allreduce cost model on emulated network links, not shared memory.

Each node, of one MPI rank or of --ranks-per-node, runs in its own network
namespace (and UTS namespace, so that Open MPI takes it for a node of its own; the
ranks of a node share its memory), joined to the others by a veth pair to one
bridge; each node's link is shaped both ways (a full-duplex port of a switch):
rate and, on the way out, netem's delay where the kernel has netem, else a token
bucket (tbf) rate alone. mpirun launches one
daemon per namespace through a launch agent (``ip netns exec``), and the ranks
talk over TCP on those links only. The script then runs ``hogwild
allreduce-probe`` there and tears everything down, however it ends.

    sudo python scripts/emulated_links.py --ranks 4 --rate 1gbit --delay 1ms \\
        --out docs/allreduce_1gbit.json --markdown docs/allreduce_1gbit.md \\
        --plot docs/allreduce_1gbit.png
    sudo python scripts/emulated_links.py --ranks 4 --ranks-per-node 2 --rate 100mbit
        # 2 nodes of 2 ranks: the probe measures the hierarchical allreduce too
    sudo python scripts/emulated_links.py --ranks 4 --rate 100mbit --straggler-rate 25mbit
        # the last node on a slower link

With ``--run``, the nodes run a training command instead of the probe (``hogwild
run ... --backend mpi``), and with ``--node-data FOLDER`` each node is a host with
a disk of its own: FOLDER/node0, FOLDER/node1, ... are mounted, each in its own
node's mount namespace alone, at FOLDER/local, so that ``--data FOLDER/local``
names the same path on every host and each reads the part files its host holds:

    sudo python scripts/emulated_links.py --ranks 4 --ranks-per-node 2 \\
        --node-data /tmp/shards --run run svm --data /tmp/shards/local \\
        --test test.svm --epochs 3 --json

Root only (namespaces and traffic control); elsewhere it prints why it cannot run
and exits with status 77 ("skipped").
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

SUBNET = "10.77.0"
SKIPPED = 77
QUEUE = "100ms"  # a link's queue, at its rate: 10 ms lost packets when several ranks sent
# to one at once (the summation servers), and TCP's 200 ms retransmission timeout
# stalled the transfer; beyond the tbf bucket, no other queueing discipline (no
# netem, fq_codel or prio) is in this kernel
EAGER = str(8 << 20)  # bytes: Open MPI's TCP messages up to this size need no rendezvous


def sh(*command, check=True):
    return subprocess.run(command, capture_output=True, text=True, check=check)


def why_not():
    """Why this machine cannot emulate the links (None: it can)."""
    if os.geteuid() != 0:
        return "network namespaces and traffic control need root"
    for tool in ("ip", "tc", "unshare"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (iproute2, util-linux)"
    probe = "hwprobe"
    if sh("ip", "netns", "add", probe, check=False).returncode:
        return "this kernel or container does not allow network namespaces"
    sh("ip", "netns", "del", probe, check=False)
    return None


def has_netem():
    """Whether the kernel has the netem queueing discipline (delay)."""
    sh("ip", "link", "add", "hwq0", "type", "veth", "peer", "name", "hwq1", check=False)
    found = sh("tc", "qdisc", "add", "dev", "hwq0", "root", "netem", "delay", "1ms",
               check=False).returncode == 0
    sh("ip", "link", "del", "hwq0", check=False)
    return found


class Links:
    """N namespaces hw-0..hw-N-1 on one bridge (in namespace hw-hub), and this
    namespace on it too (mpirun's daemons call home over it); ``rates``: each
    namespace's link rate."""

    def __init__(self, rates, delay, netem):
        self.ranks, self.rates, self.delay, self.netem = len(rates), rates, delay, netem

    def __enter__(self):
        try:
            sh("ip", "netns", "add", "hw-hub")
            sh("ip", "-n", "hw-hub", "link", "add", "br0", "type", "bridge")
            sh("ip", "-n", "hw-hub", "link", "set", "br0", "up")
            for rank in range(self.ranks):
                name = f"hw-{rank}"
                sh("ip", "netns", "add", name)
                self._join(f"hw{rank}", name, f"{SUBNET}.{rank + 1}")
                sh("ip", "-n", name, "link", "set", "lo", "up")
                rate = self.rates[rank]
                self._shape(name, f"hw{rank}", rate, delay=True)  # the rank's way out
                self._shape("hw-hub", f"hw{rank}-br", rate, delay=False)  # its way in
            self._join("hwroot", None, f"{SUBNET}.254")
        except BaseException:
            self.__exit__()
            raise
        return self

    def _join(self, device, namespace, address):
        sh("ip", "link", "add", device, "type", "veth", "peer", "name", f"{device}-br")
        sh("ip", "link", "set", f"{device}-br", "netns", "hw-hub")
        sh("ip", "-n", "hw-hub", "link", "set", f"{device}-br", "master", "br0")
        sh("ip", "-n", "hw-hub", "link", "set", f"{device}-br", "up")
        where = ["ip"] if namespace is None else ["ip", "-n", namespace]
        if namespace is not None:
            sh("ip", "link", "set", device, "netns", namespace)
        sh(*where, "addr", "add", f"{address}/24", "dev", device)
        sh(*where, "link", "set", device, "up")

    def _shape(self, namespace, device, rate, delay):
        """The traffic leaving ``device``: the rate, and the delay where ``delay``
        and the kernel has netem; else rate alone (tbf, with a bucket of 20 us at
        the rate, at least 16 KB: a larger one lets the first bytes of every message
        through at the veth's own speed, which makes messages up to its size look
        cheaper than the rate; QUEUE of waiting). Both ends of a rank's veth are shaped, as a
        full-duplex link to a switch is: several ranks sending to one at once
        share its incoming rate."""
        if self.netem and delay:
            qdisc = ["netem", "delay", self.delay, "rate", rate, "limit", "100000"]
        else:
            burst = max(16_000, rate_bits(rate) // 8 // 50_000)
            qdisc = ["tbf", "rate", rate, "burst", str(burst), "latency", QUEUE]
        sh("ip", "netns", "exec", namespace, "tc", "qdisc", "add", "dev", device, "root",
           *qdisc)

    def __exit__(self, *exc):
        for rank in range(self.ranks):
            sh("ip", "netns", "del", f"hw-{rank}", check=False)
        sh("ip", "link", "del", "hwroot", check=False)
        sh("ip", "netns", "del", "hw-hub", check=False)


def rate_bits(text, option="--rate"):
    """Bits per second of a tc rate such as 1gbit, 100mbit."""
    units = {"gbit": 10**9, "mbit": 10**6, "kbit": 10**3, "bit": 1}
    for unit, scale in units.items():
        if text.lower().endswith(unit):
            return int(float(text[:-len(unit)]) * scale)
    raise SystemExit(f"{option} {text!r}: expected e.g. 10gbit, 1gbit, 100mbit")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--ranks-per-node", type=int, default=1,
                        help="ranks in each emulated node, sharing its memory (default 1)")
    parser.add_argument("--summation-servers", type=int, default=0, metavar="K",
                        help="K more nodes of one rank each that only add (BytePS's summation "
                             "service, measured beside the others; default 0)")
    parser.add_argument("--rate", default="1gbit", help="each rank's link rate (tc units)")
    parser.add_argument("--straggler-rate", metavar="RATE",
                        help="the last node's link rate instead (a straggler link; tc units)")
    parser.add_argument("--delay", default="1ms",
                        help="each rank's added one-way delay (needs netem)")
    parser.add_argument("--max-size", default="256MiB")
    parser.add_argument("--budget", default="0.5")
    parser.add_argument("--out")
    parser.add_argument("--markdown")
    parser.add_argument("--plot")
    parser.add_argument("--node-data", metavar="FOLDER",
                        help="FOLDER/nodeK mounted at FOLDER/local on node K alone (a disk "
                             "of each host's own)")
    parser.add_argument("--run", nargs=argparse.REMAINDER, metavar="ARGS",
                        help="run 'hogwild ARGS --backend mpi' on the nodes instead of the "
                             "probe (the rest of the command line)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))  # tear down
    reason = why_not()
    if reason is not None:
        print(f"skipped: {reason}", file=sys.stderr)
        return SKIPPED
    netem = has_netem()
    label = (f"emulated links: {args.rate}, {args.delay} delay (netem)" if netem else
             f"emulated links: {args.rate} (tbf); no added delay: this kernel has no netem")
    mpirun = shutil.which("mpirun", path=os.pathsep.join([os.path.dirname(sys.executable),
                                                          os.environ.get("PATH", "")]))
    if mpirun is None:
        print("skipped: mpirun not found (pip install 'hogwild[mpi]')", file=sys.stderr)
        return SKIPPED
    if args.ranks_per_node < 1 or args.ranks % args.ranks_per_node:
        raise SystemExit(f"--ranks {args.ranks} is not a multiple of --ranks-per-node "
                         f"{args.ranks_per_node}")
    nodes = args.ranks // args.ranks_per_node
    spare = args.summation_servers
    rates = [args.rate] * (nodes + spare)
    if args.straggler_rate:
        rate_bits(args.straggler_rate, "--straggler-rate")  # (checked)
        rates[nodes - 1] = args.straggler_rate  # the last node that trains
        label += f"; node {nodes - 1}'s link {args.straggler_rate}"
    with tempfile.TemporaryDirectory() as scratch, \
            Links(rates, args.delay, netem):
        agent = Path(scratch) / "agent.sh"  # "ssh HOST COMMAND" into a namespace
        mount = ""
        if args.node_data:
            folder = Path(args.node_data).resolve()
            missing = [f"node{k}" for k in range(nodes) if not (folder / f"node{k}").is_dir()]
            if missing:
                raise SystemExit(f"--node-data {folder}: no folder {missing[0]} in it")
            (folder / "local").mkdir(exist_ok=True)
            mount = f'mount --bind {folder}/node${{host#hw-}} {folder}/local; '
        agent.write_text('#!/bin/sh\nhost="$1"; shift\n'
                         f'exec ip netns exec "$host" unshare --uts --mount sh -c '
                         f'"hostname $host; {mount}$*"\n')
        agent.chmod(0o700)
        hosts = Path(scratch) / "hosts"
        hosts.write_text("".join(f"hw-{r} slots={args.ranks_per_node if r < nodes else 1}\n"
                                 for r in range(nodes + spare)))
        # every daemon sees all of this machine's cores as its node's: binding would put
        # every rank on core 0, where busy-polling ranks take turns in 4 ms time slices
        command = [mpirun, "--allow-run-as-root", "-n", str(args.ranks + spare), "--bind-to",
                   "none",
                   "--hostfile", str(hosts), "--prtemca", "plm_ssh_agent", str(agent),
                   "--prtemca",
                   "oob_tcp_if_include", f"{SUBNET}.0/24", "--mca", "pml", "ob1", "--mca",
                   "btl", "tcp,self" + (",sm" if args.ranks_per_node > 1 else ""),
                   "--mca", "btl_tcp_if_include", f"{SUBNET}.0/24",
                   # an exchange (data both ways at once) took twice its time in some runs:
                   # a rendezvous message's acknowledgement waited behind the data going
                   # the other way on the pair's one connection; messages up to EAGER go
                   # without one, larger ones have two connections
                   "--mca", "btl_tcp_links", "2", "--mca", "btl_tcp_eager_limit", EAGER,
                   "--mca", "btl_tcp_rndv_eager_limit", EAGER,
                   "--mca", "btl_tcp_max_send_size", EAGER,
                   *(["--mca", "mpi_yield_when_idle", "1"]
                     if args.ranks + spare > os.cpu_count() else []),
                   *(["-x", "PYTHONPATH"] if "PYTHONPATH" in os.environ else []),
                   *[arg for name in os.environ if name.startswith("HOGWILD_")
                     for arg in ("-x", name)],
                   "-x", "PATH", sys.executable, "-m", "hogwild.cli"]
        if args.run:
            command += [*args.run, "--backend", "mpi"]
            return subprocess.run(command).returncode
        command += ["allreduce-probe", "--max-size", args.max_size, "--budget", args.budget,
                    "--summation-servers", str(spare), "--label", label]
        for option in ("out", "markdown", "plot"):
            value = getattr(args, option)
            if value:  # paths made absolute for the probe's folder; --plot none stays none
                command += [f"--{option}", value if value == "none" and option == "plot"
                            else str(Path(value).resolve())]
        return subprocess.run(command, cwd=Path(__file__).resolve().parent.parent).returncode


if __name__ == "__main__":
    sys.exit(main())
