"""Example: a recommender from implicit feedback (which items each user chose, no
ratings). Ratings of 4 and 5 stars count as interactions; each user's are split
80/20; the model ranks items by WARP (LightFM's loss) and is scored by precision@10
on the held-out ones; then a user's top-10 and the items most like one item.

    python scripts/examples/implicit_recommender.py          # MovieLens 100k (shared data)
    python scripts/examples/implicit_recommender.py --data ml-1m --loss bpr

--data is a dataset name (`hogwild datasets`, `hogwild download ml-1m`) or a file of
'user item rating' lines (any separator, string ids too).
"""
import argparse

from hogwild.datasets.ratings import interactions_from_ratings
from hogwild.datasets.registry import load_ratings
from hogwild.problems.matrix_completion import ImplicitFactorization


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="ml-100k",
                        help="a rating dataset name or a 'user item rating' file "
                             "(default: ml-100k)")
    parser.add_argument("--loss", default="warp",
                        help="warp (LightFM's) or bpr (implicit's) (default: warp)")
    parser.add_argument("--epochs", type=int, default=20,
                        help="passes over the interactions (default: 20)")
    args = parser.parse_args()

    # Ratings >= 4 are the interactions; 20% of each user's are held out.
    data = interactions_from_ratings(load_ratings(args.data), threshold=4)
    model = ImplicitFactorization(loss=args.loss, epochs=args.epochs, random_state=0)
    model.fit(data.train, eval_set=data.test)  # precision@10 and more after each epoch
    measures = model.history_[-1].metrics
    print(f"{args.data}: {data.describe()}; after {args.epochs} epochs precision@10 "
          f"{measures['precision@10']:.4f}, recall@10 {measures['recall@10']:.4f}, "
          f"AUC {measures['auc']:.4f}")

    # Rows and columns of the matrices are indices; user_ids and item_ids name them.
    items, scores = model.recommend(0, n=10)  # the user's training items left out
    print(f"top 10 for user {data.user_ids[0]}: "
          + ", ".join(str(data.item_ids[i]) for i in items))
    similar, cosines = model.similar_items(items[0], n=5)
    print(f"items most like {data.item_ids[items[0]]}: "
          + ", ".join(f"{data.item_ids[i]} ({c:.2f})" for i, c in zip(similar, cosines)))


if __name__ == "__main__":
    main()
