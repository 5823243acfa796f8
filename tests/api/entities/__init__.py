"""Entities: app/services/entities.py and merge.py, app/repositories/entities.py, resolution
(app/formulas/resolve.py)."""
