"""Benchmarks behind ``xqa bench <area>``: each prints a table measured in one run."""
