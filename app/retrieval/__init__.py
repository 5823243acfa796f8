"""The read path: search, recall and context, from a request to ranked rows.

`requests` answers a search request; `plan` turns it into what the statements need;
`candidates`, `keyword` and `record_sql` hold the SQL of the candidate lists; `fusion` and
`rerank` order them; `recall` and `context` score and format facts and rules.
"""
