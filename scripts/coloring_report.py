"""Colouring quality and time on the real graphs of the shared data folder: the
DIMACS instances (colours used by each algorithm against the known chromatic
number or bounds) and the SNAP graphs. Prints one JSON document (also --out).

    python scripts/coloring_report.py [--out report.json] [--markdown report.md]
"""
import argparse
import csv
import sys
import time

from hogwild.schedulers.coloring import ALGORITHMS, color_graph
from hogwild.datasets.graphs import read_dimacs, read_edge_list
from hogwild.bench.machine import describe_machine, publish
from hogwild.paths import shared_data_dir

SNAP = (("snap-facebook-combined", "facebook_combined.txt"), ("snap-ca-GrQc", "CA-GrQc.txt"),
        ("snap-email-Enron", "Email-Enron.txt.gz"))


def measure(graph):
    color_graph(graph, "natural")  # compile (or load) the kernels outside the timing
    out = {}
    for algorithm in ALGORITHMS:
        start = time.perf_counter()
        colors = color_graph(graph, algorithm)
        out[algorithm] = {"colors": int(colors.max()) + 1 if colors.size else 0,
                          "seconds": time.perf_counter() - start}
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="also write the JSON document to this file")
    parser.add_argument("--markdown", help="also write a Markdown table here")
    args = parser.parse_args(argv)
    folder = shared_data_dir() / "dimacs-coloring"
    report = {"benchmark": "coloring_report", "machine": describe_machine(), "dimacs": [],
              "snap": []}
    if (folder / "chromatic_numbers.csv").exists():
        with open(folder / "chromatic_numbers.csv") as f:
            rows = list(csv.DictReader(f))
        for row in rows:
            graph = read_dimacs(folder / f"{row['instance']}.col.gz")
            report["dimacs"].append({
                "instance": row["instance"], "vertices": graph.n_vertices,
                "edges": graph.n_edges, "chi": int(row["chi"]) if row["chi"] else None,
                "lower_bound": int(row["lower_bound"]) if row["lower_bound"] else None,
                "upper_bound": int(row["upper_bound"]) if row["upper_bound"] else None,
                "results": measure(graph)})
    else:
        print(f"{folder}: not found, DIMACS instances skipped", file=sys.stderr)
    for name, file in SNAP:
        path = shared_data_dir() / name / file
        if path.exists():
            graph, _ = read_edge_list(path)
            report["snap"].append({"graph": name, "vertices": graph.n_vertices,
                                   "edges": graph.n_edges, "results": measure(graph)})
    publish(report, markdown, args.out, args.markdown)


def markdown(report):
    lines = ["| graph | vertices | edges | known | " + " | ".join(ALGORITHMS) + " |",
             "|---|---:|---:|---:|" + "---:|" * len(ALGORITHMS)]
    for entry in report["dimacs"] + report["snap"]:
        if entry.get("chi"):
            known = str(entry["chi"])
        elif entry.get("lower_bound"):
            known = f"{entry['lower_bound']}-{entry['upper_bound']}"
        else:
            known = "-"
        cells = [f"{entry['results'][a]['colors']} ({1e3 * entry['results'][a]['seconds']:.1f} ms)"
                 for a in ALGORITHMS]
        lines.append(f"| {entry.get('instance', entry.get('graph'))} | {entry['vertices']:,} | "
                     f"{entry['edges']:,} | {known} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
