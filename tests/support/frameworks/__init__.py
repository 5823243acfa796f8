"""Scripts the framework tests run in a venv of their own (the client's wheel with the
framework's extra, no checkout on the path) against a live Engram: each takes the server's
URL and an API key and prints what it saw as one JSON object."""
