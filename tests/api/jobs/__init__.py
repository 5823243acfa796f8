"""The jobs API, the worker and the scheduler (app/services/jobs.py, app/worker/worker.py and
scheduler.py), and the decay and cleanup sweeps (app/worker/decay.py and cleanup.py)."""
