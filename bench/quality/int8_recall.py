"""Does int8 quantisation of the model cost recall? Dense R@10 on both dev sets, fp32 vs int8.

The int8 graph is worth offering only if LoCoMo and LongMemEval dev recall drop by less than
0.005. This measures the semantic leg as the service builds it, on the model alone (no
server, no database):

* every turn is a vector of its own (`speaker: text`, LongMemEval turns cut as the
  LongMemEval bench cuts them);
* a turn longer than `embedding_passage_chars` also gets its windows (`split_passages`);
* a turn with earlier turns in its session also gets its context passage (`context_text`,
  the 2 turns before it);
* a turn's score is the best of its vectors, and R@10 is taken over the turns of one
  conversation (LoCoMo) or one question's haystack (LongMemEval).

Both variants run the same texts through the service's backends `onnx` and `onnx-int8`;
only the graph differs (onnxruntime's dynamic quantisation, QInt8 weights). Prints R@10
per set and the time the model took for each, so the speed gain is measured beside the
recall cost.

    python -m bench.quality.int8_recall /work/shared/data/locomo/locomo_dev.json \
        /work/shared/data/longmemeval/longmemeval_s_dev.json.gz
"""

import argparse
import gzip
import json
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from app.core.config import Settings
from app.core.text import context_text, split_passages
from app.embedding import Embedder
from app.embedding.backends import Backend
from bench.quality.locomo_recall import CATEGORIES, evidence_ids, session_turns
from bench.quality.longmemeval_recall import haystack_turns
from bench.speed.embed_bench import encode_all

K = 10
# (turn ids, turn texts, session of each turn, questions as (text, evidence turn ids))
Corpus = tuple[list[str], list[str], list[str], list[tuple[str, set[str]]]]


def locomo_corpora(path: Path) -> Iterator[Corpus]:
    """One corpus per LoCoMo conversation: its turns and its category 1-4 questions."""
    for sample in json.loads(path.read_text()):
        turns = session_turns(sample["conversation"], "plain")
        ids = [dia_id for dia_id, _, _, _ in turns]
        known = set(ids)
        questions = [
            (qa["question"], set(evidence_ids(qa, known)))
            for qa in sample["qa"]
            if qa.get("category") in CATEGORIES
        ]
        yield (
            ids,
            [text for _, text, _, _ in turns],
            [str(number) for _, _, number, _ in turns],
            [q for q in questions if q[1]],
        )


def longmemeval_corpora(path: Path) -> Iterator[Corpus]:
    """One corpus per LongMemEval question: its haystack turns and the question."""
    with gzip.open(path, "rt") as handle:
        data = json.load(handle)
    for question in data:
        turns = haystack_turns(question)
        evidence = {turn_id for turn_id, _, _, is_evidence in turns if is_evidence}
        if evidence:
            yield (
                [t[0] for t in turns],
                [t[1] for t in turns],
                [t[0].rsplit("_", 1)[0] for t in turns],
                [(question["question"], evidence)],
            )


def vector_owners(
    texts: list[str], sessions: list[str], settings: Settings
) -> tuple[list[str], list[int]]:
    """Every text the service embeds for these turns, and the turn each belongs to."""
    embedded: list[str] = []
    owner: list[int] = []
    for i, text in enumerate(texts):
        embedded.append(text)
        owner.append(i)
        for start, end in split_passages(
            text, size=settings.embedding_passage_chars, overlap=settings.embedding_passage_overlap
        ):
            embedded.append(text[start:end])
            owner.append(i)
        earlier = [
            texts[j]
            for j in range(max(0, i - settings.embedding_context_turns), i)
            if sessions[j] == sessions[i]
        ]
        if earlier:
            embedded.append(context_text(earlier, text))
            owner.append(i)
    return embedded, owner


def recall_at_k(
    backend: Backend, corpora: list[Corpus], settings: Settings
) -> tuple[list[float], float, int]:
    """R@10 of each question, seconds in the model, and texts embedded."""
    scores: list[float] = []
    model_seconds = 0.0
    embedded_count = 0
    for ids, texts, sessions, questions in corpora:
        embedded, owner = vector_owners(texts, sessions, settings)
        start = time.perf_counter()
        vectors = encode_all(backend, embedded)
        query_vectors = encode_all(backend, [q for q, _ in questions])
        model_seconds += time.perf_counter() - start
        embedded_count += len(embedded) + len(questions)
        similarity = query_vectors @ vectors.T
        owners = np.array(owner)
        for row, (_, evidence) in zip(similarity, questions, strict=True):
            best = np.full(len(texts), -np.inf)
            np.maximum.at(best, owners, row)
            top = {ids[j] for j in np.argsort(-best)[:K]}
            scores.append(len(evidence & top) / len(evidence))
    return scores, model_seconds, embedded_count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("locomo", type=Path)
    parser.add_argument("longmemeval", type=Path)
    parser.add_argument("--sets", default="locomo,longmemeval")
    parser.add_argument("--graphs", default="fp32,int8")
    parser.add_argument(
        "--longmemeval-skip",
        type=int,
        default=0,
        help="leave out the first N LongMemEval questions",
    )
    parser.add_argument(
        "--longmemeval-questions",
        type=int,
        help="only the first N LongMemEval questions (file order)",
    )
    parser.add_argument(
        "--per-question", action="store_true", help="also print each question's R@10"
    )
    args = parser.parse_args()
    settings = Settings()
    wanted = args.sets.split(",")
    sets = {}
    if "locomo" in wanted:
        sets["LoCoMo dev"] = list(locomo_corpora(args.locomo))
    if "longmemeval" in wanted:
        sets["LongMemEval dev"] = list(longmemeval_corpora(args.longmemeval))[
            args.longmemeval_skip :
        ][: args.longmemeval_questions]
    backends = {
        graph: Embedder(backend="onnx" if graph == "fp32" else "onnx-int8").load()
        for graph in args.graphs.split(",")
    }
    print("| set | questions | graph | dense R@10 | model seconds | texts/s |")
    print("|---|---|---|---|---|---|")
    for set_name, corpora in sets.items():
        questions = sum(len(c[3]) for c in corpora)
        for graph, backend in backends.items():
            scores, seconds, count = recall_at_k(backend, corpora, settings)
            print(
                f"| {set_name} | {questions} | {graph} | {np.mean(scores):.3f} "
                f"| {seconds:.1f} | {count / seconds:.0f} |",
                flush=True,
            )
            if args.per_question:
                print(f"<!-- {graph} per question: {scores} -->", flush=True)


if __name__ == "__main__":
    main()
