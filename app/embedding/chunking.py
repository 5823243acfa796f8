"""Cutting a request's texts into model calls bounded in texts and in estimated tokens."""


def estimated_tokens(text: str, *, max_seq_length: int) -> int:
    """A generous token estimate before tokenising: half the characters, capped by the model.

    English runs about four characters a token, CJK about one, so halving over-counts
    most text; the cap is what the model truncates to.
    """
    return min(len(text) // 2 + 2, max_seq_length)


def plan_chunks(
    texts: list[str], *, max_texts: int, max_tokens: int, max_seq_length: int
) -> list[list[int]]:
    """Indexes of `texts`, longest first, cut into model calls of at most `max_texts` texts
    and about `max_tokens` estimated tokens (a single text always makes a call).

    Sorting by length keeps texts of similar length together, so little padding is run;
    the token bound keeps one call of long texts as short as one of short texts.
    """
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    chunks: list[list[int]] = []
    current: list[int] = []
    tokens = 0
    for index in order:
        cost = estimated_tokens(texts[index], max_seq_length=max_seq_length)
        if current and (len(current) >= max_texts or tokens + cost > max_tokens):
            chunks.append(current)
            current, tokens = [], 0
        current.append(index)
        tokens += cost
    if current:
        chunks.append(current)
    return chunks
