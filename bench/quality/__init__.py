"""Retrieval quality: recall of the search modes on the dev sets, and what changes it."""
