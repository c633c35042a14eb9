"""Example: a minimum cut between two terminals of a graph by Hogwild! SGD on the
multiway-cut relaxation, checked against the exact minimum cut (maximum flow).

    python scripts/examples/graph_cut.py                       # snap-facebook-combined
    python scripts/examples/graph_cut.py --data random:2000x10000

--data is a graph name of `hogwild datasets`, random:VERTICESxEDGES, a DIMACS
(.col) file or an edge list ('u v [weight]' lines).
"""
import argparse

from hogwild.datasets.registry import load_graph
from hogwild.problems.graph_cuts import (exact_two_label_cut, multiway_cut,
                                         random_terminals)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="snap-facebook-combined",
                        help="a graph name, random:VERTICESxEDGES, a .col or edge-list file "
                             "(default: snap-facebook-combined)")
    parser.add_argument("--epochs", type=int, default=200,
                        help="passes over the edges (default: 200)")
    parser.add_argument("--workers", type=int, default=None,
                        help="worker threads (default: every usable core)")
    args = parser.parse_args()

    n, u, v, w, _ = load_graph(args.data)
    terminals = random_terminals(n, 2, per_label=1, seed=0)  # one vertex per label
    print(f"{args.data}: {n:,} vertices, {u.size:,} edges; terminals {terminals}")

    # Each vertex holds a point of the 2-label simplex; SGD over the edges shrinks
    # the relaxed cut, then rounding (the best threshold) gives labels.
    result = multiway_cut(n, u, v, w, terminals, 2, epochs=args.epochs,
                          workers=args.workers, seed=0)
    exact = exact_two_label_cut(n, u, v, w, terminals)
    print(f"rounded cut {result.cut:.6g}, exact minimum cut {exact:.6g} (SciPy maximum "
          f"flow): {'optimal' if result.cut <= exact + 1e-6 else 'above the optimum'}")
    print(f"{result.workers} workers, "
          f"{sum(r.seconds for r in result.history):.2f} s of updates")


if __name__ == "__main__":
    main()
