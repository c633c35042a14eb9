"""Problem modules: objectives built on the engine (installed as hogwild.problems)."""
