"""The database server and the schema: app/postgres/ (embedded_pg.py, migrations.py, backup.py,
restore.py, replicas.py, db.py), PgBouncer, the maintenance commands."""
