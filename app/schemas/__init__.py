"""Pydantic request and response models, one module per domain: strict requests, bounded
fields, and each listing's query parameters."""
