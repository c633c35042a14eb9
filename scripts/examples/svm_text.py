"""Example: a linear SVM on a text collection, its test error, and a plot of test
error against training time.

    python scripts/examples/svm_text.py                      # news20-bydate (shared data)
    python scripts/examples/svm_text.py --data imdb-aclimdb --plot imdb.png

Any dataset name of `hogwild datasets` or an svmlight file works (with --test for
its test split). The plot needs matplotlib (pip install 'hogwild[plots]').
"""
import argparse
import itertools

from hogwild.datasets.outputs import check_script_outputs
from hogwild.datasets.registry import load_svm_data
from hogwild.problems.sparse_svm import SparseSVM


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="news20-bydate",
                        help="a dataset name or an svmlight file (default: news20-bydate)")
    parser.add_argument("--test", help="svmlight test file (default: the dataset's split)")
    parser.add_argument("--epochs", type=int, default=10,
                        help="passes over the samples (default: 10)")
    parser.add_argument("--workers", type=int, default=None,
                        help="worker threads (default: every usable core)")
    parser.add_argument("--plot", default="svm-test-error.png",
                        help="the plot PNG to write (default: svm-test-error.png)")
    args = parser.parse_args()
    check_script_outputs(parser, {"--plot": args.plot},
                         {"--data": args.data, "--test": args.test})

    # Rows are TF-IDF vectors with one label each; the two classes of a binary set.
    train, test = load_svm_data(args.data, args.test)
    print(f"{args.data}: {train.X.shape[0]} training rows, {train.X.shape[1]} features, "
          f"{test.X.shape[0]} test rows")

    # The hinge loss with the default L2 strength and the automatic step; the test
    # error is recorded after every epoch (computed by compiled code, no copy).
    model = SparseSVM(epochs=args.epochs, workers=args.workers, random_state=0)
    model.fit(train.X, train.y, eval_set=(test.X, test.y),
              callback=lambda r: print(f"epoch {r.epoch:2}: test error "
                                       f"{100 * r.metrics['test_error']:.2f}%  "
                                       f"({r.seconds * 1e3:.0f} ms)"))
    print(f"final test error {100 * (1 - model.score(test.X, test.y)):.2f}% "
          f"with {model.workers_} workers")

    # Time to accuracy: the error after each epoch against the update time so far.
    seconds = list(itertools.accumulate(r.seconds for r in model.history_))
    errors = [100 * r.metrics["test_error"] for r in model.history_]
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no plot: matplotlib is not installed (pip install 'hogwild[plots]')")
        return
    figure, axes = plt.subplots(figsize=(5, 3.5))
    axes.plot(seconds, errors, marker="o")
    axes.set(xlabel="update time (s)", ylabel="test error (%)", title=f"SVM on {args.data}")
    figure.tight_layout()
    figure.savefig(args.plot, dpi=100)
    print(f"plot written to {args.plot}")


if __name__ == "__main__":
    main()
