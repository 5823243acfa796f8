"""Copy the vectors a running Engram stored for benchmark turns into the study's cache.

After `longmemeval_recall.py` or `locomo_recall.py` stored a benchmark through the service,
its episodes' own vectors and passages (windows of long turns, context passages) are the
service's; this reads them from the database as the owner and files each under the text the
study would embed for it (study_data.windows / study_data.contexts), so `fusion_study.py
--passages` reads the semantic leg exactly as the service scores it, with no model run.

    python -m bench.study.study_from_store --database-url postgresql://postgres@/engram?host=... \\
        --cache /tmp/study-store --butler-like 'lme-%-t'
"""

import argparse
import asyncio
import sys
from pathlib import Path

import asyncpg
import numpy as np

from bench.study.study_data import VectorCache, contexts, load_all, windows


def parse_vector(text: str) -> np.ndarray:
    """pgvector's text form '[a,b,...]' as float32."""
    return np.array(text.strip("[]").split(","), dtype=np.float32)


async def copy(args: argparse.Namespace) -> None:
    _, scopes = load_all(args.data)
    _, inferred = load_all(args.data, ids=False)
    cache = VectorCache(args.cache)
    conn = await asyncpg.connect(args.database_url)
    try:
        butlers = [
            r["butler"]
            for r in await conn.fetch(
                "SELECT DISTINCT butler FROM episodes WHERE butler LIKE $1", args.butler_like
            )
        ]
        for butler in butlers:
            # Scopes stored without session ids end in -nosess: their context passages are
            # those of the sessions the gap rule made.
            bare = butler.removesuffix("-nosess")
            scope = bare.removesuffix("-t").removesuffix("-plain")
            if scope not in scopes:
                continue
            turns = scopes[scope] if bare == butler else inferred[scope]
            by_id = {t.turn_id: i for i, t in enumerate(turns)}
            context_text = contexts(turns)
            rows = await conn.fetch(
                "SELECT e.metadata->>'turn_id' AS turn_id, e.metadata->>'dia_id' AS dia_id,"
                " e.content, e.embedding::text AS own, p.kind, p.ordinal,"
                " p.embedding::text AS vector"
                " FROM episodes e LEFT JOIN passages p ON p.episode_id = e.id"
                " WHERE e.butler = $1",
                butler,
            )
            texts, vectors = [], []
            for row in rows:
                index = by_id.get(row["turn_id"] or row["dia_id"])
                if index is None:
                    continue
                turn = turns[index]
                if row["content"] != turn.content:
                    continue  # stored otherwise than the study reads it: embedded anew
                if row["own"]:
                    texts.append(turn.content)
                    vectors.append(parse_vector(row["own"]))
                if row["kind"] == "window":
                    texts.append(windows(turn.content)[row["ordinal"]])
                    vectors.append(parse_vector(row["vector"]))
                elif row["kind"] == "context" and context_text[index]:
                    texts.append(context_text[index])
                    vectors.append(parse_vector(row["vector"]))
            fresh = [
                (t, v)
                for t, v in zip(texts, vectors, strict=True)
                if t in dict.fromkeys(cache.missing([t]))
            ]
            if fresh:
                cache.add([t for t, _ in fresh], np.stack([v for _, v in fresh]))
            print(f"{butler}: {len(fresh)} vectors", file=sys.stderr)
        cache.save()
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--butler-like", default="lme-%")
    asyncio.run(copy(parser.parse_args()))


if __name__ == "__main__":
    main()
