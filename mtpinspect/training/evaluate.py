"""What the trained model does on held-out text, per class, in PyTorch: the figures that tell a trained
head from a degenerate one.

- ``agreement``: the share of positions where the head's greedy draft of x_{k+1} (from x_k and the
  trunk's h_{k-1}) equals the trunk's own greedy x_{k+1}: what llama-server's acceptance at n-max 1
  counts, here teacher-forced on held-out text;
- ``main_accuracy`` / ``mtp_accuracy``: greedy tokens equal to the text's;
- ``distinct_share``: distinct greedy tokens of the trunk over positions (a model that emits a handful
  of frequent tokens has a high agreement and a share near 0);
- ``top_token_share``: the share of positions where the trunk's greedy token is its most frequent one:
  the agreement of a head that always drafted that token, the chance level ``agreement`` must beat;
- ``entropy``: the trunk's mean predictive entropy in nats over the full vocabulary.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch

from mtpinspect.training.model import TinyGlm, Vocabulary


@dataclass(frozen=True)
class ClassFigures:
    cls: str
    positions: int
    agreement: float
    main_accuracy: float
    mtp_accuracy: float
    distinct_share: float
    top_token_share: float
    entropy: float

    def as_dict(self) -> dict:
        return asdict(self)


def windows(stream: np.ndarray, count: int, length: int, seed: int) -> np.ndarray:
    """``count`` windows at evenly spread offsets (shifted by the seed), so every run scores the same text."""
    span = len(stream) - length
    if span <= 0:
        return stream[None, :].astype(np.int64)
    offsets = (np.linspace(0, span, count, endpoint=False).astype(np.int64) + seed) % span
    return np.stack([stream[o : o + length] for o in offsets]).astype(np.int64)


@torch.no_grad()
def figures(model: TinyGlm, vocab: Vocabulary, cls: str, stream: np.ndarray, count: int = 48, length: int = 256,
            seed: int = 0) -> ClassFigures:
    model.eval()
    ids = torch.from_numpy(vocab.to_compact[windows(stream, count, length, seed)])
    agree = main_ok = mtp_ok = positions = 0
    entropy = 0.0
    greedy_tokens: list[torch.Tensor] = []
    for row in ids.split(8):
        hidden = model.trunk(row)
        raw = model.lm_head(hidden)  # one logit per row of the full matrix: rare rows share theirs
        main = raw.argmax(-1)
        head = model.lm_head(model.mtp_hidden(hidden, row)).argmax(-1)
        # Row k of the head drafts x_{k+1}, as the trunk at k predicts it; k = 0 has no h (not scored).
        truth = row[:, 2:]
        kept = truth != vocab.rare
        agree += int((head[:, 1:-1] == main[:, 1:-1]).sum())
        main_ok += int(((main[:, 1:-1] == truth) & kept).sum())
        mtp_ok += int(((head[:, 1:-1] == truth) & kept).sum())
        positions += truth.numel()
        greedy_tokens.append(main[:, 1:-1].flatten())
        logp = torch.log_softmax(model.logits(hidden), -1)
        p = logp.exp()
        class_entropy = -(p * logp).sum(-1)
        if vocab.n_rare:  # the shared class spreads evenly over its rows
            class_entropy = class_entropy + p[..., vocab.rare] * np.log(vocab.n_rare)
        entropy += float(class_entropy[:, 1:-1].sum())
    model.train()
    counts = torch.bincount(torch.cat(greedy_tokens))
    return ClassFigures(cls, positions, agree / positions, main_ok / positions, mtp_ok / positions,
                        int((counts > 0).sum()) / positions, int(counts.max()) / positions, entropy / positions)


@dataclass(frozen=True)
class Drafting:
    """llama-server's greedy draft/verify loop at --spec-draft-n-max 1, replayed in PyTorch."""

    drafted: int
    accepted: int
    generated: int

    @property
    def acceptance(self) -> float | None:
        return self.accepted / self.drafted if self.drafted else None


@torch.no_grad()
def replay_n_max_1(model: TinyGlm, prompt: list[int], n_predict: int, stop: set[int]) -> Drafting:
    """Generate greedily as llama-server does, then replay its n-max-1 loop on that text: from the last
    accepted token x_p, the head drafts x_{p+1} (row p: x_p with the trunk's h_{p-1}); the draft is
    accepted when it equals the trunk's own greedy token, and the verify step then adds one more, so the
    loop moves on by 2, else by 1. The first token comes from the prompt alone and is never drafted.
    Greedy verification never changes the text, so the whole sequence can be scored in one pass."""
    model.eval()
    ids = list(prompt)
    for _ in range(n_predict):
        token = int(model.lm_head(model.trunk(torch.tensor([ids]))[:, -1]).argmax(-1))
        ids.append(token)
        if token in stop:
            break
    row = torch.tensor([ids])
    hidden = model.trunk(row)
    main = model.lm_head(hidden).argmax(-1)[0].tolist()
    head = model.lm_head(model.mtp_hidden(hidden, row)).argmax(-1)[0].tolist()
    end = len(ids) - 1  # the last generated token: nothing is drafted past it
    drafted = accepted = 0
    p = len(prompt)
    while p < end:
        drafted += 1
        if head[p] == main[p]:
            accepted += 1
            p += 2
        else:
            p += 1
    return Drafting(drafted, accepted, len(ids) - len(prompt))
