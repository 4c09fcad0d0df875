"""The long-prompt class (sweep --long-prompt TOKENS): prompts of thousands of tokens, as an agent or a
"summarise this document" request sends them.

A long prompt costs time before the first token, and MTP adds to it: llama.cpp asks for the logits at every
prompt position when MTP is on (the MTP head needs the hidden state of each). The class measures that cost
(time to first token, prompt tok/s) beside the decode speed. The prompts are built from the built-in
prompts, repeated, so no download is needed and every run sends the same text.
"""

from __future__ import annotations

from mtpinspect.sweep.prompts import Prompt, load_builtin

LONG_CLASS = "long"
# Characters per token of English text and code in common BPE vocabularies: the target is approximate, and
# the report shows the prompt's measured length (timings.prompt_n).
CHARS_PER_TOKEN = 4
_CODE_CLASS = "code"
_TASKS = (
    ("long-summarise", "Summarise the document above in three sentences.\n\nSummary:", False),
    ("long-code", "Rewrite the code above with type hints and docstrings.\n\n```python\n", True),
)


def long_prompts(tokens: int) -> list[Prompt]:
    """Two prompts of about ``tokens`` tokens: a document to summarise and code to edit."""
    # ASCII texts only: the characters-per-token estimate holds for English and code, not for Japanese.
    builtin = [p for p in load_builtin() if p.text.isascii()]
    code = [p.text for p in builtin if p.prompt_class == _CODE_CLASS]
    prose = [p.text for p in builtin if p.prompt_class != _CODE_CLASS]
    prompts = []
    for prompt_id, task, is_code in _TASKS:
        body = _fill((code or prose) if is_code else (prose or code), tokens * CHARS_PER_TOKEN - len(task))
        prompts.append(Prompt(id=prompt_id, prompt_class=LONG_CLASS, text=body + "\n\n" + task))
    return prompts


def _fill(texts: list[str], chars: int) -> str:
    """The texts in turn, repeated until ``chars`` characters, cut at a text's end (never mid-word)."""
    parts: list[str] = []
    length = 0
    while length < chars:
        for text in texts:
            parts.append(text.strip())
            length += len(parts[-1]) + 2
            if length >= chars:
                break
    return "\n\n".join(parts)
