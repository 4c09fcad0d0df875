"""Token streams per class and the batches drawn from them.

Each class's documents (corpus.py) are tokenized and joined with ``<|endoftext|>`` between them, one
stream for training and one held out. A batch holds the same number of windows of each class, each at a
random offset of its stream (a seeded generator): the classes weigh the same whatever their sizes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mtpinspect.training.corpus import CLASSES, DEBIAN, Package, documents

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Streams:
    """Token ids (full vocabulary) per class name, training and held-out, and where they came from."""

    train: dict[str, np.ndarray]
    held_out: dict[str, np.ndarray]
    packages: dict[str, str]  # package -> version
    documents: dict[str, dict[str, int]]  # class -> {"train": n, "held_out": n}

    def counts(self, size: int) -> np.ndarray:
        """How often each token id occurs in the training streams."""
        return sum((np.bincount(s, minlength=size) for s in self.train.values()), np.zeros(size, np.int64))


def _stream(texts: list[str], tokenizer, eot: int) -> np.ndarray:
    ids: list[int] = []
    for encoded in tokenizer(texts, add_special_tokens=False)["input_ids"]:
        ids.extend(encoded)
        ids.append(eot)
    return np.asarray(ids, dtype=np.int32)


def load(cache: Path, packages: dict[str, Package], tokenizer, eot: int, progress: Progress | None = None) -> Streams:
    """Clean and tokenize every class of ``packages`` (corpus.packages). The Debian packages' streams take
    minutes and are cached in ``cache`` by package version and tokenizer; the sample's take a second and
    are not (its files change with mtpinspect, not with a version)."""
    key = hashlib.sha256(json.dumps([[p.name, p.version] for p in packages.values()] + [tokenizer.name_or_path, len(tokenizer)],
                                    sort_keys=True).encode()).hexdigest()[:16]
    cached = all(p.corpus == DEBIAN for p in packages.values())
    saved = cache / f"streams-{key}.npz"
    if cached and saved.is_file():
        with np.load(saved, allow_pickle=False) as arrays:
            meta = json.loads(str(arrays["meta"]))
            return Streams(
                {c: arrays[f"train-{c}"] for c in meta["classes"]},
                {c: arrays[f"held-{c}"] for c in meta["classes"]},
                meta["packages"], meta["documents"],
            )
    train: dict[str, np.ndarray] = {}
    held: dict[str, np.ndarray] = {}
    counts: dict[str, dict[str, int]] = {}
    for cls in CLASSES:
        if progress is not None:
            progress(f"tokenizing {cls.name} ({packages[cls.name].name} {packages[cls.name].version})")
        docs = list(documents(cls, packages[cls.name]))
        train[cls.name] = _stream([d.text for d in docs if not d.held_out], tokenizer, eot)
        held[cls.name] = _stream([d.text for d in docs if d.held_out], tokenizer, eot)
        counts[cls.name] = {"train": sum(not d.held_out for d in docs), "held_out": sum(d.held_out for d in docs)}
    versions = {p.name: p.version for p in packages.values()}
    if not cached:
        return Streams(train, held, versions, counts)
    meta = {"classes": list(train), "packages": versions, "documents": counts}
    tmp = saved.with_suffix(".tmp.npz")
    np.savez(tmp, meta=np.array(json.dumps(meta)), **{f"train-{c}": a for c, a in train.items()},
             **{f"held-{c}": a for c, a in held.items()})
    tmp.replace(saved)
    return Streams(train, held, versions, counts)


def batch(streams: dict[str, np.ndarray], per_class: int, length: int, rng: np.random.Generator) -> np.ndarray:
    """``per_class`` windows of ``length`` tokens from each stream, in a fixed class order."""
    rows = []
    for name in sorted(streams):
        stream = streams[name]
        starts = rng.integers(0, len(stream) - length, size=per_class)
        rows.extend(stream[s : s + length] for s in starts)
    return np.stack(rows).astype(np.int64)
