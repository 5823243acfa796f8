"""The filter language on every list and search: app/schemas/filters.py,
app/repositories/filters.py and memory_filters.py."""
