"""The read path's SQL: candidate lists, BM25 keyword scores, filter counts, record tables."""
