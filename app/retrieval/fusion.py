"""Fusion of ranked candidate lists: Reciprocal Rank Fusion, weighted score fusion, and the
learned second stage (retrieval/rerank.py) over deeper lists."""

import uuid
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from app.core.config import DEFAULT_RRF_K
from app.embedding.similarity_scale import IDENTITY, SimilarityScale
from app.repositories.search.candidates import LoadedRow, RankedCandidate
from app.retrieval import rerank

Key = tuple[str, uuid.UUID]


@dataclass(frozen=True)
class Fused:
    """A candidate after fusion; a rank is None when the memory is absent from that list.

    `time_rank` is its rank in the `boost` list (the episodes inside the query's time window).
    `fused_score` orders the results; `contributions` is its sum split by signal
    (semantic, keyword, time). `rrf_score` is the fused score of RRF fusion.
    """

    memory_type: str
    memory_id: uuid.UUID
    semantic_rank: int | None
    keyword_rank: int | None
    rrf_score: float | None
    time_rank: int | None = None
    fused_score: float | None = None
    contributions: dict[str, float] | None = None


@dataclass(frozen=True)
class ScoredRow:
    """A search result: the row and its scores (a rank is None when the row is absent from
    that list)."""

    row: Any
    similarity: float | None
    keyword_score: float | None
    rrf_score: float | None
    semantic_rank: int | None
    keyword_rank: int | None
    fused_score: float | None = None
    contributions: dict[str, float] | None = None


@dataclass(frozen=True)
class FusionWeights:
    """Weights of weighted score fusion: each signal's min-max normalised score times its
    weight."""

    semantic: float = 0.5
    keyword: float = 0.5
    time: float = 0.25
    graph: float = 0.2


def rrf_score(
    semantic_rank: int | None, keyword_rank: int | None, *, limit: int, k: int = DEFAULT_RRF_K
) -> float:
    """1/(k + semantic_rank) + 1/(k + keyword_rank); a missing rank counts as limit + 1."""
    missing = limit + 1
    return 1.0 / (k + (semantic_rank if semantic_rank is not None else missing)) + 1.0 / (
        k + (keyword_rank if keyword_rank is not None else missing)
    )


def _fusion_order(item: Fused) -> tuple[Any, ...]:
    absent = float("inf")
    return (
        -(item.fused_score or 0.0),
        item.semantic_rank if item.semantic_rank is not None else absent,
        item.keyword_rank if item.keyword_rank is not None else absent,
        item.memory_type,
        str(item.memory_id),
    )


def _by_key(candidates: Sequence[RankedCandidate]) -> dict[Key, RankedCandidate]:
    return {(c.memory_type, c.memory_id): c for c in candidates}


def _normalised(candidates: Sequence[RankedCandidate]) -> dict[Key, float]:
    """Min-max normalised leg scores: the best 1, the worst 0 (all 1 when they tie)."""
    if not candidates:
        return {}
    low, high = min(c.score for c in candidates), max(c.score for c in candidates)
    return {
        (c.memory_type, c.memory_id): (c.score - low) / (high - low) if high > low else 1.0
        for c in candidates
    }


@dataclass(frozen=True)
class Known:
    """What learned fusion reads of a candidate's row."""

    similarity: float
    own_similarity: float
    group: Hashable  # its conversation session (`session_group`)
    length: int
    occurred_at: datetime | None  # episodes only


def known_row(memory_type: str, loaded: LoadedRow) -> Known | None:
    """A loaded row as learned fusion sees it; None when it has no similarity (no vector)."""
    if loaded.similarity is None:
        return None
    row = loaded.row
    group = session_group(memory_type, row)
    own = loaded.own_similarity if loaded.own_similarity is not None else loaded.similarity
    return Known(
        loaded.similarity,
        own,
        group,
        len(text_of(row)),
        row.occurred_at if memory_type == "episode" else None,
    )


def session_group(memory_type: str, row: Any) -> Hashable:
    """The conversation session a row belongs to: an episode's (butler, session_id), else
    the session inferred for it when stored without one, else the memory itself."""
    if memory_type == "episode":
        if (session_id := getattr(row, "session_id", None)) is not None:
            return (row.butler, session_id)
        if (inferred := getattr(row, "inferred_session", None)) is not None:
            return ("inferred", inferred)
    return (memory_type, row.id)


def shares_sessions(known: Mapping[Key, Known]) -> bool:
    """Whether two of the candidates belong to one session, so the learned stage's session
    signals have something to read."""
    groups = [row.group for row in known.values()]
    return len(set(groups)) < len(groups)


def text_of(row: Any) -> str:
    """The text a row is known by: its content (memories, run messages, reflections), else
    its summary (runs, arcs), title (arcs) or description (procedures), the first not empty."""
    for name in ("content", "summary", "title", "description"):
        value = getattr(row, name, None)
        if isinstance(value, str) and value:
            return value
    return ""


