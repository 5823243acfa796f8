"""A fixed sample of varied texts for comparing embedding backends."""

SAMPLE_TEXTS = [
    " ",
    "a",
    "Caroline adopted a rescue dog last weekend.",
    "What did Melanie paint after the camping trip?",
    "QUARTERLY REVENUE GREW 12% YEAR OVER YEAR (see Q3-2024 report, p. 7)",
    "déjà vu in São Paulo: naïve café owners façade",
    "東京で寿司を食べました。とても美味しかった！",
    "Привет, как дела? Всё хорошо.",
    "I'm SO happy 😀🎉 — can't wait!!!",
    "def embed(text: str) -> list[float]:\n    return model.encode(text).tolist()",
    "SELECT id, content FROM episodes WHERE tenant_id = $1 ORDER BY created_at DESC",
    "https://example.com/path?query=1&b=two#frag user@example.org +1-555-0100",
    "[2023-05-08 13:56] Caroline: I went to a LGBTQ support group yesterday and it was "
    "so powerful. Melanie: That's amazing, I'm really proud of you for going.",
    " ".join(["The quick brown fox jumps over the lazy dog."] * 80),  # far over 256 tokens
    "word " * 255,
    "\t\n  leading and trailing whitespace  \n",
]
