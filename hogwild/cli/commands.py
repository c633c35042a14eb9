"""The other commands: ``hogwild stats`` (sparsity statistics), ``hogwild download``
and ``hogwild datasets``."""
import json

import numpy as np


def sparsity(args):
    from hogwild.structure import Supports
    from hogwild.schedulers.conflicts import reading, sparsity_stats
    from hogwild.errors import choose

    choose(("svm", "mc", "cuts"), args.problem, "problem")
    if args.problem == "svm":
        from hogwild.datasets.registry import DEFAULT_SVM_DATASET, load_svm_data
        data = args.data or DEFAULT_SVM_DATASET
        supports = Supports.from_csr(load_svm_data(data)[0].X)
    elif args.problem == "mc":
        from hogwild.datasets.registry import load_ratings
        data = args.data or "ml-1m"
        ratings = load_ratings(data)
        supports = Supports.from_keys(np.unique(ratings.users, return_inverse=True)[1],
                                      np.unique(ratings.items, return_inverse=True)[1])
    else:
        from hogwild.datasets.registry import load_graph
        data = args.data or "snap-facebook-combined"
        n, u, v, _, _ = load_graph(data)
        supports = Supports.from_edges(n, u, v)
    stats = sparsity_stats(supports)
    stats.update(problem=args.problem, data=data, reading=reading(stats))
    if args.json:
        print(json.dumps(stats))
        return
    how = "exact" if stats["rho_exact"] else f"max over {stats['rho_samples']:,} sampled samples"
    print(f"{args.problem} on {data}: {stats['samples']:,} samples, "
          f"{stats['coordinates']:,} coordinates\n"
          f"  Omega (largest support)                {stats['omega']}\n"
          f"  Delta (most samples on one coordinate) {stats['delta']:.4f}\n"
          f"  rho   (most conflicts of one sample)   {stats['rho']:.4f} ({how})\n"
          f"  {stats['reading']}")


def download(args):
    from hogwild.datasets.registry import download_dataset

    path = download_dataset(args.name, url=args.url, sha256=args.sha256)
    print(f"{args.name}: ratings in {path}")


def list_datasets(args):
    from hogwild.datasets.registry import dataset_listing

    for line in dataset_listing():
        print(line, flush=True)
