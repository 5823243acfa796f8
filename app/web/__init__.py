"""The HTTP edge around the routers: middleware, allowed hosts, rate limits, the query guard and
the offline API docs."""
