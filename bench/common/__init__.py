"""Helpers the benchmarks share."""
