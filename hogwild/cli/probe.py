"""``hogwild allreduce-probe``: the alpha-beta-gamma model of each Open MPI allreduce
algorithm against the algorithm's measured time, on this job's links, for message
sizes from 1 KiB to 256 MiB (run as an MPI job: ``--ranks N``, or under mpirun);
beside them, priced only, the GPU collectives no CPU engine runs
(hogwild.cluster_costs)."""
import json
import re
import sys

import numpy as np

from hogwild.atomic import atomic_file
from hogwild.cluster_costs import (blink, double_binary_tree, pack_spanning_trees,
                                   summation_service)
from hogwild.collectives import ALGORITHMS, LinkCosts, choose
from hogwild.cli.values import integer, number
from hogwild.errors import HogwildError
from hogwild.limits import available_memory

CLOSE = 2.0   # the model's prediction within this factor of the measured time
NEAR = 1.2    # the model's choice within this factor of the fastest measured
CHECKED_FROM = 1 << 16  # bytes: the sizes the two figures above are judged from
DEFAULT_PLOT = "hogwild-allreduce-probe.png"
PRICED_UP_TO = 16  # ranks: Blink's tree packing (a linear programme) beyond this is slow
NOT_RUN = "not run: GPU collectives"
MAX_SIZE = 1 << 32  # bytes: the largest message the probe sends (an int32 count of float32)
_UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "k": 1 << 10,
          "m": 1 << 20, "g": 1 << 30}


def parse_size(text):
    """Bytes from '4096', '64KiB', '256MiB' (binary units; 'K', 'M', 'G' too)."""
    found = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(text))
    if not found or found.group(2).lower() not in _UNITS or int(found.group(1)) < 1:
        raise HogwildError(f"size {text!r}: expected a positive number of bytes, such as "
                           "4096, 64KiB or 256MiB")
    return int(found.group(1)) * _UNITS[found.group(2).lower()]


def add_arguments(parser):
    parser.add_argument("--ranks", type=integer, default=None,
                        help="run as an MPI job of this many ranks on this machine (launches "
                             "mpirun); under mpirun, leave it out")
    parser.add_argument("--oversubscribe", action="store_true",
                        help="with --ranks: allow more than 4 ranks per usable core")
    parser.add_argument("--min-size", default="1KiB", help="smallest message (default 1KiB)")
    parser.add_argument("--max-size", default="256MiB",
                        help="largest message (default 256MiB; sizes go up by 4x)")
    parser.add_argument("--budget", type=number, default=0.25,
                        help="seconds of repeats per algorithm and size, by the model's "
                             "prediction (default 0.25; at least 2 repeats)")
    parser.add_argument("--summation-servers", type=integer, default=0, metavar="K",
                        help="the job's last K ranks only add: BytePS's summation service, "
                             "measured beside the others, which run on the remaining ranks "
                             "(the workers; K at most as many; default 0)")
    parser.add_argument("--out", help="write the JSON report here")
    parser.add_argument("--markdown", help="write the table as Markdown here")
    parser.add_argument("--plot", default=DEFAULT_PLOT,
                        help=f"write the plot (PNG; needs matplotlib) here (default: "
                             f"{DEFAULT_PLOT}; 'none': no plot)")
    parser.add_argument("--label", default="", help="a name for the links, in the report")
    parser.add_argument("--json", action="store_true", help="print the JSON report")


