"""What removes data: hard deletion (app/services/deletion.py), erasure jobs
(app/services/erasures.py, app/worker/erasure.py, app/repositories/erasure.py and
erasure_batches.py), the PII scrub (app/worker/pii.py, app/repositories/pii_scrub.py)."""
