"""Episodes: app/services/episodes.py, app/repositories/episodes.py, their time and order, and
sessions (app/formulas/sessions.py, app/worker/session_backfill.py)."""
