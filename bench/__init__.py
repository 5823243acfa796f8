"""Benchmarks of retrieval quality and speed, each run as `python -m bench.<room>.<name>`."""
