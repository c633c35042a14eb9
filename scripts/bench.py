"""The benchmark behind ``hogwild bench`` (see hogwild/bench/suite.py): thread scaling,
schedulers and backends on the three problems, as JSON lines, Markdown and plots.

    python scripts/bench.py --quick
    python scripts/bench.py --problems svm,mc --workers 1,2 --rounds 5 --out-dir docs/bench
"""
import argparse

from hogwild.bench import add_arguments, main

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_arguments(parser)
    main(parser.parse_args())
