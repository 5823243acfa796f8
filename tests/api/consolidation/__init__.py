"""Consolidation against a scripted model: app/worker/consolidation/ (pipeline, prompt, parser,
executor), app/worker/llm.py, app/repositories/consolidation.py."""
