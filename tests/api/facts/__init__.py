"""Facts: app/services/facts.py, fact_bulk.py, fact_timeline.py and fact_beliefs.py
(contradictions: test_contradictions.py), app/repositories/facts.py, fact_time.py and
confidence.py, app/formulas/belief.py and fact_time.py."""
