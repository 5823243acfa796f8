"""Read replica settings and the read-your-writes bookkeeping."""

from types import SimpleNamespace

from app.core.config import Settings
from app.postgres import replicas
from app.postgres.replicas import RecentWrites, lsn_value, replica_name


def test_replica_urls_are_read_comma_separated_or_as_a_json_list(monkeypatch):
    monkeypatch.setenv(
        "ENGRAM_REPLICA_DATABASE_URLS",
        "postgresql://app@r1/engram, postgresql://app@r2:5433/engram",
    )
    assert Settings().replica_database_urls == [
        "postgresql://app@r1/engram",
        "postgresql://app@r2:5433/engram",
    ]
    monkeypatch.setenv("ENGRAM_REPLICA_DATABASE_URLS", '["postgresql://app@r3/engram"]')
    monkeypatch.setenv("ENGRAM_REPLICAS__MAX_LAG_SECONDS", "2.5")
    settings = Settings()
    assert settings.replica_database_urls == ["postgresql://app@r3/engram"]
    assert settings.replicas.max_lag_seconds == 2.5


def test_no_replica_by_default(monkeypatch):
    monkeypatch.delenv("ENGRAM_REPLICA_DATABASE_URLS", raising=False)
    assert Settings().replica_database_urls == []


def test_wal_positions_compare_across_segments():
    assert lsn_value("0/FFFFFFFF") < lsn_value("1/0") < lsn_value("1/16B3748")


def test_a_replica_is_named_without_its_password():
    name = replica_name("postgresql://engram_app:s3cret@standby:5433/engram?host=/run/pg")
    assert "s3cret" not in name
    assert name.startswith("postgresql://engram_app:***@standby:5433/engram")


def test_a_write_binds_the_keys_reads_for_the_window_only(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(replicas, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    writes = RecentWrites(window=5.0)
    writes.note("tenant\x00key:a", 42)
    clock[0] += 4.9
    assert writes.needed("tenant\x00key:a") == 42
    assert writes.needed("tenant\x00key:b") is None
    clock[0] += 0.1
    assert writes.needed("tenant\x00key:a") is None
