"""The trained model's tokenizer: StarCoder's BPE (49,152 tokens), rebuilt from the vocab-only GGUF of the
pinned llama.cpp sources, plus the five special tokens that the glm4moe converter looks up.

Why StarCoder's: the pinned converter recognises a BPE tokenizer only by the hash of its output on a
fixed text, so the vocabulary must be one it knows, and of those the choice decides whether a Japanese
measurement means anything (the toolchain reference's table, on 3,000 characters each):
- GPT-2 (50,257) cuts Japanese into 0.85 characters per token, 54% of them partial UTF-8 byte pieces a
  head predicts almost for free, which inflates Japanese acceptance; deepseek-coder (32,256) is worse.
- StarCoder (49,152) gives 1.27 characters per token with 11% partial pieces, and the best code
  tokenization of the small ones (3.69 characters per token).
- Llama 3 (128,256) and Qwen (151,936) are better still for Japanese, but their embedding and output
  matrices alone would be 2.6-3.1x the file size and training cost: over the 48 MB the package ships.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

VOCAB = "starcoder"
# `_set_vocab_glm` reads bos, eot, unk and eom from these (KeyError without them); <sop> and
# <|assistant|> complete GLM's chat set.
GLM_SPECIAL = ("[gMASK]", "<sop>", "<|user|>", "<|assistant|>", "<|observation|>")
END_OF_TEXT = "<|endoftext|>"
# Rows of the embedding and output matrices: the vocabulary and GLM's tokens, rounded up as GLM does.
PADDED_VOCAB = 49216


def build(vocab_gguf: Path) -> Any:
    """The fast tokenizer, from the pinned sources' vocab-only GGUF (transformers reads GGUF vocabularies)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(vocab_gguf.parent, gguf_file=vocab_gguf.name)
    tokenizer.add_special_tokens({"additional_special_tokens": list(GLM_SPECIAL)})
    if len(tokenizer) > PADDED_VOCAB:
        raise ValueError(f"{vocab_gguf.name}: {len(tokenizer)} tokens do not fit {PADDED_VOCAB} rows")
    return tokenizer
