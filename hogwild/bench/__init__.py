"""Benchmarks, kept apart from the engine: ``hogwild bench`` (suite: thread scaling,
schedulers and backends; report tables and plots), the workloads it and the
scripts in scripts/ share (workloads), the peers they compare against (peers),
and facts about the machine they ran on (machine)."""
from hogwild.bench.suite import add_arguments, main

__all__ = ["add_arguments", "main"]
