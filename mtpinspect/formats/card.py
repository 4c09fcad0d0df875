"""The model card's front matter: what a repo says about its own lineage.

The Hub builds its model tree from three keys of README.md's YAML block: `base_model` (one repo id or a
list), `base_model_relation` (`quantized`, `finetune`, `merge`, `adapter`; the Hub infers it when the card
does not say) and `quantized_by`. The Hub serves the parsed block as the model info's `cardData`; a local
folder has the README.md itself, read here with huggingface_hub's own front-matter rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mtpinspect.errors import FormatError

CARD_FILE = "README.md"
# The front matter sits at the top; a card whose YAML block runs past this is not read further.
CARD_LIMIT = 64 * 1024
RELATIONS = frozenset({"quantized", "finetune", "merge", "adapter"})


@dataclass(frozen=True)
class ModelCard:
    """The lineage keys of a model card, as written (None / () when the card does not say)."""

    source: str  # "README.md" or "model info cardData"
    base_models: tuple[str, ...]
    relation: str | None  # as declared; the Hub's own inference is not repeated here
    quantized_by: str | None

    @property
    def says_anything(self) -> bool:
        return bool(self.base_models or self.relation or self.quantized_by)

    def lines(self) -> list[str]:
        """One evidence line per key the card sets."""
        out = []
        if self.base_models:
            out.append(f"{self.source}: base_model: {', '.join(self.base_models)}")
        if self.relation:
            out.append(f"{self.source}: base_model_relation: {self.relation}")
        if self.quantized_by:
            out.append(f"{self.source}: quantized_by: {self.quantized_by}")
        return out


def card_from_metadata(data: Mapping[str, Any], source: str) -> ModelCard:
    """The lineage keys of a parsed front matter (the Hub's cardData or a README's YAML block)."""
    base = data.get("base_model")
    bases = [base] if isinstance(base, str) else [b for b in base if isinstance(b, str)] if isinstance(base, list) else []
    relation = data.get("base_model_relation")
    quantized_by = data.get("quantized_by")
    return ModelCard(
        source=source,
        base_models=tuple(b.strip() for b in bases if b.strip()),
        relation=relation.strip().lower() if isinstance(relation, str) and relation.strip() else None,
        quantized_by=quantized_by.strip() if isinstance(quantized_by, str) and quantized_by.strip() else None,
    )


def parse_card(data: bytes, source: str = CARD_FILE) -> ModelCard | None:
    """A README.md's front matter, or None when it has none (or none that closes within CARD_LIMIT)."""
    # huggingface_hub's own rule for where the YAML block is and how it is read.
    from huggingface_hub import ModelCard as HubModelCard
    from huggingface_hub.repocard import REGEX_YAML_BLOCK

    text = data[:CARD_LIMIT].decode("utf-8", errors="replace")
    if not REGEX_YAML_BLOCK.search(text):
        return None
    try:
        card = HubModelCard(text, ignore_metadata_errors=True)
    except Exception as exc:  # yaml's errors and huggingface_hub's ValueError for a block that is not a mapping
        raise FormatError(f"{source}: front matter is not valid YAML metadata ({type(exc).__name__}: {str(exc).splitlines()[0]})") from None
    return card_from_metadata(card.data.to_dict(), source)
