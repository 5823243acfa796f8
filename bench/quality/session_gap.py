"""How well sessions inferred by the gap rule match the true sessions of the dev sets.

Every turn of LoCoMo (per conversation) and LongMemEval_S (per question's haystack) gets the
`occurred_at` that bench/quality/locomo_recall.py and bench/quality/longmemeval_recall.py send with
`--with-time` (its session's date), its session id is dropped, and the turns are chained into
sessions by the rule Engram applies at write time (`app/formulas/sessions.py`) for
each gap. Printed per data set and gap: pairwise precision and recall of "same session" (over
turn pairs of one conversation), their F1, the adjusted Rand index, and inferred sessions per
true session. Pure Python, no server, no model.

    python -m bench.quality.session_gap /work/shared/data/locomo \
        /work/shared/data/longmemeval [--gaps 5 15 30 60 120 240 720]

Each data set gives one date per session, so all its turns occur at once; `--turn-seconds`
spaces a session's turns that far apart, as a live chat would be.
Turns stored without `--with-time` occur at their write time: a whole conversation, stored
in seconds, is then one inferred session at any gap.
"""

import argparse
import gzip
import json
import math
from collections import Counter
from collections.abc import Hashable, Iterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path

from app.formulas.sessions import chain
from bench.quality.locomo_recall import session_time as locomo_time
from bench.quality.locomo_recall import session_turns
from bench.quality.longmemeval_recall import session_time as longmemeval_time

GAPS = (5, 15, 30, 60, 120, 240, 720)
Conversation = list[tuple[Hashable, datetime]]  # (true session, occurred_at) per turn


def spaced(turns: Conversation, seconds: float) -> Conversation:
    """The turns with the n-th turn of each session `seconds` * n after its session's date."""
    seen: Counter[Hashable] = Counter()
    out = []
    for label, at in turns:
        out.append((label, at + timedelta(seconds=seconds * seen[label])))
        seen[label] += 1
    return out


def locomo(path: Path) -> Iterator[Conversation]:
    """Each LoCoMo conversation's turns in order (turns without a readable date skipped)."""
    for sample in json.loads(path.read_text()):
        turns: Conversation = []
        for _, _, number, date in session_turns(sample["conversation"], "plain"):
            if (iso := locomo_time(date)) is not None:
                turns.append((number, datetime.fromisoformat(iso)))
        yield turns


def longmemeval(path: Path) -> Iterator[Conversation]:
    """Each LongMemEval_S question's haystack turns in order."""
    with gzip.open(path, "rt") as handle:
        data = json.load(handle)
    for question in data:
        turns: Conversation = []
        for session_id, date, session in zip(
            question["haystack_session_ids"],
            question["haystack_dates"],
            question["haystack_sessions"],
            strict=True,
        ):
            at = datetime.fromisoformat(longmemeval_time(date))
            turns.extend((session_id, at) for _ in session)
        yield turns


def pairs(labels: Sequence[Hashable]) -> int:
    """Turn pairs that share a label."""
    return sum(n * (n - 1) // 2 for n in Counter(labels).values())


def scores(conversations: list[Conversation], gap: timedelta) -> dict[str, float]:
    """Pairwise precision, recall, F1, mean adjusted Rand index and inferred sessions per
    true session, over all conversations."""
    same_true = same_inferred = both = 0
    aris: list[float] = []
    true_sessions = inferred_sessions = 0
    for turns in conversations:
        truth = [label for label, _ in turns]
        inferred = chain([("conversation", at) for _, at in turns], gap=gap)
        joint = pairs(list(zip(truth, inferred, strict=True)))
        t, i, n = pairs(truth), pairs(inferred), len(turns) * (len(turns) - 1) // 2
        same_true, same_inferred, both = same_true + t, same_inferred + i, both + joint
        expected = t * i / n if n else 0.0
        spread = (t + i) / 2 - expected
        aris.append((joint - expected) / spread if spread else 1.0)
        true_sessions += len(set(truth))
        inferred_sessions += len(set(inferred))
    precision = both / same_inferred if same_inferred else 1.0
    recall = both / same_true if same_true else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "ari": math.fsum(aris) / len(aris),
        "ratio": inferred_sessions / true_sessions,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("locomo", help="directory of locomo_dev.json (or the file)")
    parser.add_argument("longmemeval", help="directory of longmemeval_s_dev.json.gz (or it)")
    parser.add_argument("--gaps", type=float, nargs="+", default=list(GAPS), help="gaps in minutes")
    parser.add_argument(
        "--turn-seconds",
        type=float,
        default=0.0,
        help="space a session's turns this far apart (the data sets give one date per session)",
    )
    args = parser.parse_args()
    locomo_path, lme_path = Path(args.locomo), Path(args.longmemeval)
    if locomo_path.is_dir():
        locomo_path = locomo_path / "locomo_dev.json"
    if lme_path.is_dir():
        lme_path = lme_path / "longmemeval_s_dev.json.gz"
    sets = {
        name: [spaced(turns, args.turn_seconds) for turns in conversations]
        for name, conversations in (
            ("locomo", locomo(locomo_path)),
            ("longmemeval", longmemeval(lme_path)),
        )
    }
    print(
        "| data set | gap (min) | pair precision | pair recall | F1 | ARI "
        "| inferred / true sessions |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, conversations in sets.items():
        for minutes in args.gaps:
            s = scores(conversations, timedelta(minutes=minutes))
            print(
                f"| {name} ({len(conversations)}) | {minutes:g} | {s['precision']:.3f} "
                f"| {s['recall']:.3f} | {s['f1']:.3f} | {s['ari']:.3f} | {s['ratio']:.2f} |"
            )


if __name__ == "__main__":
    main()
