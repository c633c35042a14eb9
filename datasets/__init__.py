"""Datasets for hogwild (installed as hogwild.datasets): svmlight reading with a
binary cache, synthetic generators, the shipped default and the shared data."""
