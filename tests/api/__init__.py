"""The service over HTTP, in process or on a loopback port: a folder per domain with several
test files, a domain's single file here (arcs: app/services/arcs.py and
app/worker/arc_boundaries.py; ledger: app/services/ledger.py and app/worker/reflection.py;
rules: rules.py and rule_reasons.py; runs: runs.py and run_lessons.py; the console: app/console/
with app/services/memory_views.py, memory_edits.py and merge_preview.py; the Python client:
engram_client)."""
