"""The PostgreSQL server and its processes: engines and pools, the embedded server, migrations,
read replicas, backups, restores and the WAL archive."""
