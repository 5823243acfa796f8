"""Rows become responses here, one module per domain, named as in app/schemas/."""