def _with_ranks(
    key: Key,
    semantic: RankedCandidate | None,
    keyword: RankedCandidate | None,
    boosted: RankedCandidate | None,
    *,
    rrf_score: float | None,
    fused_score: float,
    contributions: dict[str, float] | None = None,
) -> Fused:
    """A fused result: its key, its rank in each list it is in, and its scores."""
    return Fused(
        memory_type=key[0],
        memory_id=key[1],
        semantic_rank=semantic.rank if semantic else None,
        keyword_rank=keyword.rank if keyword else None,
        rrf_score=rrf_score,
        time_rank=boosted.rank if boosted else None,
        fused_score=fused_score,
        contributions=contributions,
    )


def fuse_learned(
    semantic: Sequence[RankedCandidate],
    keyword: Sequence[RankedCandidate],
    *,
    known: Mapping[Key, Known],
    limit: int,
    depth: int,
    boost: Sequence[RankedCandidate] = (),
    window: tuple[datetime, datetime] | None = None,
    graph: Sequence[RankedCandidate] = (),
    k: int = DEFAULT_RRF_K,
    model: rerank.Model | None = None,
    scale: SimilarityScale = IDENTITY,
) -> list[Fused]:
    """Every candidate of the lists ordered by the learned model (rerank.py), best first.

    Its score is the model's probability that the memory answers the query; `contributions`
    holds each signal's part of the model's logit and `base`, the logit before any signal
    (they add up to the logit). The model reads similarities moved by `scale` onto the
    packaged model's (embedding/similarity_scale.py). With a `boost` list (the episodes
    inside the query's time window) or a `graph` list, that order and those lists are fused
    by RRF (`contributions`: `learned`, `time`, `graph`). A candidate whose row is not `known`
    is left out.
    """
    semantic_by, keyword_by, boost_by = _by_key(semantic), _by_key(keyword), _by_key(boost)
    graph_by = _by_key(graph)
    keys = [
        key
        for key in dict.fromkeys([*semantic_by, *keyword_by, *boost_by, *graph_by])
        if key in known
    ]
    candidates = []
    for key in keys:
        row, sem, kw = known[key], semantic_by.get(key), keyword_by.get(key)
        inside = (
            window is not None
            and row.occurred_at is not None
            and window[0] <= row.occurred_at < window[1]
        )
        candidates.append(
            rerank.Candidate(
                similarity=scale(row.similarity),
                own_similarity=scale(row.own_similarity),
                keyword=kw.score if kw else 0.0,
                semantic_rank=sem.rank if sem else None,
                keyword_rank=kw.rank if kw else None,
                group=row.group,
                length=row.length,
                in_window=inside,
            )
        )
    model = model or rerank.shipped_model()
    ranked = rerank.rank(candidates, model, depth=depth)
    fused = []
    for index, key in enumerate(keys):
        sem, kw, boosted = semantic_by.get(key), keyword_by.get(key), boost_by.get(key)
        fused.append(
            _with_ranks(
                key, sem, kw, boosted, rrf_score=None, fused_score=float(ranked.scores[index])
            )
        )
    ordered = sorted(fused, key=_fusion_order)
    lists = {name: by for name, by in (("time", boost_by), ("graph", graph_by)) if by}
    if lists:
        return _with_lists(ordered, lists, limit=limit, k=k)[:limit]
    return _with_contributions(
        ordered[:limit], ranked, model, {key: index for index, key in enumerate(keys)}
    )


def _with_contributions(
    shown: Sequence[Fused], ranked: rerank.Ranked, model: rerank.Model, index: Mapping[Key, int]
) -> list[Fused]:
    """The `shown` results, each with its signals' parts of the model's logit and `base`
    (computed for these alone: the others' are never shown)."""
    parts = ranked.contributions(model, [index[(f.memory_type, f.memory_id)] for f in shown])
    out = []
    for item, row in zip(shown, parts, strict=True):
        contributions = {"base": model.base}
        contributions.update((name, float(row[i])) for i, name in enumerate(rerank.SIGNALS))
        out.append(replace(item, contributions=contributions))
    return out


def _with_lists(
    ordered: Sequence[Fused],
    lists: Mapping[str, Mapping[Key, RankedCandidate]],
    *,
    limit: int,
    k: int,
) -> list[Fused]:
    """The learned order and further ranked `lists` (the time window's episodes, the graph's
    memories) fused by RRF, as rrf fusion treats them: a memory inside the query's time
    window, or near its entities, moves ahead of one as relevant but not. A memory missing
    from a list counts as ranked just past its end (and past `limit`)."""
    missing = {
        name: max(limit, *(c.rank for c in ranked.values())) + 1 for name, ranked in lists.items()
    }
    out = []
    for position, item in enumerate(ordered, start=1):
        key = (item.memory_type, item.memory_id)
        parts = {"learned": 1.0 / (k + position)}
        for name, ranked in lists.items():
            found = ranked.get(key)
            parts[name] = 1.0 / (k + (found.rank if found else missing[name]))
        out.append(
            replace(item, rrf_score=None, fused_score=sum(parts.values()), contributions=parts)
        )
    return sorted(out, key=_fusion_order)


