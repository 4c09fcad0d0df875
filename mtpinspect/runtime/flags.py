"""llama-server's speculative-decoding flags as the pinned llama.cpp spells them (common/arg.cpp), for
the code that builds or reads llama-server command lines."""

from __future__ import annotations

# Accepted --spec-type values (common/speculative.cpp); `mtp` is not one of them.
SPEC_TYPES = frozenset({
    "none", "draft-simple", "draft-eagle3", "draft-mtp", "draft-dflash", "draft-dspark",
    "ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache",
})
# The spellings of the draft-model flag; given a draft GGUF without --spec-type, llama-server infers it.
DRAFT_MODEL_FLAGS = ("-md", "--spec-draft-model", "--model-draft")
