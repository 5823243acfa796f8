"""The read path: search, recall and context (app/retrieval/), the keyword leg and the records'
search (app/repositories/search/), passages (app/repositories/passages.py), the reranker the
operator brings (app/retrieval/user_reranker.py), and where a read's time went
(app/telemetry/stages.py)."""