def run_probe(args):
    """Every rank measures; rank 0 prints and writes the report."""
    from hogwild.backends.mpi import (HierarchicalReducer, Nodes, SitOut, SummationService,
                                      import_mpi, measure_link, probe_sizes, time_algorithms)
    from hogwild.bench.machine import progress_bar

    smallest, largest = parse_size(args.min_size), parse_size(args.max_size)
    if smallest > largest:
        raise HogwildError(f"--min-size {args.min_size} is larger than --max-size "
                           f"{args.max_size}")
    if largest > MAX_SIZE:
        raise HogwildError(f"--max-size {args.max_size}: the probe sends messages of at most "
                           f"{_size_text(MAX_SIZE)}")
    if not (0 < args.budget < 3600):
        raise HogwildError(f"--budget must be seconds in (0, 3600), got {args.budget}")
    MPI = import_mpi()
    comm = MPI.COMM_WORLD
    ranks = comm.Get_size()
    if ranks < 2:
        raise HogwildError("the allreduce probe needs at least 2 ranks: --ranks N, or run it "
                           "under mpirun -n N")
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    needed = 3 * largest * node.Get_size()  # a vector, MPI's buffers, the next size's
    node.Free()
    memory = available_memory()
    if memory is not None and needed > memory:  # every rank has the same figures
        raise HogwildError(f"--max-size {args.max_size}: messages that large need about "
                           f"{needed / 2**30:.1f} GiB on this machine, which has "
                           f"{memory / 2**30:.1f} GiB available")
    sizes = probe_sizes(smallest, largest)
    servers = args.summation_servers
    if not 0 <= servers <= min(ranks // 2, ranks - 2):
        raise HogwildError(f"--summation-servers {servers}: at most half of the job's {ranks} "
                           "ranks can serve (BytePS gains nothing from more servers than "
                           "workers), and at least 2 must be workers")
    rank = comm.Get_rank()
    workers = comm.Split(0 if rank < ranks - servers else MPI.UNDEFINED, key=rank)
    serving = workers == MPI.COMM_NULL
    others, by_node, flat, costs, nodes = {}, None, None, None, None
    try:
        if not serving:
            nodes = Nodes.of(MPI, workers)
            costs = measure_link(MPI, workers, partner=nodes.partner)
        if comm.bcast(None if serving else len(nodes.sizes) > 1 and (nodes.uniform or 1) > 1,
                      root=0):  # a network between the workers' nodes, ranks to gather
            if serving:
                others["hierarchical"] = (SitOut(), None)
            else:
                by_node = nodes.links(MPI, workers)
                flat = lambda n: nodes.choose(n, *by_node, costs)  # noqa: E731 - a price per size
                others["hierarchical"] = (
                    HierarchicalReducer(MPI, nodes, lambda n: nodes.predict(n, *by_node)[1]),
                    lambda n: nodes.predict(n, *by_node)[0])
        if servers:
            others["summation_service"] = (SummationService(MPI, comm, servers), lambda n: (
                summation_service(ranks - servers, servers, n, costs)))
        bar = progress_bar(len(sizes), "size", rank == 0 and not args.json)
        measured = time_algorithms(MPI, comm, sizes, costs, args.budget,
                                   progress=bar.update if bar else None, others=others,
                                   workers=workers)
        if bar:
            bar.close()
    finally:
        for reducer, _ in others.values():
            reducer.Free()  # the hierarchical one frees the nodes' communicators
        if nodes is not None and "hierarchical" not in others:
            nodes.free(MPI)
        if not serving:
            workers.Free()
    if rank != 0:
        return
    report = build_report(ranks - servers, sizes, costs, measured, args.label,
                          MPI.Get_library_version().split(",")[0].strip(),
                          {name: price for name, (_, price) in others.items()}, nodes.sizes,
                          by_node, flat, servers)
    text = json.dumps(report)
    if args.out:
        with atomic_file(args.out, "w") as out:
            out.write(text + "\n")
    if args.markdown:
        with atomic_file(args.markdown, "w") as out:
            out.write(markdown(report))
    if args.plot != "none":
        try:
            plot(report, args.plot)
        except HogwildError as missing:
            if args.plot != DEFAULT_PLOT:
                raise
            print(f"hogwild: warning: no plot: {missing}", file=sys.stderr)
    print(text if args.json else markdown(report), end="\n" if args.json else "")


def priced_only(ranks, costs):
    """{name: seconds of an allreduce of n bytes} of the GPU collectives on this
    job's link, never run: NCCL's double binary trees, and Blink over every pair of
    ranks linked at the pairwise-exchange rate (its trees packed once, up to
    PRICED_UP_TO ranks, where that rate was measured)."""
    affine = costs if isinstance(costs, LinkCosts) else costs.affine()
    prices = {"double_binary_tree": lambda n: double_binary_tree(ranks, n, costs)[0]}
    per_byte = affine.exchange_round(1) - affine.alpha
    if ranks <= PRICED_UP_TO and per_byte > 0:  # (a link measured as free has no rate)
        rate = 1 / per_byte
        packing = pack_spanning_trees(rate * (np.ones((ranks, ranks)) - np.eye(ranks)))
        prices["blink"] = lambda n: blink(packing, n, affine.alpha, affine.gamma)
    return prices


def build_report(ranks, sizes, costs, measured, label="", library="", others=None,
                 nodes=None, by_node=None, flat=None, servers=0):
    """Per size: each algorithm's predicted and measured seconds (Open MPI's, by
    ``flat``, a function of the bytes giving collectives.choose's answer, by default
    on ``costs``; and ``others``, {name: its predicted seconds for n bytes}: the
    hierarchical allreduce across ``nodes``, the ranks of each, on the links
    ``by_node``), the model's choice and the measured fastest, and the priced-only
    collectives; the two verdicts from CHECKED_FROM bytes up. ``ranks``: the
    workers; ``servers`` more ranks served in the summation service (and each
    row says how many of them, 0 to all, the model would use)."""
    rows = []
    prices = priced_only(ranks, costs)
    others = others or {}
    for size in sizes:
        nbytes = max(size // 4, 1) * 4
        _, predicted = (flat or (lambda n: choose(ranks, n, costs)))(nbytes)
        predicted.update({name: price(nbytes) for name, price in others.items()})
        choice = min(predicted, key=predicted.get)
        times = {name: measured[name][size] for name in predicted}
        fastest = min(times, key=times.get)
        rows.append({"bytes": size, "predicted": predicted, "measured": times,
                     "priced_only": {name: price(max(size // 4, 1) * 4)
                                     for name, price in prices.items()},
                     "model_choice": choice, "fastest": fastest,
                     "choice_over_fastest": times[choice] / times[fastest],
                     "worst_prediction_ratio": max(max(predicted[n] / times[n],
                                                       times[n] / predicted[n])
                                                   for n in predicted)})
        if servers:  # how many of the spare ranks the model would have serve
            rows[-1]["summation_servers_by_model"] = min(
                range(servers + 1), key=lambda k: summation_service(ranks, k, nbytes, costs))
    checked = [row for row in rows if row["bytes"] >= CHECKED_FROM]
    by_node_report = {} if by_node is None else {
        "ranks_per_node": list(nodes), **{key: link.figures() for key, link in zip(
            ("link_inside_node", "link_between_nodes"), by_node) if link is not None}}
    return {"ranks": ranks, "summation_servers": servers, "label": label, "library": library,
            **by_node_report,
            "link": costs.figures(), "priced_only_note": NOT_RUN + (
                "" if "blink" in prices else f"; Blink priced up to {PRICED_UP_TO} ranks, "
                "on a link with a measured rate"),
            "rows": rows,
            "checked_from_bytes": CHECKED_FROM,
            "predictions_within_2x": all(r["worst_prediction_ratio"] <= CLOSE for r in checked),
            "choices_within_20_percent": all(r["choice_over_fastest"] <= NEAR for r in checked),
            "choice_matched_fastest": sum(r["model_choice"] == r["fastest"] for r in checked),
            "sizes_checked": len(checked)}


def _size_text(size):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def _time_text(seconds):
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


def markdown(report):
    """The report as a Markdown table: measured (predicted) time per algorithm."""
    link = report["link"]
    lines = [f"Allreduce probe{' on ' + report['label'] if report['label'] else ''}: "
             f"{report['ranks']} ranks"
             + (f" and {report['summation_servers']} summation servers (ranks that only add)"
                if report.get("summation_servers") else "")
             + f", {report['library']}. Link: alpha "
             f"{_time_text(link['alpha_s'])}, bandwidth "
             f"{1 / max(link['beta_s_per_byte'], 1e-30) / 1e9:.2f} GB/s one way, "
             f"{1 / max(link['beta_exchange_s_per_byte'], 1e-30) / 1e9:.2f} GB/s in pairwise "
             f"exchanges, {1 / max(link['beta_ring_s_per_byte'], 1e-30) / 1e9:.2f} GB/s in "
             "ring steps, reduction "
             f"{1 / max(link['gamma_s_per_byte'], 1e-30) / 1e9:.2f} GB/s; the slowest rank's "
             f"message to rank 0: {link.get('slowest_message_factor', 1.0):.2f}x the "
             "probe partner's.", ""]
    if "ranks_per_node" in report:
        inside = report.get("link_inside_node")
        between = report["link_between_nodes"]
        lines += [f"Nodes: {len(report['ranks_per_node'])} of {report['ranks_per_node'][0]} "
                  "ranks; the hierarchical allreduce's links: "
                  + (f"inside a node {1 / max(inside['beta_ring_s_per_byte'], 1e-30) / 1e9:.2f} "
                     "GB/s in ring steps, " if inside else "")
                  + f"between nodes {1 / max(between['beta_ring_s_per_byte'], 1e-30) / 1e9:.2f}"
                  " GB/s in ring steps.", ""]
    if "bytes" in link:
        lines += ["The start-up probe's times, which the model interpolates:", "",
                  "| size | message | exchange round | ring step |", "|---|---|---|---|"]
        lines += [f"| {_size_text(size)} | {_time_text(one)} | {_time_text(pair)} | "
                  f"{_time_text(step)} |" for size, one, pair, step in
                  zip(link["bytes"], link["message_s"], link["exchange_round_s"],
                      link["ring_step_s"])]
        lines.append("")
    priced = list(report["rows"][0]["priced_only"]) if report["rows"] else []
    algorithms = list(report["rows"][0]["measured"]) if report["rows"] else list(ALGORITHMS)
    lines += ["Each cell: measured (predicted). **Bold**: the model's choice; * the fastest. "
              f"Priced only ({report['priced_only_note']}): "
              + ", ".join(name.replace("_", " ") for name in priced) + ".",
              "", "| " + " | ".join(["size", *algorithms, "choice / fastest"]
                                     + [f"{name.replace('_', ' ')} (priced)" for name in priced])
              + " |",
              "|---" * (len(algorithms) + 2 + len(priced)) + "|"]
    for row in report["rows"]:
        cells = []
        for name in algorithms:
            cell = (f"{_time_text(row['measured'][name])} "
                    f"({_time_text(row['predicted'][name])})")
            cell = f"**{cell}**" if name == row["model_choice"] else cell
            cells.append(cell + (" *" if name == row["fastest"] else ""))
        lines.append("| " + " | ".join([_size_text(row["bytes"]), *cells,
                                         f"{row['choice_over_fastest']:.2f}"]
                                        + [f"({_time_text(row['priced_only'][name])})"
                                           for name in priced]) + " |")
    checked = report["sizes_checked"]
    lines += ["", f"From {_size_text(report['checked_from_bytes'])} up ({checked} sizes): "
              f"every prediction within {CLOSE:g}x of the measured time: "
              f"{'yes' if report['predictions_within_2x'] else 'no'}; the model's choice "
              f"within {NEAR - 1:.0%} of the fastest: "
              f"{'yes' if report['choices_within_20_percent'] else 'no'}; the choice was the "
              f"fastest at {report['choice_matched_fastest']} of {checked} sizes.", ""]
    return "\n".join(lines)


def plot(report, path):
    """Measured (solid) and predicted (dashed) time against size, per algorithm."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise HogwildError("--plot needs matplotlib: pip install 'hogwild[plots]'") from None
    sizes = [row["bytes"] for row in report["rows"]]
    figure, axes = plt.subplots(figsize=(8, 5.5))
    for k, name in enumerate(report["rows"][0]["measured"] if report["rows"] else ()):
        colour = f"C{k}"
        axes.plot(sizes, [row["measured"][name] for row in report["rows"]], "o-",
                  color=colour, label=f"{name} (measured)")
        axes.plot(sizes, [row["predicted"][name] for row in report["rows"]], "--",
                  color=colour, alpha=0.7)
    chosen = [row["measured"][row["model_choice"]] for row in report["rows"]]
    axes.plot(sizes, chosen, "k*", markersize=11, label="the model's choice")
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xlabel("message (bytes)")
    axes.set_ylabel("seconds per allreduce (dashed: predicted)")
    axes.set_title(f"Open MPI allreduce, {report['ranks']} ranks"
                   + (f", {report['label']}" if report["label"] else ""))
    axes.legend(fontsize=8)
    axes.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
