"""What each operation does, one module per domain: rules, events and transactions of a
request; SQL only through app/repositories/."""