def fuse(
    semantic: Sequence[RankedCandidate],
    keyword: Sequence[RankedCandidate],
    *,
    limit: int,
    k: int = DEFAULT_RRF_K,
    boost: Sequence[RankedCandidate] = (),
    method: str = "rrf",
    weights: FusionWeights = FusionWeights(),
    graph: Sequence[RankedCandidate] = (),
) -> list[Fused]:
    """Fuse two ranked lists, best first (then semantic_rank, keyword_rank, stable keys).

    `rrf`: 1/(k + rank) per list, a missing rank counting as limit + 1. `weighted`: each
    list's min-max normalised score times its weight, 0 when missing. A `boost` list (the
    episodes inside the query's time window) adds 1/(k + its rank) (rrf) or
    weights.time * (n - rank + 1) / n (weighted) to the memories it holds. A `graph` list
    (memories near the query's entities, scored in [0, 1]) adds 1/(k + its rank) (rrf) or
    weights.graph * its score (weighted).
    """
    semantic_by, keyword_by, boost_by = _by_key(semantic), _by_key(keyword), _by_key(boost)
    graph_by = _by_key(graph)
    semantic_norm, keyword_norm = _normalised(semantic), _normalised(keyword)
    missing = limit + 1
    fused = []
    for key in dict.fromkeys([*semantic_by, *keyword_by, *boost_by, *graph_by]):
        sem, kw, boosted = semantic_by.get(key), keyword_by.get(key), boost_by.get(key)
        near = graph_by.get(key)
        if method == "weighted":
            parts = {
                "semantic": weights.semantic * semantic_norm.get(key, 0.0),
                "keyword": weights.keyword * keyword_norm.get(key, 0.0),
                "time": (
                    weights.time * (len(boost) - boosted.rank + 1) / len(boost) if boosted else 0.0
                ),
            }
            if graph:
                parts["graph"] = weights.graph * near.score if near else 0.0
        else:
            parts = {
                "semantic": 1.0 / (k + (sem.rank if sem else missing)),
                "keyword": 1.0 / (k + (kw.rank if kw else missing)),
                "time": 1.0 / (k + boosted.rank) if boosted else 0.0,
            }
            if graph:
                parts["graph"] = 1.0 / (k + near.rank) if near else 0.0
        total = sum(parts.values())
        fused.append(
            _with_ranks(
                key,
                sem,
                kw,
                boosted,
                rrf_score=total if method == "rrf" else None,
                fused_score=total,
                contributions=parts,
            )
        )
    return sorted(fused, key=_fusion_order)[:limit]


def scaled(fused: Sequence[Fused], factors: Mapping[Key, float]) -> list[Fused]:
    """The results with the fused score of each memory in `factors` multiplied by its factor,
    best first again; `rrf_score` and `contributions` stay as fusion made them."""
    out = []
    for item in fused:
        factor = factors.get((item.memory_type, item.memory_id))
        if factor is not None and item.fused_score is not None:
            item = replace(item, fused_score=item.fused_score * factor)
        out.append(item)
    return sorted(out, key=_fusion_order)


def single_list(
    candidates: Sequence[RankedCandidate], *, semantic: bool, boost: Sequence[RankedCandidate] = ()
) -> list[Fused]:
    """A one-mode result: the list as ranked, without fusion; members of `boost` (the
    episodes inside the query's time window) move ahead, keeping their order."""
    boost_ranks: dict[Key, int] = {(c.memory_type, c.memory_id): c.rank for c in boost}
    listed = [
        Fused(
            memory_type=c.memory_type,
            memory_id=c.memory_id,
            semantic_rank=c.rank if semantic else None,
            keyword_rank=None if semantic else c.rank,
            rrf_score=None,
            time_rank=boost_ranks.get((c.memory_type, c.memory_id)),
        )
        for c in candidates
    ]
    return sorted(listed, key=lambda item: item.time_rank is None)


def merge_sources(
    first: Sequence[Fused], second: Sequence[Fused], *, hybrid: bool, limit: int
) -> list[Fused]:
    """Two separately ranked result lists as one: by fused score in hybrid mode, else by rank
    (time-boosted memories still first)."""

    def order(item: Fused) -> tuple[Any, ...]:
        return (False if hybrid else item.time_rank is None, *_fusion_order(item))

    return sorted([*first, *second], key=order)[:limit]
