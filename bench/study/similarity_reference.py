"""Recompute the packaged model's mean and spread of similarity over the reference sentences
in app/embedding/similarity_reference.json (after its sentences change) and write them back.

    python -m bench.study.similarity_reference
"""

import json

from app.embedding import Embedder
from app.embedding.similarity_scale import REFERENCE_FILE, pair_statistics


def main() -> None:
    data = json.loads(REFERENCE_FILE.read_text())
    embedder = Embedder(data["model"])
    sentences = data["sentences"]
    mean, spread = pair_statistics(
        embedder.embed_batch(sentences, query=True), embedder.embed_batch(sentences)
    )
    data.update(mean=round(mean, 6), spread=round(spread, 6))
    REFERENCE_FILE.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(sentences)} sentences: mean {mean:.6f}, spread {spread:.6f}")


if __name__ == "__main__":
    main()
