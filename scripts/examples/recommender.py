"""Example: a recommender from ratings. Train, save the model, load it back and
print a user's top-10 items.

    python scripts/examples/recommender.py                 # MovieLens 100k (shared data)
    python scripts/examples/recommender.py --data ml-1m --user 42

--data is a dataset name (`hogwild datasets`, `hogwild download ml-1m`) or a file of
'user item rating' lines.
"""
import argparse
import os
import tempfile

import numpy as np

from hogwild.datasets.outputs import check_script_outputs
from hogwild.datasets.ratings import split_ratings
from hogwild.datasets.registry import load_ratings
from hogwild.problems.matrix_completion import MatrixFactorization


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="ml-100k",
                        help="a rating dataset name or a 'user item rating' file "
                             "(default: ml-100k)")
    parser.add_argument("--user", type=int, default=None,
                        help="the user id to recommend for (default: the first one)")
    parser.add_argument("--epochs", type=int, default=20,
                        help="passes over the ratings (default: 20)")
    parser.add_argument("--model-file", default=None,
                        help="where to save the model (default: a temporary file, "
                             "removed at the end)")
    args = parser.parse_args()
    check_script_outputs(parser, {"--model-file": args.model_file}, {"--data": args.data})

    # Hold out 20% of the ratings to measure the test RMSE.
    train, test = split_ratings(load_ratings(args.data), 0.2, seed=0)
    model = MatrixFactorization(rank=32, epochs=args.epochs, random_state=0)
    model.fit(train, eval_set=test)
    print(f"{args.data}: {len(train):,} training ratings, test RMSE "
          f"{model.history_[-1].metrics['test_rmse']:.4f} after {args.epochs} epochs")

    # A fitted model is an .npz file of arrays and JSON settings (no pickle).
    with tempfile.TemporaryDirectory() as folder:  # removed at the end, with its file
        path = args.model_file or os.path.join(folder, "recommender.npz")
        model.save(path)
        loaded = MatrixFactorization.load(path)
        print(f"saved to {path} and loaded back")

    # The items with the highest predicted rating that the user has not rated yet.
    user = int(train.users[0]) if args.user is None else args.user
    items, scores = loaded.recommend(user, n=10)
    print(f"top 10 for user {user}:")
    for rank, (item, score) in enumerate(zip(items, scores), 1):
        print(f"  {rank:2}. item {item:>6}  predicted {score:.2f}")
    same = np.array_equal(items, model.recommend(user, n=10)[0])
    print(f"the loaded model recommends {'the same' if same else 'DIFFERENT'} items")


if __name__ == "__main__":
    main()
