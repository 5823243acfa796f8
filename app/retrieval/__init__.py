"""The read path: search, recall and context, from a request to ranked rows; no SQL.

`requests` answers a search request; `plan` turns it into what the statements need (their
SQL is in app/repositories/search/); `fusion` and `rerank` order the lists;
`user_reranker` applies the operator's reranker; `recall` and `context` score and format
facts and rules."""
