"""The service's embedding model: the columns' width (app/repositories/vector_columns.py), a
switch of models (app/worker/model_switch.py, app/repositories/embedding_switches.py), a remote
endpoint and its faults (app/embedding/remote.py, app/services/embeddings.py,
app/retrieval/query_vectors.py, app/worker/reembed.py)."""
