"""Links and the graph: app/services/links.py, graph.py, auto_links.py and mentions.py,
app/repositories/links.py, graph.py and provenance.py."""
