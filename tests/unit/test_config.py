"""Settings: spec defaults, environment overrides, TOML file."""

import pytest
from pydantic import ValidationError

from app.core.config import Settings


def test_retrieval_defaults_match_spec(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings()
    assert settings.retrieval.context_token_budget == 3000
    assert settings.retrieval.default_limit == 20
    assert settings.retrieval.default_mode == "hybrid"
    weights = settings.retrieval.score_weights
    assert (weights.relevance, weights.importance, weights.recency, weights.confidence) == (
        0.4,
        0.3,
        0.2,
        0.1,
    )
    assert settings.episode_ttl_days == 7


def test_environment_overrides_nested_values(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ENGRAM_RETRIEVAL__DEFAULT_LIMIT", "35")
    monkeypatch.setenv("DATABASE_URL", "postgresql://u:p@db/engram")
    settings = Settings()
    assert settings.retrieval.default_limit == 35
    assert settings.database_url == "postgresql://u:p@db/engram"


def test_toml_file_overrides_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    config = tmp_path / "custom.toml"
    config.write_text(
        "episode_ttl_days = 14\n[retrieval]\ncontext_token_budget = 1200\n"
        "score_weights = { relevance = 0.5, importance = 0.2, recency = 0.2, confidence = 0.1 }\n"
    )
    monkeypatch.setenv("ENGRAM_CONFIG", str(config))
    settings = Settings()
    assert settings.episode_ttl_days == 14
    assert settings.retrieval.context_token_budget == 1200
    assert settings.retrieval.score_weights.relevance == 0.5
    assert settings.retrieval.default_limit == 20


def test_weights_must_sum_to_one(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ENGRAM_RETRIEVAL__SCORE_WEIGHTS__RELEVANCE", "0.9")
    with pytest.raises(ValidationError, match="sum to 1.0"):
        Settings()


def test_embedding_backend_defaults_to_onnx(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)
    assert Settings().embedding_backend == "onnx"


def test_embedding_backend_is_read_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ENGRAM_EMBEDDING_BACKEND", "torch")
    assert Settings().embedding_backend == "torch"
    monkeypatch.setenv("ENGRAM_EMBEDDING_BACKEND", "tensorflow")
    with pytest.raises(ValidationError, match="embedding_backend"):
        Settings()
