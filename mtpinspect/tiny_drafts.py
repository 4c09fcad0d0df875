"""llama-server's greedy draft/verify loop on a tiny model, worked out without running it.

The tiny models (tiny_model.py) are bigrams: the target's greedy next token after x is x+1 (mod the
vocabulary), and the head drafts a chosen token after each x. That makes what llama-server does exact to
predict: which drafts it accepts for a prompt and an n-max (:func:`simulate`), which token it generates first
(:func:`first_token`, through llama.cpp's `test` tokenizer). tiny_model.py picks its poisoned tokens with it,
and the tests compare llama-server's own figures with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mtpinspect.errors import UsageError


@dataclass(frozen=True)
class DraftRun:
    """What llama-server's greedy draft/verify loop does on a tiny model for one request."""

    drafted: int
    accepted: int
    steps: int  # verification steps that carried a draft
    per_position: tuple[int, ...]  # accepted tokens at each draft position

    @property
    def acceptance(self) -> float | None:
        return self.accepted / self.drafted if self.drafted else None

    @property
    def mean_length(self) -> float | None:
        """Tokens per verification step, as llama-server's log line computes it."""
        return 1 + self.accepted / self.steps if self.steps else None


def successor(token: int, vocab: int) -> int:
    """The main model's greedy next token."""
    return (token + 1) % vocab


def simulate(drafts: Sequence[int], first_token: int, n_max: int, n_predict: int) -> DraftRun:
    """llama-server's greedy loop on a tiny model: which drafts the target accepts.

    ``drafts[x]`` is the token the head drafts after x. The first generated token comes from the
    prompt; then each step drafts ``min(n_max, n_remaining - 1)`` tokens (the server's
    ``get_n_draft_max``), the target accepts the longest correct prefix and adds its own token.
    """
    vocab = len(drafts)
    per_position = [0] * n_max
    drafted = accepted = steps = 0
    last, decoded = first_token, 1
    while decoded < n_predict:
        n_draft = min(n_max, n_predict - decoded - 1)
        if n_draft <= 0:
            last, decoded = successor(last, vocab), decoded + 1
            continue
        good, current, expected = 0, last, last
        while good < n_draft:
            current, expected = drafts[current], successor(expected, vocab)
            if current != expected:
                break
            per_position[good] += 1
            good += 1
        drafted, accepted, steps = drafted + n_draft, accepted + good, steps + 1
        last, decoded = (last + good + 1) % vocab, decoded + good + 1
    return DraftRun(drafted=drafted, accepted=accepted, steps=steps, per_position=tuple(per_position))


def tokenize(text: str, vocab: int) -> list[int]:
    """llama.cpp's `test` tokenizer: 5-byte chunks, each hashed (h*31 + byte) modulo the vocabulary."""
    data = text.encode("utf-8")
    tokens = []
    for pos in range(0, len(data), 5):
        value = 0
        for byte in data[pos : pos + 5]:
            value = (value * 31 + byte) % (1 << 64)
        tokens.append(value % vocab)
    return tokens


def first_token(prompt: str, vocab: int) -> int:
    """The first token the model generates after a prompt (the successor of its last token)."""
    tokens = tokenize(prompt, vocab)
    if not tokens:
        raise UsageError("prompt is empty: the tiny model needs at least one token")
    return successor(tokens[-1], vocab)
