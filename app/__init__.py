"""Engram, a memory service: one FastAPI process over PostgreSQL, one package per floor
(ARCHITECTURE.md maps them)."""
