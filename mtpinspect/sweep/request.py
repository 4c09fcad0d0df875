"""What a chat app sends for a model: the chat endpoint through the model's template, or raw text.

A chat app (llama-server's web UI, LM Studio, Ollama, Open WebUI) sends messages to
``/v1/chat/completions``; llama-server formats them with the GGUF's ``tokenizer.chat_template``, and with
its own ChatML template when the GGUF has none (``/props`` then shows ``<|im_start|>`` ... as the
template). A model never trained on ChatML would then be measured on a wrapper it never saw, so for a
GGUF without a template the app's way is raw text (``/completion``), and the reason is said.

Templates with a reasoning block that can be switched (Qwen3's, GLM-4.5's and later) switch it with the
``enable_thinking`` template variable, which llama-server takes per request in ``chat_template_kwargs``.
Apps leave thinking on, so ``auto`` is on; acceptance in a thinking block and in the answer differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtpinspect.errors import MtpinspectError, UsageError
from mtpinspect.formats.gguf import read_gguf_header
from mtpinspect.sources.reader import LocalFileReader
from mtpinspect.vocabulary import Reasoning, RequestKind

TEMPLATE_KEY = "tokenizer.chat_template"
# The template variable that switches the reasoning block (Qwen3's and GLM's templates test it).
REASONING_SWITCH = "enable_thinking"
SERVER_FALLBACK = "llama-server's ChatML fallback (<|im_start|>role ... <|im_end|>): the GGUF has no tokenizer.chat_template"
MODEL_TEMPLATE = "the GGUF's tokenizer.chat_template"
ENGINE_TEMPLATE = "the engine's chat template for the model"


@dataclass(frozen=True)
class RequestWay:
    """How every request of a sweep is sent, and why (stated in the report)."""

    kind: RequestKind  # chat or completion, never auto
    template: str | None  # whose chat template formats the prompt (None: raw completion, no template)
    reasoning: Reasoning | None  # on/off for a template with a reasoning switch; None when there is none to set
    why: str

    @property
    def sent(self) -> str:
        """The way in words: endpoint, template, reasoning."""
        if self.template is None:
            return "raw completion (/completion), no chat template"
        reasoning = f", reasoning {self.reasoning.value}" if self.reasoning is not None else ""
        return f"chat (/v1/chat/completions) through {self.template}{reasoning}"

    def chat_extra(self) -> dict[str, Any]:
        """The request fields that set the reasoning switch (none when the template has no switch)."""
        if self.reasoning is None:
            return {}
        return {"chat_template_kwargs": {REASONING_SWITCH: self.reasoning is Reasoning.on}}


def model_template(model: Path) -> str | None:
    """The GGUF's chat template, or None (also for a file whose header cannot be read: the server will say)."""
    try:
        value = read_gguf_header(LocalFileReader(model)).get(TEMPLATE_KEY)
    except MtpinspectError:
        return None
    return value if isinstance(value, str) and value.strip() else None


def resolve(template: str | None, requested: RequestKind, reasoning: Reasoning) -> RequestWay:
    """The way requests are sent for a model whose chat template is ``template`` (None: it has none)."""
    switch = template is not None and REASONING_SWITCH in template
    if requested is RequestKind.auto:
        if template is None:
            kind = RequestKind.completion
            why = ("auto: the GGUF has no chat template (tokenizer.chat_template), so llama-server would wrap chat "
                   "messages in its ChatML fallback, which this model was never trained on; raw completion is "
                   "what the model continues (--request chat measures the ChatML way anyway)")
        else:
            kind = RequestKind.chat
            why = "auto: the GGUF carries a chat template, and a chat app sends messages through it"
    else:
        kind = requested
        why = f"--request {requested.value}"
    if kind is RequestKind.completion:
        if reasoning is not Reasoning.auto:
            raise UsageError(f"--reasoning {reasoning.value}: goes with chat requests (--request chat); raw completion has no template to switch")
        return RequestWay(kind, None, None, why)
    if not switch:
        if reasoning is not Reasoning.auto:
            raise UsageError(f"--reasoning {reasoning.value}: the model's chat template has no reasoning switch ({REASONING_SWITCH})")
        return RequestWay(kind, MODEL_TEMPLATE if template else SERVER_FALLBACK, None, why + "; no reasoning block to switch")
    chosen = Reasoning.on if reasoning is Reasoning.auto else reasoning
    note = "reasoning on (as apps leave it)" if reasoning is Reasoning.auto else f"reasoning {chosen.value}"
    return RequestWay(kind, MODEL_TEMPLATE, chosen, f"{why}; {note} ({REASONING_SWITCH} in chat_template_kwargs)")


def resolve_engine(requested: RequestKind, reasoning: Reasoning) -> RequestWay:
    """The way requests go to a server the sweep does not read the model of (--engine, --serve, --endpoint):
    raw completion (/v1/completions) unless --request chat, which sends /v1/chat/completions through the
    engine's own template for the model; --reasoning on/off sets the template's ``enable_thinking`` in
    ``chat_template_kwargs`` (vLLM, SGLang and llama-server pass it to the template), auto leaves the
    template's default."""
    if requested is not RequestKind.chat:
        if reasoning is not Reasoning.auto:
            raise UsageError(f"--reasoning {reasoning.value}: goes with chat requests (--request chat)")
        return RequestWay(RequestKind.completion, None, None,
                          "--engine/--serve/--endpoint: raw completion unless --request chat")
    chosen = None if reasoning is Reasoning.auto else reasoning
    note = "; the template's own reasoning default" if chosen is None else f"; reasoning {chosen.value} ({REASONING_SWITCH} in chat_template_kwargs)"
    return RequestWay(RequestKind.chat, ENGINE_TEMPLATE, chosen, "--request chat" + note)
