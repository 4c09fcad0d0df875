"""The catalogue of messages a pasted text may hold, each with who prints it, where that is, and what it means.

Users paste fragments more often than whole logs: a traceback's last lines, one error line from an
app's window, a shell's ``Aborted (core dumped)`` under the command that ran, a usage listing. So a
text is read by what its lines say, not by the shape of a whole log: every line is matched against
:data:`CATALOGUE`, and a text is refused only when not one line matches anything (nor a metrics line,
formats.py). Each :class:`Message` names

- ``engine``/``app``: who prints it (None: any engine; a line such as a Python exception tells no engine
  by itself, its traceback's module paths do);
- ``meaning``: what the line says (:class:`Meaning`): who wrote the text, MTP on or off, why MTP failed,
  an engine gap, an app's own refusal, a model without a head, ...;
- ``source``: the source file (at the pinned llama.cpp, or the engine's repository) or the public
  thread the wording comes from;
- ``cause`` and ``remedy`` (optional): the cause code the line alone establishes, and what works instead,
  in the terms of whoever printed it.

Patterns are tried only on lines holding one of their ``keys`` literally, so a large log costs one
scan for all keys (:func:`scan`). Which engine wrote a text and whether MTP was on are inferred from
every hit together (:func:`writer`, :class:`Scan`). Message texts the log formats' own tables read
(metrics lines, settings) stay in formats.py; the MTP-sign lines of run_facts.py are hits here.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property

from mtpinspect.logread.drafters import TABLE as DRAFTER_TABLE
from mtpinspect.logread.formats import strip_prefixes
from mtpinspect.logread.run_facts import LogApp, MtpUse
from mtpinspect.logread.voices import (
    MAX_LINE,
    anothers_line,
    content_lines,
    engine_command,
    line_pieces,
    lines_with,
    merged_lines,
    pipe_row,
    prompt_command,
    transfer_lines,
    without_operands,
    without_transfer,
)
from mtpinspect.vocabulary import Engine, Word


class Meaning(Word):
    """What a line says."""

    writer = "writer"  # who wrote the text (a module path, a banner, a command), nothing about MTP itself
    mtp_on = "mtp on"  # the run had MTP on (a flag, a drafter's own line, an MTP model class)
    speculation = "speculation"  # a speculative method was configured (not necessarily MTP)
    mtp_failure = "mtp failure"  # why the MTP configuration failed (the telling line of a failed start)
    engine_gap = "engine gap"  # the engine or backend cannot run MTP for this model or setting
    app_refusal = "app refusal"  # a desktop app's own error about speculative decoding
    no_head = "no head"  # the model loaded has no MTP layers
    exception = "exception"  # a Python exception line: its text and traceback say more
    traceback = "traceback"  # a Python traceback's first line: its frames follow (its exception line may be cut off)
    usage = "usage"  # a usage listing (the build's --spec-type values)
    engine_death = "engine death"  # the engine's scheduler or worker died (its own line, whatever killed it)
    layout = "layout"  # the model's block layout as llama.cpp's loader prints it (block count, nextn layers, a missing tensor)
    memory = "memory"  # the engine could not allocate a buffer (out of memory while it sets up a model or a context)
    past_config = "past config"  # the run got past its configuration: a model loading, a graph capture, the server serving


@dataclass(frozen=True)
class Message:
    name: str
    meaning: Meaning
    keys: tuple[str, ...]
    pattern: re.Pattern[str]
    source: str
    means: str
    engine: Engine | None = None
    app: LogApp | None = None
    mtp: MtpUse | None = None  # what the line shows of MTP use (an MTP failure shows it was on)
    cause: str | None = None  # the cause code the line alone establishes (a key of causes.CAUSES)
    remedy: str | None = None  # what works instead, in the words of whoever printed it
    confidence: float = 0.85  # of the cause, where the line establishes it (lower where the words allow two readings)
    on_path: bool = False  # the line itself is on the speculative path (a failure of the draft context): its own tie
    names_writer: bool = False  # the line names the program that printed it (argparse's "prog: error:"): whose it is
    raw: bool = False  # matched on the line as printed, its prefixes kept (the prefix says who printed it)
    words_only: bool = False  # matched with the files, paths and branches the line names blanked (voices.without_operands)
    # a flag only an engine's command sets: on a shell prompt whose command runs no engine (voices.engine_command), the
    # flag is that program's own ("$ python report.py --mtp-export")
    engine_flag: bool = False
    # said only in an engine's or app's voice: a line another program's own tag names (voices.anothers_line: a mail
    # client's "mailsync[2211]: ERROR failed to load draft model ...") is that program's sense of the words, and a row
    # of a table drawn with pipes (voices.pipe_row) is a poster's summary of runs, not a message
    voiced: bool = False
    # How much the line says about who wrote the text (Scan.writer): 3 an engine's own line (its log prefix, module
    # path, command, metrics words), 2 the names of its code (a class, a config key), 1 a mention of its name.
    weight: int = 3


@dataclass(frozen=True)
class Seen:
    """A line that meant something, as reports show it."""

    line: int  # 1-based line number in the text
    meaning: Meaning
    means: str
    source: str
    engine: Engine | None


@dataclass(frozen=True)
class Hit:
    message: Message
    line: str  # the whole line, stripped
    number: int  # 1-based line number in the text
    match: re.Match[str] = field(compare=False)

    def seen(self) -> Seen:
        m = self.message
        return Seen(self.number, m.meaning, m.means, m.source, m.engine)


def _m(name: str, meaning: Meaning, keys: tuple[str, ...], pattern: str, source: str, means: str, **kw: object) -> Message:
    return Message(name, meaning, keys, re.compile(pattern), source, means, **kw)  # type: ignore[arg-type]


_LLAMA = Engine.llama_cpp
_VLLM = Engine.vllm
_SGLANG = Engine.sglang
_ON = MtpUse.on

# What works instead of an engine's MTP path that fails for a model, backend or setting (each engine's terms).
_GAP_REMEDY = {
    _VLLM: ("an engine gap, not the head: use a vLLM release whose MTP drafter supports this model and setting (its "
            "--speculative-config method for the model's family), report the traceback to vLLM, and serve without "
            "--speculative-config meanwhile"),
    _SGLANG: ("an engine gap, not the head: use the --speculative-algorithm SGLang supports for this model (NEXTN/EAGLE "
              "for DeepSeek, GLM and Qwen3-Next MTP), a newer SGLang, or serve without speculative decoding; report the "
              "traceback to SGLang"),
    None: ("an engine gap, not the head: a newer engine release or the method it supports for this model; report the "
           "traceback; serve without speculative decoding meanwhile"),
}


def gap_remedy(engine: Engine | None) -> str:
    """What works instead when the engine's MTP path fails (its terms; llama.cpp's crash advice is diagnosis/failures.py's)."""
    return _GAP_REMEDY.get(engine if engine in _GAP_REMEDY else None, _GAP_REMEDY[None])


# "spec " and the function's name right-aligned in 12 characters (cut to 12): the padding is part of the mark.
_SPEC_TAG = r"^spec (?:" + "|".join(rf" {{{12 - n}}}\w{{{n}}}" for n in range(1, 13)) + r"):\s"

# A frame's name in a call chain: dotted or namespaced (eagle_worker_v2.verify, llama_context::synchronize), with an
# underscore (llama_get_embeddings_pre_norm), or called (verify()). No nested repetition: linear on any line.
_FRAME_NAME = (r"(?:[A-Za-z_~]\w{0,120}(?:(?:::|\.)[A-Za-z_~]\w{0,120}){1,8}(?:\(\))?|[A-Za-z_~][A-Za-z0-9]{0,60}_\w{1,120}(?:\(\))?|"
               r"[A-Za-z_~]\w{0,120}\(\))")
CALL_CHAIN = "call chain"
KERNEL_LIMIT = "kernel limit"

CATALOGUE: tuple[Message, ...] = (
    # -- llama.cpp: why MTP failed (common/arg.cpp, common/speculative.cpp, src/llama-context.cpp, src/models/*,
    # at the pinned commit 0c1e570 unless said) ------------------------------------------------------------
    _m("rejected spec type", Meaning.mtp_failure, ("unknown speculative",),
       r"unknown speculative (?:decoding )?type", "common/speculative.cpp:2256 (\"unknown speculative type: \"); "
       "before PR #22673 common/arg.cpp's \"unknown speculative decoding type without draft model\"",
       "llama-server rejects the --spec-type value", engine=_LLAMA),
    _m("argument error", Meaning.mtp_failure, ("error while handling argument",),
       r"error while handling argument", "common/arg.cpp:873", "llama.cpp rejects a command-line argument", engine=_LLAMA),
    _m("MTP flag unknown", Meaning.mtp_failure, ("invalid argument", "unknown argument"),
       r"(?:invalid|unknown) argument:?\s+(?P<flag>--spec-type|--spec-draft-n-max|-mtp|--multi-token-prediction|--mtp\S*)\b",
       "common/arg.cpp:827 (\"error: invalid argument: %s\")",
       "the build does not know the MTP flag itself: it predates MTP support", engine=_LLAMA,
       cause="BUILD_WITHOUT_MTP"),
    _m("no MTP layers", Meaning.mtp_failure, ("doesn't contain MTP layers",),
       r"doesn't contain MTP layers", "src/llama-context.cpp:3883 (\"context type MTP requested but model doesn't "
       "contain MTP layers\")", "the model loaded for the MTP context has no nextn layers", engine=_LLAMA, mtp=_ON),
    _m("MTP context failed", Meaning.mtp_failure, ("MTP context", "MTP draft context", "MTP speculative context"),
       r"failed to (?:create|measure|initialize|init) (?:the )?MTP (?:draft |speculative )?context",
       "common/speculative.cpp:2552, 2564; llama.rn (PocketPal) words it \"failed to create MTP draft context\"; "
       "ik_llama.cpp's server: \"failed to initialize MTP speculative context\"",
       "llama.cpp could not create the MTP draft context (no nextn layers in the model, or no memory for it)",
       engine=_LLAMA, mtp=_ON),
    # llama_init_from_model's checks of a context's parameters, before any memory is asked for: a context refused for
    # what it was given. Whose context, the lines after say (a draft context's failure: diagnosis/failures.py); alone it
    # ties nothing to MTP (rules_run.py: a generic failure).
    _m("context parameters refused", Meaning.mtp_failure, ("cannot both be zero", "requires flash_attn"),
       r"\bn_batch and n_ubatch cannot both be zero\b|\bn_ctx and model->hparams\.n_ctx_train cannot both be zero\b|"
       r"\bV cache quantization requires flash_attn\b",
       "src/llama-context.cpp (llama_init_from_model: \"n_batch and n_ubatch cannot both be zero\", \"n_ctx and "
       "model->hparams.n_ctx_train cannot both be zero\", \"V cache quantization requires flash_attn\"); the same in "
       "ik_llama.cpp", "llama.cpp refused a context's parameters (a batch or context size of 0, a quantized V cache "
       "without flash attention)", engine=_LLAMA),
    # Any drafter's context (MTP's, a -md draft model's, EAGLE3's), in the words of llama.cpp's forks: ik_llama.cpp's
    # common/speculative.cpp prints "failed to create draft context" as a whole line (LOG_ERR, no reason after it).
    # The whole line, not the words (an editor's "failed to create draft context for post 12: ..." is its own), bare
    # or after llama.cpp's prefixes: a level letter, a snake_case function ("common_speculative_init: "), or the
    # server's tag ("srv    init: "); a program's one-word tag ("sync: ") is not llama.cpp's.
    _m("draft context failed", Meaning.mtp_failure, ("draft context", "speculative context"),
       r"^(?:[EWI] )?(?:(?:srv|slot|spec)\s{1,12}\w{1,40}:\s{1,12}|[a-z]\w{0,40}_\w{1,40}:\s{1,12})?"
       r"failed to (?:create|initialize|init) (?:the )?(?:draft|speculative) context\.?\s*$",
       "ik_llama.cpp common/speculative.cpp (\"failed to create draft context\")",
       "the engine could not create the drafter's context (its parameters refused, or no memory for it)",
       engine=_LLAMA),
    _m("draft head load error", Meaning.mtp_failure, ("error loading model",),
       r"error loading model: .*(?:\bdraft\b|\bMTP\b|\bmtp\b|nextn)",
       "src/llama-model.cpp's loader (\"error loading model: %s\"), forks' draft-head loaders",
       "the loader fails on the draft / MTP head", engine=_LLAMA, mtp=_ON),
    # print_info's count, or the loader's metadata dump giving the GGUF's nextn layer count as 0.
    _m("no nextn layers", Meaning.no_head, ("n_layer_nextn", "nextn_predict_layers"),
       r"n_layer_nextn\s*=\s*0\b|\.nextn_predict_layers\s+u32\s+=\s+0\b",
       "src/llama-model.cpp:2236 (print_info); src/llama-model-loader.cpp (the metadata dump: \"- kv N: "
       "<arch>.nextn_predict_layers u32 = 0\")", "the model loaded has no MTP (nextn) layers", engine=_LLAMA),
    # An engine's words that the checkpoint has no MTP head because it ships another drafter in its place (vLLM PR
    # #52165, vllm/config/speculative.py: "<model> ships a DSpark drafter rather than an MTP head, so method='mtp' cannot
    # load its weights. Use method='dspark' ..."): what it says about the model (the loader's KeyError on the head's
    # weights is the consequence).
    _m("another drafter, not an MTP head", Meaning.no_head, ("rather than", "instead of"),
       r"(?i)\b(?:rather than|instead of)\s+(?:an? )?(?:MTP|NextN|multi[- ]token[- ]prediction)\s+(?:head|layers?|weights|"
       r"modules?|blocks?)\b",
       "vllm/config/speculative.py (PR #52165: \"ships a DSpark drafter rather than an MTP head, so method='mtp' cannot "
       "load its weights\")", "the checkpoint ships another drafter where an MTP head would be: it has no MTP head"),
    _m("sidecar width", Meaning.mtp_failure, ("MTP input row width",), r"MTP input row width",
       "common/speculative.cpp:1377", "the MTP head's input width differs from the target's", engine=_LLAMA, mtp=_ON),
    _m("failed to add token", Meaning.mtp_failure, ("failed to add token",), r"failed to add token",
       "common/common.cpp:2158 (GGML_ABORT in common_batch_add)", "a draft batch overflowed", engine=_LLAMA),
    # The graph builder's assert on the MTP block's own tensors (eh_proj, enorm, hnorm), which the loader made optional:
    # the GGUF has no MTP block's weights.
    _m("MTP block missing", Meaning.mtp_failure, ("MTP block missing",),
       r"MTP block missing nextn", "src/models/deepseek32.cpp:507 (GGML_ASSERT(layer.nextn.eh_proj && \"MTP block missing "
       "nextn.eh_proj\"))", "the GGUF lacks an MTP block's tensors", engine=_LLAMA, mtp=_ON),
    # The loader's failure on one nextn tensor: the GGUF lacks it, or the loader requires a tensor the checkpoint shares
    # with the trunk (embed_tokens, shared_head_head: llama.cpp#16359); rules_loader.py reads it against the layout.
    _m("missing nextn tensor", Meaning.mtp_failure, ("missing tensor '",),
       r"missing tensor '(?P<name>(?:blk\.(?P<block>\d{1,5})\.)?nextn\.(?P<tensor>[\w.]{1,100}))'",
       "src/llama-model-loader.cpp:1159 (\"missing tensor '%s'\"), for a blk.%d.nextn.* tensor the architecture's loader "
       "requires (src/llama-arch.cpp:589 (\"blk.%d.nextn.embed_tokens\"))", "llama.cpp's loader lacks a tensor of the GGUF's MTP (nextn) block",
       engine=_LLAMA, mtp=_ON),
    # The same requirement as a model's own assert that an MTP block's tensor is there (a pointer tested for presence:
    # "GGML_ASSERT(layer.nextn.embed_tokens || model.tok_embd)", "GGML_ASSERT(layer.nextn.eh_proj != nullptr)"), as the
    # graph builders of llama.cpp's forks check before drafting (src/models/*.cpp; upstream's draft-only handling since
    # PR #28097 makes the shared ones optional). A check of a tensor's shape ("nextn.eh_proj->ne[0] == n_embd") is not one.
    _m("nextn tensor assert", Meaning.mtp_failure, ("GGML_ASSERT",),
       r"GGML_ASSERT\([^\n]{0,200}?\bnextn\.(?P<asserted>\w{1,100})\s{0,4}(?:\|\||&&|\)|!=\s{0,4}(?:nullptr|NULL)\b)",
       "ggml's GGML_ASSERT(x) (\"%s:%d: GGML_ASSERT(%s) failed\") in a model's graph builder (src/models/*.cpp of llama.cpp's "
       "forks) on a layer.nextn.* tensor's presence", "llama.cpp's model code requires a tensor of the MTP (nextn) block",
       engine=_LLAMA, mtp=_ON),
    # A listing of the GGUF's tensors (the loader's "- tensor split" lines, gguf-dump's rows) naming an MTP block's
    # tensor: the file holds that block (rules_loader.py).
    _m("nextn tensor listed", Meaning.layout, ("nextn.",),
       r"(?:- tensor(?: split)?\s{0,4}\d{1,6}:\s{1,40}|\|\s{0,4}[A-Z][\w]{0,10}\s{0,8}\|\s{0,4})"
       r"blk\.(?P<listed_block>\d{1,5})\.nextn\.(?P<listed>[\w.]{1,100})",
       "src/llama-model-loader.cpp:748 (\"%s: - tensor split %2d: %32s\"); gguf-py/gguf/scripts/gguf_dump.py:66 (rows \"N: COUNT | "
       "SHAPE | TYPE | NAME\")", "the GGUF's tensor listing names an MTP (nextn) block's tensor", engine=_LLAMA),
    # The loader's failure on one block's trunk tensor (not a nextn.* one: "missing nextn tensor" above), and the layout
    # lines the paste may show around it; rules_loader.py reads them together (is block N the GGUF's MTP block?).
    _m("missing block tensor", Meaning.layout, ("missing tensor 'blk.",),
       r"missing tensor 'blk\.(?P<block>\d{1,5})\.(?P<tensor>(?!nextn\.)[\w.]{1,100})'",
       "src/llama-model-loader.cpp:1159 (\"missing tensor '%s'\"), for a required tensor the GGUF lacks",
       "llama.cpp's loader lacks a tensor of one block of the GGUF", engine=_LLAMA),
    # The loader's count of the tensors it created against the GGUF's: more in the file than the build's loader made
    # for the architecture (src/llama-model-loader.cpp done_getting_tensors: "%s: wrong number of tensors; expected %d,
    # got %d", the file's count first). An MTP block a build does not load is such tensors (rules_loader.py).
    _m("tensor count mismatch", Meaning.layout, ("wrong number of tensors",),
       r"\bwrong number of tensors; expected (?P<expected>\d{1,7}), got (?P<created>\d{1,7})\b",
       "src/llama-model-loader.cpp (done_getting_tensors: \"%s: wrong number of tensors; expected %d, got %d\")",
       "llama.cpp's loader created fewer (or more) tensors than the GGUF holds", engine=_LLAMA),
    _m("model layout", Meaning.layout, ("block_count", "nextn_predict_layers", "n_layer", "general.name", "loaded meta data",
                                        "loading model '"),
       r"\.block_count\s+u32\s+=\s+(?P<blocks>\d{1,5})\b|\.nextn_predict_layers\s+u32\s+=\s+(?P<nextn>\d{1,3})\b|"
       r"print_info: n_layer_all\s+=\s+(?P<all>\d{1,5})\b|print_info: n_layer\s+=\s+(?P<trunk>\d{1,5})\b|"
       r"general\.name\s+str\s+=\s+(?P<name>\S.{0,200})|"
       r"(?:loaded meta data with \d+ key-value pairs and \d+ tensors from |loading model ')(?P<file>[^'\s]{1,400})",
       "src/llama-model-loader.cpp (the metadata dump: \"- kv N: <arch>.block_count u32 = ...\"), src/llama-model.cpp "
       "print_info (n_layer, n_layer_all), tools/server (\"loading model '%s'\")",
       "the model's block layout as llama.cpp's loader prints it", engine=_LLAMA),
    # The engine could not allocate a buffer while it sets up a context (the compute buffers, the KV cache) or a model's
    # weights: the device is out of memory. Whose context it was, the lines before say (rules_run.py).
    _m("allocation failed", Meaning.memory, ("failed to allocate", "out of memory", "Malloc failed",
                                             "ErrorOutOfDeviceMemory"),
       r"\bfailed to allocate (?:compute (?:pp |tg )?buffers|buffer for kv cache|\w{1,20} buffer of size)\b|"
       r"\b(?:cuda|hip|musa)Malloc failed: out of memory\b|\bErrorOutOfDeviceMemory\b",
       "src/llama-context.cpp:684, 702 (\"failed to allocate compute pp buffers\", \"... tg buffers\"), "
       "src/llama-kv-cache.cpp:288 (\"failed to allocate buffer for kv cache\"); ggml's allocator (\"failed to allocate %s "
       "buffer of size %zu\") and CUDA backend (\"allocating %.2f MiB on device %d: cudaMalloc failed: %s\")",
       "the engine ran out of device memory allocating a buffer", engine=_LLAMA),
    _m("NextN graph missing", Meaning.mtp_failure, ("graph not implemented",), r"NextN graph not implemented",
       "src/models/glm5-next.cpp:190", "this build has no MTP graph for the architecture", engine=_LLAMA, mtp=_ON),
    _m("nextn layers required", Meaning.mtp_failure, ("requires nextn_predict_layers",),
       r"requires nextn_predict_layers > 0", "ik_llama.cpp and MTP branches of llama.cpp",
       "the model has no nextn layers for MTP", engine=_LLAMA, mtp=_ON),
    _m("assistant without ctx_other", Meaning.mtp_failure, ("requires ctx_other",),
       r"Gemma4Assistant requires ctx_other", "src/llama-context.cpp:150",
       "a Gemma 4 assistant drafter's context was created without the target's", engine=_LLAMA, mtp=_ON),
    _m("vector subscript", Meaning.mtp_failure, ("invalid vector subscript",), r"invalid vector subscript",
       "MSVC's std::out_of_range, caught by src/llama-model.cpp's loader (llama.cpp#22337, #24795)",
       "the loader indexed past a layer list (Windows builds)", engine=_LLAMA),
    # ik_llama.cpp refuses the MTP stage per request when its server runs without MTP; its maintainer: it runs
    # without MTP when the GGUF has no MTP layer (ik_llama.cpp#2004). Read for what it says about the model.
    _m("MTP stage without MTP support", Meaning.mtp_failure, ("MTP speculative stage requested",),
       r"MTP speculative stage requested, but the server was not started with MTP support",
       "ik_llama.cpp's server (send_error; ikawrakow in ik_llama.cpp#2004: printed when the model has no MTP layer)",
       "ik_llama.cpp runs without MTP: the GGUF loaded has no MTP layer (or the server was started without -mtp)",
       engine=_LLAMA, mtp=_ON, cause="MTP_WEIGHTS_MISSING", confidence=0.7,
       remedy=("run `mtpinspect check FILE.gguf`: without nextn tensors this GGUF has no MTP layer (a fine-tune or "
               "conversion dropped it): use one that keeps it; with them, start ik_llama.cpp with -mtp")),
    # An MTP drafter's own architecture (a Gemma 4 assistant, which llama.cpp drafts with as draft-mtp; forks' MTP or
    # NextN heads) that the build's loader does not know: the build predates MTP for it (KoboldCpp 1.114.1 on
    # gemma4-assistant, koboldcpp#2262). Other drafters' architectures (eagle3, dflash) are not MTP's. The name is
    # read whole, at most 100 characters (linear on a long line).
    _m("drafter architecture unknown", Meaning.mtp_failure, ("unknown model architecture",),
       r"unknown model architecture: '(?=[\w.-]{0,100}?(?:assistant|mtp|nextn))(?P<arch>[\w.-]{1,100})'",
       "src/llama-model.cpp:371 (\"unknown model architecture: '\"); the MTP drafter architecture of "
       "src/llama-arch.cpp: gemma4-assistant",
       "the build does not know the drafter's architecture: it predates drafting with it (no MTP graph for it)",
       engine=_LLAMA, mtp=_ON, cause="NO_MTP_GRAPH", confidence=0.8,
       remedy=("use a llama.cpp build (or an app release: KoboldCpp, LM Studio, Ollama) whose loader knows the drafter's "
               "architecture (Gemma 4 assistants: llama.cpp PR #23398 or later); `llama-server -m MAIN.gguf -md DRAFTER.gguf "
               "--spec-type draft-mtp` on the pinned build (mtpinspect runtime build) checks the pair; serve without the "
               "drafter meanwhile")),
    _m("MTP head load failed", Meaning.mtp_failure, ("failed to load MTP head",), r"failed to load MTP head",
       "MTP branches of llama.cpp (server)", "the MTP head file did not load", engine=_LLAMA, mtp=_ON),
    # -- llama.cpp: the run's setup ------------------------------------------------------------------------
    _m("MTP drafter added", Meaning.mtp_on, ("adding speculative implementation 'draft-mtp'", "common_speculative_impl_draft_mtp"),
       r"adding speculative implementation 'draft-mtp'|common_speculative_impl_draft_mtp",
       "common/speculative.cpp:1380 (\"adding speculative implementation 'draft-mtp'\"), 1331 (common_speculative_impl_draft_mtp)",
       "the server set up the MTP drafter", engine=_LLAMA, mtp=_ON),
    # Any drafter set up (common/speculative.cpp: "adding speculative implementation '%s'" for draft-mtp, draft-dflash,
    # draft-eagle3, ngram-*): the server went on to draft; an error before it was survived (a memory-fit probe's).
    _m("drafter added", Meaning.speculation, ("adding speculative implementation",),
       r"adding speculative implementation '[\w-]{1,40}'",
       "common/speculative.cpp:1380 (\"adding speculative implementation '%s'\")", "the server set up a drafter",
       engine=_LLAMA),
    _m("MTP draft context", Meaning.mtp_on, ("creating MTP draft context", "context type MTP requested"),
       r"creating MTP draft context|context type MTP requested", "common/speculative.cpp:2558; src/llama-context.cpp:3883",
       "the server created (or asked for) the MTP draft context", engine=_LLAMA, mtp=_ON),
    _m("MTP statistics", Meaning.mtp_on, ("statistics",), r"statistics\s+(?:draft-)?mtp:",
       "common/speculative.cpp (common_speculative_print_stats)", "drafting statistics of the MTP drafter",
       engine=_LLAMA, mtp=_ON),
    # An app's or binding's own line that speculative decoding is on (a ComfyUI llama-cpp-python node's "[DEBUG]
    # Speculative decoding enabled (type=4) : 0.000s", KLL535/ComfyUI_Simple_Qwen3-VL-gguf#53): the method's own name,
    # which no other software uses for its things, said to be on; "not enabled", "enabled: false" say it is off.
    _m("speculative decoding on", Meaning.speculation, ("ecoding enabled", "ecoding is enabled", "ecoding: enabled",
                                                        "ecoding activated", "ecoding is on"),
       r"(?<!\bnot )(?<!\bno )\b[Ss]peculative[ _-][Dd]ecoding(?: is)?:? (?:enabled|activated|on)\b"
       r"(?!\s{0,4}[:=]\s{0,4}(?:[Ff]alse|[Nn]o|[Oo]ff|0)\b)",
       "an app's or binding's own line (ComfyUI_Simple_Qwen3-VL-gguf: \"Speculative decoding enabled (type=N)\")",
       "speculative decoding was on (an app's or binding's own line)", voiced=True, weight=0),
    # The speculative module's own log lines: "spec <function>: ..." (SPC_INF and its kin), printed only while drafting.
    _m("llama.cpp speculative module", Meaning.speculation, ("spec ",), _SPEC_TAG,
       "common/speculative.cpp:23 (\"spec %12.*s: \")", "a line of llama.cpp's speculative decoding module", engine=_LLAMA),
    # A backtrace frame in the speculative code (gdb's "#12 0x... in common_speculative_draft(...)", or a poster's
    # "#3 common_speculative_state_dflash::draft(...)" without addresses); bounded, linear on a long line.
    _m("speculative frame", Meaning.speculation, ("#",),
       r"^#\d{1,3}\s+(?:0x[0-9a-fA-F]{1,16}\s+(?:in\s+)?)?[\w:~]{0,200}?(?:speculative|(?<![A-Za-z])mtp(?![a-z])|"
       r"(?<![A-Za-z])nextn)[\w:~]{0,200}\s*\(",
       "common/speculative.cpp (common_speculative_*), src/llama-context.cpp (MTP's context functions), in backtraces",
       "a backtrace frame in llama.cpp's speculative / MTP code", engine=_LLAMA),
    # A decode of the draft context that fails while serving: the engine's draft path breaks at run time.
    # Forks tag the line with their drafting function instead ("draft: llama_decode returned -1", "mtp_draft: ...").
    _m("draft decode failed", Meaning.engine_gap, ("llama_decode", "llama_process",
                                                   "failed to decode draft batch", "failed to process speculative batch"),
       r"\bllama_(?:decode|process)(?:\[\d+\]|\(ctx_dft\))[^\n]{0,120}?\b(?:returned|failed)\b|failed to decode draft batch|"
       r"failed to process speculative batch|"
       r"^(?:\w{0,40}_)?(?:draft(?:er)?|mtp|spec(?:ulative)?)(?:_\w{0,40})?:\s+llama_(?:decode|process)\b[^\n]{0,120}?\b(?:returned|failed)\b",
       "common/speculative.cpp:300 (\"failed to decode draft batch, ret = \"), 397 (\"llama_process[%d] returned \"), 660 "
       "(\"llama_process(ctx_dft) failed rc=\"); tools/server/server-context.cpp:3732 (\"failed to process speculative "
       "batch\"); builds and forks with llama_decode (\"llama_decode[N] returned\", \"llama_decode(ctx_dft) ... failed\"; spiritbuun's fork: "
       "\"draft: llama_decode returned -1\")",
       "a decode on the draft context failed while serving", engine=_LLAMA, on_path=True),
    # The target's decode path failing (no logits where the sampler asks, a batch the context cannot place): a crash
    # on the speculative path only where something else ties the run to it (rules_message.py).
    # llama_decode's own wrapper says it too ("llama_decode: failed to decode, ret = 1": 1 is no KV slot for the batch,
    # a context full with the draft's tokens on top).
    _m("decode path error", Meaning.engine_gap, ("invalid logits id", "failed to initialize batch", "failed to decode, ret ="),
       r"\bllama_get_logits_ith: invalid logits id\b|\bdecode: failed to initialize batch\b|"
       r"^llama_decode: failed to decode, ret = -?\d{1,4}\b",
       "src/llama-context.cpp:957 (\"%s: invalid logits id %d, reason: %s\"), src/llama-context.cpp:1769 (\"%s: failed to "
       "initialize batch\"); llama_decode's wrapper (src/llama.cpp in 2024 builds, src/llama-context.cpp since: \"%s: failed "
       "to decode, ret = %d\")",
       "llama.cpp's decode failed (no logits for the sampled row, or a batch the context cannot place)", engine=_LLAMA),
    # llama-server's per-request and /slots speculative settings ("speculative.n_max", "speculative.p_min").
    _m("llama-server speculative setting", Meaning.speculation, ("speculative.",),
       r"\bspeculative\.(?:n_max|n_min|p_min|types?|ngram_\w{1,40})\b",
       "tools/server/server-schema.cpp:200 (\"speculative.n_max\"), tools/server/server-schema.cpp:208 (\"speculative.p_min\")",
       "a speculative setting of llama-server's request or slot", engine=_LLAMA),
    # A fork or later build telling that a speculative flag was renamed ("legacy speculative option '--multi-token-prediction'
    # is disabled; use --spec-type mtp:..."): the build drafts, with another spelling. Where the renamed flag is the one
    # that names the drafter (MTP, the spec type), the command asks for MTP in words this build spells otherwise.
    _m("speculative flag renamed", Meaning.mtp_failure, ("disabled", "removed", "deprecated", "renamed", "replaced"),
       r"(?i:^(?=[^\n]{0,600}?(?:--spec-type|\bmtp\b|-mtp\b|multi-token|draft-mtp))(?:[^\n]{0,400}?)(?:option|argument|flag)"
       r"(?:\s{1,4}['\"`]?--?[\w-]{1,60}['\"`]?)?\s{1,4}(?:is|has been|was)\s{1,4}"
       r"(?:disabled|removed|deprecated|renamed|replaced)\b[^\n]{0,200}?\b(?:use|instead|replaced by)\b[^\n]{0,200}?"
       r"(?:--spec[\w-]{0,40}|--draft[\w-]{0,40}|-md\b|\bmtp\b|draft-mtp|--speculative[\w-]{0,40}))",
       "ik_llama.cpp's server (\"legacy speculative option '%s' is disabled; use --spec-type ...\", after its flags were "
       "unified under --spec-type)",
       "the build drafts, but spells this speculative flag otherwise now (the message names the new spelling)",
       engine=_LLAMA, cause="WRONG_SPEC_TYPE",
       remedy="use the spelling the message names (this build's --spec-type ...); the build itself has speculative decoding"),
    # The same for a draft setting (a draft length, a p-min: "--draft-max: the argument has been removed. use
    # --spec-draft-n-max"): the build is newer than the command (an app or script written for an older one), and the
    # start fails on the setting, not on the drafter's type.
    _m("speculative setting removed", Meaning.mtp_failure, ("disabled", "removed", "deprecated", "renamed", "replaced"),
       r"(?i:(?:option|argument|flag)(?:\s{1,4}['\"`]?--?[\w-]{1,60}['\"`]?)?\s{1,4}(?:is|has been|was)\s{1,4}"
       r"(?:disabled|removed|deprecated|renamed|replaced)\b[^\n]{0,200}?\b(?:use|instead|replaced by)\b[^\n]{0,200}?"
       r"(?:--spec[\w-]{0,40}|--draft[\w-]{0,40}|--speculative[\w-]{0,40}))",
       "common/arg.cpp:4388 (\"the argument has been removed. use --spec-draft-n-max\")",
       "the build is newer than the command: it removed this draft setting and names its new spelling",
       engine=_LLAMA, cause="MTP_FAILED", confidence=0.7,
       remedy=("spell the setting as the message says (--draft-max is now --spec-draft-n-max, --draft-min "
               "--spec-draft-n-min); where an app passes the old flag, update the app or give it the new spelling")),
    # llama.cpp's loader failing, also with a poster's words glued before it ("log below:llama_model_load: ..."): whose
    # line it is; a tensor it lacks is MTP's only where something ties it (a nextn tensor: "MTP block missing").
    _m("llama.cpp loader error", Meaning.writer, ("error loading model:",),
       r"\bllama_model_load: error loading model: |\bllama_load_model_from_file: error loading model: ",
       "src/llama.cpp:375 (\"%s: error loading model: %s\"); src/llama-model-loader.cpp:859 (\"%s: tensor '%s' not found\")",
       "llama.cpp's loader could not load the model", engine=_LLAMA),
    # llama.cpp refuses a draft whose vocabulary size differs from the target's by more than it allows (padding, or
    # another model): whose line it is; what it means is the speculative-error rule's (rules_message.py).
    # Every wording the check has had: examples/speculative/speculative.cpp in 2023 ("%s: error: draft model vocab must
    # match target model to use speculation but target vocab size %d does not match draft vocab size %d", then "token %d
    # content differs - target '%s', draft '%s'"), "closely" from the size tolerance on, LOG_ERR / SPC_DBG since.
    _m("draft vocab size", Meaning.writer, ("vocab must closely match", "vocab must match target", "content differs - target"),
       r"draft model vocab must (?:closely )?match target model|\btoken \d{1,9} content differs - target '",
       "common/speculative.cpp:109 (\"draft model vocab must closely match target model to use speculation but \"); "
       "examples/speculative/speculative.cpp before it (2023: \"draft model vocab must match target model to use "
       "speculation but \", \"token %d content differs - target '%s', draft '%s'\")",
       "llama.cpp's check of a draft model's vocabulary against the target's", engine=_LLAMA),
    # The draft (or mtp-) file's vocabulary is not the target's: made from another model.
    _m("draft vocab mismatch", Meaning.mtp_failure, ("vocabs are not compatible", "vocab type must match"),
       r"the target and draft vocabs are not compatible|draft model vocab type must match target model",
       "common/speculative.cpp:246 (\"the target and draft vocabs are not compatible\"), 248 (\"draft model vocab type "
       "must match target model\")", "the draft file's vocabulary is not the target's: it was made from another model",
       engine=_LLAMA, cause="SIDECAR_MISMATCH", confidence=0.7,
       remedy=("use the draft or mtp- file made from the same model as the target (the same vocabulary; for MTP the mtp- "
               "file converted from the same snapshot: `mtpinspect check MAIN.gguf --mtp-file FILE` compares them)")),
    # Forks name their MTP switches after it: ik_llama.cpp's -mtp / --multi-token-prediction, MTP branches'
    # --mtp-head FILE, --draft-mtp ...; a flag that names MTP on a command line turns it on.
    _m("MTP flag (forks)", Meaning.mtp_on, ("-mtp", "--mtp", "-multi-token"),
       r"(?:^|\s)(?:-mtp|--multi-token-prediction|--mtp(?:-head)?|--draft-mtp)(?:[\s=]|$)",
       "ik_llama.cpp common/common.cpp (-mtp, --multi-token-prediction); MTP branches of llama.cpp (--mtp-head)",
       "MTP switched on with a fork's flag", engine=_LLAMA, mtp=_ON),
    # Any other flag a fork names after MTP (--spec-mtp, --mtp-layers, --use-mtp-draft), on an engine's command or a
    # log's echo of its arguments; another program's command line keeps its own (a report script's --mtp-export).
    _m("MTP-named flag (forks)", Meaning.mtp_on, ("-mtp", "--mtp"),
       # The token is checked whole (a lookahead finds -mtp in it once): "--[\w-]+-mtp[\w-]*" backtracked over every
       # "-mtp" of a long token, about 1 s a 16 KB line.
       r"(?:^|\s)--(?!(?:mtp(?:-head)?|draft-mtp|multi-token-prediction)(?:[\s=]|$))(?=[\w-]*?(?<=-)mtp)[\w-]+(?:[\s=]|$)",
       "MTP branches and forks of llama.cpp name their switches after it (--mtp-head, --draft-mtp, ik_llama.cpp's -mtp)",
       "MTP switched on with a fork's flag", engine=_LLAMA, mtp=_ON, engine_flag=True),
    # llama-cpp-python's server settings for prompt-lookup drafting (llama_cpp/server/settings.py ModelSettings).
    _m("llama-cpp-python draft settings", Meaning.writer, ("draft_model",),
       r"--draft_model(?:_num_pred_tokens)?\b|\bdraft_model_num_pred_tokens\b",
       "llama-cpp-python llama_cpp/server/settings.py (draft_model, draft_model_num_pred_tokens)",
       "llama-cpp-python's server settings (it runs llama.cpp)", engine=_LLAMA),
    _m("Ollama runner died", Meaning.writer, ("llama runner process",),
       r"llama runner process (?:has )?(?:terminated|no longer running)",
       "ollama llm/server.go (\"llama runner process has terminated: %v\")", "Ollama's runner (llama.cpp) exited",
       app=LogApp.ollama, engine=_LLAMA),
    _m("llama.cpp draft flags", Meaning.speculation, ("--draft", "-md", "--model-draft", "--spec-"),
       # each with the value llama.cpp parses (a count for --draft / --draft-max / --draft-min / --draft-n, a file for
       # -md): a web app's own boolean "--draft" (Django's "publish_posts --draft --limit 5") is no drafter's flag
       r"(?:^|\s)(?:--draft(?:-max|-min|-n)?[\s=]{1,4}['\"]?\d|(?:-md|--model-draft)[\s=]{1,4}(?!-)\S|--spec-type[\s=]|"
       r"--spec-draft-[\w-]+[\s=])",
       "common/arg.cpp (--spec-type, --spec-draft-*, -md/--model-draft; --draft-max before the rename)",
       "a speculative decoding flag of llama.cpp", engine=_LLAMA),
    _m("draft-mtp named", Meaning.mtp_on, ("draft-mtp",), r"\bdraft-mtp\b",
       "common/speculative.cpp (the MTP drafter's --spec-type name since PR #22673)",
       "llama.cpp's MTP drafter, by its type name", engine=_LLAMA, mtp=_ON),
    _m("GGUF named", Meaning.writer, ("GGUF", ".gguf"), r"\bGGUF\b|\.gguf\b",
       "GGUF is llama.cpp's file format (ggml/include/gguf.h)", "a text about a GGUF: the llama.cpp family",
       engine=_LLAMA, weight=1),
    _m("draft model load failed", Meaning.mtp_failure, ("draft model",),
       # llama.cpp names the file after it (", '%s'") or ends the line: a mail client's "... draft model for account 2" is not it
       r"failed to load (?:the )?draft model(?:,? ['\"]|\s*$)|\[spec\] failed to measure draft model memory: failed to load model",
       "common/speculative.cpp:2543 (\"failed to load draft model\"); later builds' memory fit: \"[spec] failed to "
       "measure draft model memory: failed to load model\" (not in the pinned sources)",
       "the draft (or mtp-) model did not load", engine=_LLAMA),
    # Not in the pinned llama.cpp: llama-server's memory fitting (load_model, builds after the pin) warns it and
    # goes on; the draft usually loads after it. A sign of drafting, not a failure.
    _m("draft memory not measured", Meaning.speculation, ("[spec] failed to measure",),
       r"\[spec\] failed to measure draft model memory",
       "tools/server/server-context.cpp's load_model in llama.cpp builds after the pinned one (a warning of the memory "
       "fit; not in the pinned sources)", "llama-server could not measure the draft model's memory while fitting "
       "(a warning: the draft usually loads after it)", engine=_LLAMA),
    _m("spec-type listing", Meaning.usage, ("--spec-type",), r"^\s*--spec-type\s+\[?[a-z0-9][a-z0-9|,-]*\]?",
       "common/arg.cpp:4249 (the usage text printed after a rejected argument)",
       "the build's own list of --spec-type values: without draft-mtp the build has no MTP", engine=_LLAMA),
    _m("llama.cpp command", Meaning.writer, ("llama-server", "llama-cli", "llama-speculative"),
       r"(?:^|[\s/\\\"`$>])(?:llama-server|llama-cli|llama-speculative(?:-simple)?)(?:\.exe)?\s+-", "llama.cpp tools/",
       "a llama.cpp command line", engine=_LLAMA),
    _m("llama.cpp build line", Meaning.writer, ("build:", "build_info"), r"^(?:main: )?build(?:_info)?: \d+ \(\w+\)",
       "common/common.cpp (build info)", "a llama.cpp build's banner", engine=_LLAMA),
    # -- vLLM ------------------------------------------------------------------------------------------------
    _m("vLLM module path", Meaning.writer, ("vllm", "VllmConfig"),
       r"[/\\]vllm[/\\][\w/\\.]+\.py|\bvllm\.(?:v1|model_executor|engine|entrypoints)\.|\bVllmConfig\b",
       "vLLM's package layout (vllm/...) and its configuration class (vllm/config/vllm.py: VllmConfig)",
       "a vLLM traceback or log", engine=_VLLM),
    # vLLM's weight loader naming a checkpoint tensor its model class lacks (vllm/model_executor/models/utils.py
    # AutoWeightsLoader._load_module: "There is no module or parameter named '{prefix}' in {type(self.module).__name__}").
    _m("vLLM weight loader", Meaning.writer, ("no module or parameter named",),
       r"\bThere is no module or parameter named\b",
       "vllm/model_executor/models/utils.py (AutoWeightsLoader._load_module)", "vLLM's weight loader", engine=_VLLM),
    _m("vLLM command", Meaning.writer, ("vllm serve", "--speculative-config", "speculative_config"),
       r"\bvllm serve\b|--speculative-config|speculative_config", "vllm/engine/arg_utils.py (--speculative-config)",
       "a vLLM command line or its configuration", engine=_VLLM),
    _m("vLLM speculative flags", Meaning.speculation, ("--speculative", "num_speculative_tokens", "num-speculative-tokens"),
       # a flag set to none ("--speculative-model none") asks for no drafter
       r"--speculative[-_](?:config|model)\b(?![ =][\"']?(?i:none|null)\b)|num[_-]speculative[_-]tokens",
       "vllm/engine/arg_utils.py (--speculative-config; --speculative-model in V0)", "vLLM's speculative settings",
       engine=_VLLM),
    _m("vLLM drafter loading", Meaning.speculation, ("Loading drafter model",), r"Loading drafter model",
       "vllm/v1/worker/gpu_model_runner.py (\"Loading drafter model...\")", "vLLM loading the drafter", engine=_VLLM),
    # The engines' own lines that the drafter was set up, in their words, under the engine's logger prefix (matched with
    # it: a request's prompt is content, voices.py): vLLM's drafters and loaders ("DSpark draft model loaded: 96 params",
    # vllm/v1/spec_decode/dspark.py; "Detected MTP model. Sharing target model lm_head weights with the draft model.",
    # "Sharing target model embedding weights with the draft model.", vllm/v1/spec_decode/eagle.py load_model), and
    # SGLang's model runner loading the drafter's class ("Load weight end. type=Qwen3ForCausalLMEagle3, ...",
    # python/sglang/srt/model_executor/model_runner.py load_model; the draft worker loads through it).
    _m("vLLM drafter set up", Meaning.speculation,
       ("raft model", "rafter model", "DSpark", "DFlash", "EAGLE", "Eagle", "MTP model", "Medusa"),
       r"\b(?:DEBUG|INFO|WARNING) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})? \[?[\w.-]{1,80}:\d{1,6}\] [^\n]{0,300}?"
       r"(?:\b(?:[Dd]raft(?:er)?|DSpark|DFlash|EAGLE\d?|Eagle\d?|MTP|Medusa) model (?:loaded|weights loaded)\b|"
       r"\b[Ll]oad(?:ing|ed)? (?:the )?(?:draft(?:er)?|DSpark|DFlash|EAGLE\d?|MTP) model\b|\bwith the draft(?:er)? model\b)",
       "vllm/v1/spec_decode/dspark.py (\"DSpark draft model loaded: %d params\"), vllm/v1/spec_decode/eagle.py load_model "
       "(\"... Sharing target model embedding weights with the draft model.\")", "vLLM setting up the drafter",
       engine=_VLLM, raw=True),
    _m("SGLang drafter class loaded", Meaning.speculation, ("type=",),
       r"\[[^\]\n]{1,60}\] Load weight (?:begin|end)\. type=\w{0,80}?"
       r"(?:Eagle\d?|EAGLE\d?|MTP|NextN|Medusa|DFlash|DSpark)(?![a-z])",
       "python/sglang/srt/model_executor/model_runner.py (load_model: \"Load weight end. type=%s, dtype=%s, ...\"), which "
       "the draft worker loads its model through", "SGLang loading the drafter's model class", engine=_SGLANG, raw=True),
    # vLLM's speculative configuration (vllm/config/speculative.py: SpeculativeConfig, its _verify_args and
    # hf_config_override; vllm/engine/arg_utils.py create_speculative_config): a frame or an arrow summary through it is
    # the speculative settings being checked.
    _m("vLLM speculative config", Meaning.speculation, ("SpeculativeConfig", "speculative.py", "create_speculative_config"),
       # the module by its file or vLLM's dotted name: another program's "config.speculative = True" is no engine's
       r"\bSpeculativeConfig\b|\bconfig[/\\]speculative\.py\b|\bvllm\.config\.speculative\b|\bcreate_speculative_config\b",
       "vllm/config/speculative.py (class SpeculativeConfig: _verify_args, hf_config_override); vllm/engine/arg_utils.py "
       "(EngineArgs.create_speculative_config)", "vLLM's speculative configuration being built or checked", engine=_VLLM),
    # vLLM's executors refusing speculative decoding on Ray, in each wording it had (vllm/executor/ray_gpu_executor.py
    # 0.4: assert self.speculative_config is None, "Speculative decoding not yet supported for RayGPU backend."; the
    # draft-model PR's branch (vllm#3029): "Speculative decoding is not supported with Ray."): whose line it is.
    _m("vLLM Ray executor refusal", Meaning.writer, ("with Ray", "for Ray", "RayGPU"),
       r"\bSpeculative decoding (?:is )?not (?:yet )?supported (?:with|for) Ray(?:GPU)?\b",
       "vllm/executor/ray_gpu_executor.py (0.4: \"Speculative decoding not yet supported for RayGPU backend.\"); vllm#3029's "
       "branch (\"Speculative decoding is not supported with Ray.\")", "vLLM's Ray executor refusing speculative decoding",
       engine=_VLLM),
    # vLLM's drafters (vllm/v1/spec_decode/: EagleProposer, NgramProposer, MedusaProposer, ...) and the architecture
    # names its EAGLE config gives a draft model ("Eagle" before the checkpoint's: EagleLlamaForCausalLM).
    _m("vLLM drafter class", Meaning.speculation, ("Proposer", "Eagle"),
       r"\b(?:Eagle|Ngram|Medusa|DraftModel|SuffixDecoding)Proposer\b|\bEagle\d?(?:[A-Z][a-z0-9]+)+For(?:CausalLM|ConditionalGeneration)",
       "vllm/v1/spec_decode/ (EagleProposer, NgramProposer, MedusaProposer); vllm/model_executor/models/registry.py "
       "(_SPECULATIVE_DECODING_MODELS: EagleLlamaForCausalLM, Eagle3LlamaForCausalLM)", "vLLM's drafter", engine=_VLLM),
    # vLLM names its MTP drafters <Family>MTP (DeepSeekMTP, Glm4MoeMTP, Qwen3NextMTP, MiMoMTP) and their inner modules
    # <Family>MultiTokenPredictor; SGLang's are <Family>ForCausalLMMTP / ...NextN (below).
    _m("vLLM MTP class", Meaning.mtp_on, ("MTP", "MultiTokenPredictor"),
       r"\b[A-Z][A-Za-z0-9]{0,60}?[a-z0-9](?<!ForCausalLM)MTP\b|\b[A-Z]\w{0,60}?MultiTokenPredictor(?:Layer)?\b",
       "vllm/model_executor/models/*_mtp.py (DeepSeekMTP, Glm4MoeMTP, Qwen3NextMTP; DeepSeekMultiTokenPredictor)",
       "vLLM's MTP drafter class: the run had MTP on", engine=_VLLM, mtp=_ON),
    _m("vLLM MTP weights missing", Meaning.mtp_failure, ("weights missing from checkpoint",),
       r"weights missing from checkpoint", "vLLM PR #35548 (the MTP layer's loader)",
       "the checkpoint lacks the MTP layer's weights", engine=_VLLM, mtp=_ON),
    # vLLM V0 (2025): num_speculative_tokens without a draft model drafts with the target's own MTP layers only for a
    # model type it knows to have them (deepseek_v3 then, vLLM PR #12755); any other model is refused with this.
    _m("vLLM MTP needs a known MTP model", Meaning.mtp_failure, ("was provided without speculative_model",),
       r"num_speculative_tokens was provided without speculative_model",
       "vllm/config.py SpeculativeConfig (V0; vLLM PR #12755: MTP without --speculative-model for DeepSeek V3/R1 only; "
       "mgoin there: the R1 Distill models have no MTP modules)",
       "vLLM drafts with the model's own MTP layers only for model types it knows to have them: this model is not one "
       "(it has no MTP head, or this vLLM has no MTP drafter for its family)", engine=_VLLM, cause="NO_MTP_HEAD",
       confidence=0.6,
       remedy=("run `mtpinspect check MODEL`: without an MTP head (distills and most fine-tunes have none) draft with a "
               "separate model (--speculative-model / speculative_config model) or n-gram; with one, a vLLM whose "
               "--speculative-config method covers the family")),
    _m("not initialized from checkpoint", Meaning.mtp_failure, ("not initialized from checkpoint",),
       r"not initialized from checkpoint", "vllm/model_executor/model_loader/default_loader.py",
       "weights the model class expects were not in the checkpoint", engine=_VLLM),
    _m("pipeline parallelism", Meaning.mtp_failure, ("Pipeline parallelism is not supported",),
       r"Pipeline parallelism is not supported", "vllm/config/model.py (verify_with_parallel_config)",
       "the model class lacks pipeline parallelism (MTP drafters: vllm#52069)", engine=_VLLM),
    # argparse names the program that refuses an argument ("launch_server.py: error: unrecognized arguments: ..."): the
    # flags it lists are the ones refused, not its own, so the program's name says whose it is.
    _m("vLLM argparse", Meaning.writer, ("vllm: error", "api_server.py: error", "usage: vllm"),
       r"^(?:usage: )?(?:vllm(?: serve)?|api_server\.py)(?::\s+error:|\s+\[)", "vllm/entrypoints/cli (FlexibleArgumentParser, prog vllm); "
       "vllm/entrypoints/openai/api_server.py", "vLLM's command line refusing or listing its arguments", engine=_VLLM,
       names_writer=True),
    # vLLM's offline LLM.generate progress bar (vllm/entrypoints/llm.py _run_engine: "est. speed input: %.2f toks/s, output: ...").
    # The engines' own commands, container images and packages, wherever a paste shows them (a shell line, a compose
    # file, a pip listing): vLLM's `python -m vllm.entrypoints...`, `vllm bench`, its images vllm/vllm-openai and its
    # platform plugins' packages (vllm-ascend / vllm_ascend, vllm-gaudi, vllm-xpu); SGLang's `python -m sglang.
    # launch_server`, `sglang serve`, its image lmsysorg/sglang; llama.cpp's images (ghcr.io/ggml-org/llama.cpp) and
    # its Python binding (llama-cpp-python, llama_cpp). Each is the engine's own name for what ran, not a mention.
    _m("vLLM command or package", Meaning.writer, ("vllm",),
       r"\bpython3?\s+-m\s+vllm\.|\bvllm (?:bench|serve|complete|chat|run-batch)\b|\bvllm/vllm-openai\b|"
       r"\bvllm[-_](?:ascend|gaudi|xpu|rocm|tpu|neuron|spyre|metal)\b|\bfrom vllm import\b",
       "vLLM's CLI (vllm/entrypoints/cli: serve, bench, complete, chat, run-batch), its images (docker.io/vllm/vllm-openai) "
       "and platform plugins (vllm-project/vllm-ascend, vllm-gaudi)", "vLLM's command, image or package", engine=_VLLM),
    _m("SGLang command or package", Meaning.writer, ("sglang",),
       r"\bpython3?\s+-m\s+sglang\.|\bsglang\.launch_server\b|\bsglang serve\b|\blmsysorg/sglang\b|\bfrom sglang import\b",
       "SGLang's server entry (python -m sglang.launch_server; the sglang CLI's serve) and image (docker.io/lmsysorg/sglang)",
       "SGLang's command, image or package", engine=_SGLANG),
    _m("llama.cpp image or package", Meaning.writer, ("llama.cpp", "llama-cpp-python", "llama_cpp"),
       r"\bggml-org/llama\.cpp:|\bggerganov/llama\.cpp:|\bllama-cpp-python\b|\bllama_cpp\.(?:server|Llama)\b|\bfrom llama_cpp import\b",
       "llama.cpp's images (ghcr.io/ggml-org/llama.cpp:server-cuda and kin) and its Python binding (abetlen/llama-cpp-python)",
       "llama.cpp's image or Python package", engine=_LLAMA),
    # Apps that run llama.cpp (or a fork of it) as their engine, by their own names: a mention, weighed as one.
    _m("llama.cpp app named", Meaning.writer, ("obold", "OBOLD", "llamafile", "GPT4All", "gpt4all", "Unsloth Studio",
                                               "ik_llama", "Jan.ai", "jan.ai"),
       r"\b(?:[Kk]obold[Cc]pp|KOBOLDCPP|llamafile|GPT4All|gpt4all|Unsloth Studio|ik_llama(?:\.cpp)?|[Jj]an\.ai)\b",
       "the apps' own names (KoboldCpp, llamafile, GPT4All, Unsloth Studio and Jan run llama.cpp; ik_llama.cpp is its fork)",
       "an app or fork that runs llama.cpp", engine=_LLAMA, weight=1),
    # The names of vLLM's own code and output where a paste shows no module path or command: its worker and engine
    # classes, its multiproc executor's RPC failure (vllm/v1/executor/multiproc_executor.py: raise RuntimeError(f"Worker
    # failed with error '{result}', please check the stack trace above ...")), its config and summary keys
    # (examples/offline_inference/spec_decode.py prints num_drafts, num_draft_tokens, num_accepted_tokens;
    # EngineArgs' max_num_seqs, gpu_memory_utilization), and its name for speculative decoding in its own messages
    # ("spec decode is not supported", vllm/v1/worker/cpu_model_runner.py). A paste of another program's worker
    # ("Worker failed with error:" of a Temporal job) is no Python RuntimeError line.
    _m("vLLM code names", Meaning.writer,
       ("ModelRunner", "EngineCore", "MultiprocExecutor", "RuntimeError: Worker failed", "num_drafts", "num_draft_tokens",
        "num_accepted_tokens", "num_spec_tokens", "max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization",
        "pec decode", "self.target_model_config.hf_", "self.draft_model_config.hf_"),
       r"\b(?:GPU|CPU|TPU|XPU|NPU)ModelRunner\b|\bEngineCore(?:Proc|Client|_DP\d{1,4})?\b|\bMultiprocExecutor\b|"
       r"^(?:\w+\.)?RuntimeError: Worker failed with error\b|"
       r"\b(?:num_drafts|num_draft_tokens|num_accepted_tokens|num_spec_tokens|max_num_seqs|max_num_batched_tokens|"
       r"gpu_memory_utilization)\b|\b[Ss]pec decode\b|\bself\.(?:target|draft)_model_config\.hf_(?:text_)?config\b",
       "vllm/v1/worker/gpu_model_runner.py (GPUModelRunner), vllm/v1/engine/core.py (EngineCore, EngineCoreProc), "
       "vllm/v1/executor/multiproc_executor.py (\"Worker failed with error '%s', please check the stack trace above\"), "
       "examples/offline_inference/spec_decode.py (num_drafts, num_draft_tokens, num_accepted_tokens), vllm/engine/"
       "arg_utils.py (max_num_seqs, max_num_batched_tokens, gpu_memory_utilization), vllm/v1/worker/cpu_model_runner.py "
       "(\"spec decode is not supported\"), vllm/config/speculative.py (SpeculativeConfig's self.target_model_config."
       "hf_text_config / self.draft_model_config.hf_config, as its checks' messages print them; SGLang's code names a "
       "local target_model_config, without self.)", "the names of vLLM's own code and output",
       engine=_VLLM, weight=2),
    _m("vLLM progress bar", Meaning.writer, ("est. speed input:",), r"est\. speed input: [\d.]+ toks/s, output: [\d.]+ toks/s",
       "vllm/entrypoints/llm.py (_run_engine's tqdm postfix)", "vLLM's offline generation progress bar", engine=_VLLM),
    # -- SGLang ----------------------------------------------------------------------------------------------
    _m("SGLang argparse", Meaning.writer, ("launch_server.py", "launch_server:"),
       r"^(?:usage: )?(?:launch_server(?:\.py)?)(?::\s+error:|\s+\[)", "python/sglang/launch_server.py (argparse, prog launch_server.py)",
       "SGLang's server command line refusing or listing its arguments", engine=_SGLANG, names_writer=True),
    # SGLang's benchmarks' own summaries: bench_serving's "Accept length:", SpecForge's and the EAGLE benchmarks'
    # "Average Accept length:", benchmark/mtbench's "#questions: N, Throughput: X token/s, Acceptance length: Y".
    _m("SGLang benchmark summary", Meaning.writer, ("ccept length", "#questions:"),
       r"(?i)^(?:[-*]\s+)?(?:average |avg |mean )?accept length\s*:|^#questions: \d+, Throughput: ",
       "python/sglang/bench_serving.py (\"Accept length:\"); benchmark/mtbench/bench_sglang_eagle.py (\"#questions: ..., "
       "Throughput: ... token/s, Acceptance length: ...\"); SpecForge's benchmarks (\"Average Accept length:\")",
       "an SGLang benchmark's summary", engine=_SGLANG),
    # The names of SGLang's own code where a paste shows no module path or command: its scheduler's batch and worker
    # classes and its server arguments (python/sglang/srt/managers/tp_worker.py TpModelWorker, schedule_batch.py
    # ScheduleBatch, model_executor/forward_batch_info.py ForwardBatch, server_args.py ServerArgs: mem_fraction_static,
    # max_running_requests, cuda_graph_max_bs).
    _m("SGLang code names", Meaning.writer,
       ("TpModelWorker", "ScheduleBatch", "ForwardBatch", "ServerArgs", "mem_fraction_static", "max_running_requests",
        "cuda_graph_max_bs", "forward_batch_generation"),
       r"\b(?:TpModelWorker\w{0,20}|ScheduleBatch|ForwardBatch|ServerArgs|mem_fraction_static|max_running_requests|"
       r"cuda_graph_max_bs|forward_batch_generation)\b",
       "python/sglang/srt/managers/tp_worker.py (TpModelWorker.forward_batch_generation), managers/schedule_batch.py "
       "(ScheduleBatch), model_executor/forward_batch_info.py (ForwardBatch), server_args.py (ServerArgs: "
       "mem_fraction_static, max_running_requests, cuda_graph_max_bs)", "the names of SGLang's own code",
       engine=_SGLANG, weight=2),
    _m("SGLang module path", Meaning.writer, ("sglang",), r"[/\\]sglang[/\\][\w/\\.]+\.py|\bsglang\.srt\.",
       "SGLang's package layout (sglang/srt/...)", "an SGLang traceback or log", engine=_SGLANG),
    # argparse takes any unambiguous prefix: "--speculative-algo NEXTN" is --speculative-algorithm.
    _m("SGLang speculative algorithm", Meaning.speculation, ("--speculative-algo", "speculative_algorithm"),
       r"(?:--speculative-algo\w*|speculative_algorithm)\W+(?P<algo>[A-Za-z0-9_]+)",
       "python/sglang/srt/server_args.py (--speculative-algorithm)", "SGLang's speculative method", engine=_SGLANG),
    _m("SGLang speculative flags", Meaning.speculation, ("--speculative-", "SGLANG_ENABLE_SPEC_V2"),
       r"--speculative-(?:num-steps|eagle-topk|num-draft-tokens|draft-model-path|draft-model-revision|draft-attention-backend|"
       r"attention-mode)\b|\bSGLANG_ENABLE_SPEC_V2\b",
       "python/sglang/srt/server_args.py (--speculative-num-steps, --speculative-eagle-topk, --speculative-num-draft-tokens, "
       "--speculative-draft-model-path); SGLANG_ENABLE_SPEC_V2 (the overlap speculative worker)",
       "SGLang's speculative settings", engine=_SGLANG),
    _m("SGLang drafter worker", Meaning.speculation, ("Worker", "SpeculativeAlgorithm"),
       r"\b(?:EAGLEWorker(?:V2)?|EagleDraftWorker|MultiLayerEagleWorker(?:V2)?|NGRAMWorker|StandaloneWorker(?:V2)?|"
       r"SpeculativeAlgorithm)\b",
       "python/sglang/srt/speculative/ (eagle_worker.py EAGLEWorker, eagle_worker_v2.py EagleDraftWorker, ngram_worker.py; "
       "spec_info.py SpeculativeAlgorithm)",
       "SGLang's drafter worker", engine=_SGLANG),
    # SGLang's drafter captures its own CUDA graphs (python/sglang/srt/speculative/eagle_draft_cuda_graph_runner.py and
    # eagle_draft_extend_cuda_graph_runner.py log "Capture draft cuda graph begin" / "Capture draft extend cuda graph
    # begin"): a failure right there is the drafter's graph failing.
    _m("SGLang draft graph capture", Meaning.speculation, ("Capture draft",),
       r"\bCapture draft(?: extend)? cuda graph (?:begin|end)\b",
       "python/sglang/srt/speculative/eagle_draft_cuda_graph_runner.py, eagle_draft_extend_cuda_graph_runner.py "
       "(\"Capture draft cuda graph begin\", \"Capture draft extend cuda graph begin\")",
       "SGLang capturing its drafter's CUDA graphs", engine=_SGLANG),
    # SGLang's graph runners wrap a capture's error in their own words (model_executor/cuda_graph_runner.py and the
    # drafter's eagle_draft_cuda_graph_runner.py: raise Exception(f"Capture cuda graph failed: {e}\n{CUDA_GRAPH_CAPTURE_
    # FAILED_MSG}")): whose text it is, nothing of a drafter's by itself.
    _m("SGLang graph capture failed", Meaning.writer, ("Capture cuda graph failed",), r"\bCapture cuda graph failed\b",
       "python/sglang/srt/model_executor/cuda_graph_runner.py (\"Capture cuda graph failed: {e}\")",
       "SGLang's graph capture failed", engine=_SGLANG),
    _m("SGLang NextN class", Meaning.mtp_on, ("NextN", "ForCausalLMMTP"), r"\b\w+(?:Model|ForCausalLM)NextN\b|\b\w+ForCausalLMMTP\b",
       "python/sglang/srt/models/deepseek_nextn.py (DeepseekModelNextN, DeepseekV3ForCausalLMNextN), glm4_moe_nextn.py, "
       "qwen3_next_mtp.py (Qwen3NextForCausalLMMTP)",
       "SGLang's MTP (NextN) draft model class", engine=_SGLANG, mtp=_ON),
    _m("SGLang NEXTN", Meaning.mtp_on, ("NEXTN", "NextN", "nextn"),
       r"(?:--speculative-algo\w*|speculative_algorithm)\W+(?:NEXTN|nextn)\b|sglang[/\\.]srt[/\\.]models[/\\.]\w+_nextn",
       "python/sglang/srt/server_args.py (NEXTN is MTP), srt/models/*_nextn.py", "SGLang drafting with the model's "
       "MTP (NextN) layers", engine=_SGLANG, mtp=_ON),
    # -- any engine: MTP model classes and modules in tracebacks -------------------------------------------
    _m("MTP model class", Meaning.mtp_on, ("MTP", "NextN", "Nextn", "_mtp", "_nextn"),
       # MTP after a lower-case letter or digit (DeepSeekMTP, Glm4MoeMTP), never inside an acronym (SMTPException).
       # The module only in an engine's models or drafter folder: an app's android_mtp.py (Media Transfer Protocol) is
       # no drafter, nor are libmtp's LibMTP / PyMTP classes.
       r"\b[A-Z]\w*?[a-z0-9](?<!Lib)(?<!Py)(?:MTP|NextN|Nextn)\w*\b|"
       r"(?:models|spec_decode|speculative)[/\\]\w{1,60}_(?:mtp|nextn)\.py\b",
       "the engines' MTP drafter classes (vLLM DeepSeekMTP, Qwen3NextMTP, Glm4MoeMTP; SGLang DeepseekV3ForCausalLMNextN)",
       "an MTP drafter class or module: the run had MTP on", mtp=_ON),
    # The drafting code of every engine, one table (drafters.py): modules, frames, native frames, drafter tensors.
    *(_m(row.name, Meaning.speculation, row.keys, row.pattern, row.source, row.means, engine=row.engine, raw=row.in_prefix)
      for row in DRAFTER_TABLE),
    _m("Python exception", Meaning.exception,
       ("Error:", "Error(", "Exception:", "AssertionError"),
       r"^(?:[\w.]+\.)?(?P<type>[A-Z]\w*(?:Error|Exception))(?::\s*(?P<text>.*)|\s*$)",
       "Python's traceback format", "a Python exception (its text and its traceback say where)"),
    # An AttributeError's own words without its type, where a wrapper printed them on a line of their own (vLLM's
    # collective_rpc: "RuntimeError: Worker failed with error:" then the worker's error): Python's wording
    # (Objects/object.c: "'%.100s' object has no attribute '%U'"), its text read as the exception's.
    _m("Python attribute error text", Meaning.exception, ("object has no attribute",),
       r"^(?P<text>'\w{1,100}' object has no attribute '\w{1,100}')\s*$",
       "CPython Objects/object.c (PyObject_GetAttr: \"'%.100s' object has no attribute '%U'\")",
       "an AttributeError's words, printed under the exception that wrapped it"),
    _m("Python traceback", Meaning.traceback, ("Traceback (most recent call last)",), r"Traceback \(most recent call last\)",
       "Python's traceback format", "a Python traceback: its frames say where it failed"),
    # A call chain as a poster writes it: frames joined by arrows, a frame a line ("common_speculative_draft" then
    # "  → llama_decode"), or several on one line ("eagle_prepare_for_verify <- multi_layer_eagle_worker_v2.verify",
    # "execute_model -> propose_draft_token_ids"), an annotation in parentheses after a frame ("(schedule_batch.py)",
    # "(device 3)"). A frame has a name's shape (dotted, namespaced, with an underscore, or called: "f()"), and ASCII
    # arrows stand between spaces: "52.4 → 41.0 tok/s", "MTP -> off" and C's "ctx->model" are no chain. Where it ran,
    # the drafter table (drafters.py) says of its frames (rules_message.py: the chain rule).
    _m(CALL_CHAIN, Meaning.traceback, ("->", "→", "<-", "←", "↳", "=>", "⇒", "⇐"),
       r"^[\s│|]{0,40}(?:→|->|=>|⇒|←|<-|⇐|↳|└─{0,4}>?)\s{0,4}" + _FRAME_NAME + r"|"
       r"(?:^|\s)" + _FRAME_NAME + r"(?:\s{1,4}\([^()\n]{0,200}\))?(?:\s{0,4}[→←⇐⇒]|\s{1,4}(?:->|<-|=>)\s)\s{0,4}[A-Za-z_~]",
       "a call chain written by hand or by a tool (frames joined by arrows), as posters quote where an engine died",
       "a call chain: its frames say where it failed"),
    # faulthandler's dump when the interpreter dies on a signal (a GPU fault, an abort in native code): "Fatal Python
    # error: Aborted", then each thread's "Thread 0x... (most recent call first):" and its frames (Modules/faulthandler.c).
    _m("Python fault dump", Meaning.traceback, ("(most recent call first)", "Fatal Python error: "),
       r"^(?:Current thread|Thread) 0x[0-9a-fA-F]{1,16} \(most recent call first\):|^Fatal Python error: \w",
       "CPython Modules/faulthandler.c (faulthandler_fatal_error, dump_traceback)",
       "Python's fault handler dumping its threads' frames: they say where it died"),
    # A frame on its own: a slice from a traceback's middle (its header and exception cut away), interleaved workers'
    # frames, a CSV export's doubled quotes cut at the comma ('File ""/.../multi_step_worker.py""').
    _m("Python traceback frame", Meaning.traceback, ('File "',),
       r"^File \"\"?[^\"\n]{1,400}?\.py\"\"?(?:, line \d{1,7}(?:,? in [\w<>.]{1,200})?)?\s*$",
       "Python's traceback format (faulthandler's frames: no comma before \"in\")", "a frame of a Python traceback"),
    # -- any engine: the scheduler or a worker died ------------------------------------------------------------
    _m("vLLM worker died", Meaning.engine_death, ("died unexpectedly", "EngineCore encountered a fatal error", "EngineDeadError",
                                                  "WorkerProc failed to start", "EngineCore failed to start"),
       r"Worker proc \w+(?:-\d+)? died unexpectedly|EngineCore encountered a fatal error|\bEngineDeadError\b|"
       r"WorkerProc failed to start|EngineCore failed to start",
       "vllm/v1/executor/multiproc_executor.py (MultiprocWorkerMonitor; \"WorkerProc failed to start.\"), "
       "vllm/v1/engine/core_client.py, vllm/v1/engine/core.py (run_engine_core: \"EngineCore failed to start.\")",
       "a vLLM worker or engine core died", engine=_VLLM),
    # CUDA's device-side assert (the assert() of a kernel: PyTorch's ATen kernels, Triton and Inductor's generated
    # ones, "index out of bounds: 0 <= tmp1 < N" in an inductor_cache file) as the CUDA runtime prints it to stderr:
    # "FILE:LINE: FUNC: block: [x,y,z], thread: [x,y,z] Assertion `COND` failed.". The kernel, not the program, died;
    # only a tie of the run to the speculative path (a drafter's setting, its lines) makes it that path's.
    _m("CUDA device-side assert", Meaning.engine_death, ("block: [",),
       r"\bblock: \[\d{1,6}, ?\d{1,6}, ?\d{1,6}\], thread: \[\d{1,6}, ?\d{1,6}, ?\d{1,6}\] Assertion `",
       "CUDA's device-side assert (the runtime's \"%s:%d: %s: block: [%d,%d,%d], thread: [%d,%d,%d] Assertion `%s` "
       "failed.\"), as PyTorch's and Triton/Inductor's kernels print it",
       "a GPU kernel's device-side assert failed (the process dies with a CUDA error)"),
    _m("SGLang scheduler exception", Meaning.engine_death, ("Scheduler hit an exception",), r"Scheduler hit an exception",
       "python/sglang/srt/managers/scheduler.py (run_scheduler_process)", "SGLang's scheduler died on an exception",
       engine=_SGLANG),
    # SGLang's watchdog killing a process that stopped making progress (a hang: a deadlock, a collective waiting on a
    # dead rank), then the launcher's handler of the child's SIGQUIT tearing the server down. The hang is the engine's,
    # not MTP's: only a tie of the run to drafting (a --speculative-algorithm, the drafter's lines) puts it on that path.
    _m("SGLang watchdog", Meaning.engine_death, ("atchdog timeout (self.watchdog_timeout=", "Received sigquit from a child process"),
       r"\b(?:[A-Z]\w{1,40} )?[Ww]atchdog timeout \(self\.watchdog_timeout=\d{1,9}|"
       r"\bReceived sigquit from a child process\b",
       "python/sglang/srt/utils/watchdog.py (\"{name} watchdog timeout (self.watchdog_timeout=..., self.soft=...)\": "
       "Scheduler, TokenizerManager), python/sglang/srt/managers/scheduler.py before it (\"Watchdog timeout "
       "(self.watchdog_timeout=...)\"), python/sglang/srt/entrypoints/engine.py (sigquit_handler: \"Received sigquit "
       "from a child process. It usually means the child failed.\")",
       "SGLang's watchdog killed a process that stopped making progress (a hang), or the server went down after a "
       "child failed", engine=_SGLANG),
    # vLLM's engine core and workers say it in the same words (vllm/v1/engine/core.py "EngineCore hit an exception",
    # vllm/v1/executor/multiproc_executor.py "WorkerProc hit an exception").
    _m("vLLM process exception", Meaning.engine_death, ("hit an exception",),
       r"\b(?:EngineCore(?:_DP\d+)?|WorkerProc|AsyncLLM|LLMEngine)\b[^\n]{0,40}?\bhit an exception\b",
       "vllm/v1/engine/core.py (\"EngineCore hit an exception\"), vllm/v1/executor/multiproc_executor.py (\"WorkerProc hit an "
       "exception\")", "a vLLM engine core or worker died on an exception", engine=_VLLM),
    # vLLM dumps the scheduler's output only when the engine core dies executing a step (vllm/logging_utils/dump_input.py):
    # its fields in a paste are a crash's, and scheduled draft tokens say the step was drafting.
    _m("vLLM crash dump", Meaning.engine_death, ("Dumping scheduler output", "scheduled_spec_decode_tokens=", "Dumping input data"),
       r"Dumping scheduler output for model execution|Dumping input data\b|\bscheduled_spec_decode_tokens=",
       "vllm/logging_utils/dump_input.py (dump_engine_exception: \"Dumping input data\", \"Dumping scheduler output for "
       "model execution\"; SchedulerOutput.scheduled_spec_decode_tokens)", "vLLM's dump of the step the engine core died on",
       engine=_VLLM),
    _m("vLLM scheduled drafts", Meaning.speculation, ("scheduled_spec_decode_tokens=", "num_spec_tokens"),
       r"\bscheduled_spec_decode_tokens=\{[^}\s]|\bnum_spec_tokens\w{0,40}=\s?[1-9]",
       "vllm/v1/core/sched/output.py (SchedulerOutput.scheduled_spec_decode_tokens: the draft tokens of the step)",
       "draft tokens scheduled for verification: the run was drafting", engine=_VLLM),
    # The count of draft tokens the verify step accepted, per request, exists only while speculative decoding (vLLM's
    # GDN / Mamba metadata num_accepted_tokens, filled from the rejection sampler's output; vllm-ascend's kernels take it
    # as numAcceptedTokens): a bounds check on it failing is the speculative step's batch breaking a kernel.
    _m("accepted-token count check", Meaning.engine_gap, ("numAcceptedTokens", "num_accepted_tokens"),
       r"(?<![A-Za-z_])(?:numAcceptedTokens|num_accepted_tokens)\b[^\n]{0,200}?\b(?:exceeds?|exceeded|out of (?:range|bounds)|"
       r"must be|should be|mismatch|invalid|greater than|larger than)\b",
       "vllm/v1/attention/backends/gdn_attn.py and mamba_attn.py (num_accepted_tokens, set only with spec decode); "
       "vllm-ascend's Ascend kernels (numAcceptedTokens; vllm-ascend#9956 \"numAcceptedTokens[0]=4 exceeds varlen segment "
       "length=3\")",
       "a kernel's check on the draft tokens the verify step accepted failed", engine=_VLLM, on_path=True),
    # The same, quoted inline in a poster's sentence ("However, I got `AssertionError: ... not yet supported`").
    _m("Python exception (quoted)", Meaning.exception, ("Error: ", "Exception: "),
       r"`(?:[\w.]+\.)?(?P<type>[A-Z]\w*(?:Error|Exception)):\s*(?P<text>[^`]{1,2000})`",
       "Python's traceback format, quoted in a sentence", "a Python exception, quoted (its text says where)"),
    # pydantic v2's line for an exception a validator raised (pydantic-core src/errors/types.rs: "Value error, {error}",
    # "Assertion failed, {error}", then " [type=value_error, input_value=..., input_type=...]"): a ValueError's or an
    # AssertionError's own text, printed under "N validation error(s) for CLASS" (vLLM's SpeculativeConfig, ModelConfig
    # and EngineArgs are pydantic dataclasses), which a paste may cut. Its type is read from the words (rules_message.py).
    _m("pydantic validator error", Meaning.exception, ("Value error, ", "Assertion failed, "),
       r"^(?P<type>Value error|Assertion failed), (?P<text>.{1,2000}?)(?:\s\[type=(?:value_error|assertion_error)\b.*)?$",
       "pydantic-core's validation error lines (\"Value error, %s [type=value_error, ...]\", \"Assertion failed, %s "
       "[type=assertion_error, ...]\")", "a ValueError or AssertionError a configuration's validator raised"),
    # -- any engine: the run got past its configuration ---------------------------------------------------------
    # The phases after an engine's settings are checked: a model loading, CUDA graphs captured, the server up and
    # serving. An exception after one of these lines is no configuration check failing (rules_message.py: a start
    # failure only before them). Each engine's own wording; the web server's lines name no engine.
    _m("run past its configuration", Meaning.past_config,
       ("Starting to load model", "Loading weights took", "Model loading took", "Loading safetensors", "Loading drafter",
        "Load weight", "apturing CUDA graph", "apture cuda graph", "Capture draft", "Graph capturing finished",
        "Application startup complete", "Started server process", "Uvicorn running", "fired up and ready",
        "Avg prompt throughput", "Decode batch", "Prefill batch", "server is listening", "launch_slot_", "load_tensors:",
        "in load_model", "in load_weights", "in capture_model", "in execute_model", "in propose", "in forward_batch_generation",
        "in _dummy_run", "in profile_run"),
       r"\b(?:Starting to load model|Loading weights took|Model loading took|Loading safetensors checkpoint shards|"
       r"Loading drafter model|Load weight (?:begin|end)|[Cc]apturing CUDA graphs?|Capture (?:draft )?(?:extend )?cuda graph|"
       r"Graph capturing finished|Application startup complete|Started server process|Uvicorn running on|"
       r"fired up and ready to roll|Avg prompt throughput|(?:Decode|Prefill) batch\b|server is listening on|"
       r"launch_slot_|load_tensors:)|"
       r"^File \"[^\"\n]{1,400}\", line \d{1,7}, in (?:load_model|load_weights|capture_model|execute_model|propose|"
       r"forward_batch_generation|_dummy_run|profile_run)\b",
       "vllm/model_executor/model_loader (\"Starting to load model\", \"Loading weights took\"), vllm/v1/worker/"
       "gpu_model_runner.py (\"Model loading took\", \"Loading drafter model...\", \"Graph capturing finished\"), "
       "vllm/v1/metrics/loggers.py (\"Avg prompt throughput\"); python/sglang/srt/model_executor/model_runner.py (\"Load "
       "weight begin\"), cuda_graph_runner.py (\"Capture cuda graph begin\"), managers/scheduler.py (\"Decode batch\"), "
       "entrypoints/http_server.py (\"The server is fired up and ready to roll!\"); llama.cpp tools/server (\"server is "
       "listening on\", launch_slot_), src/llama-model.cpp (load_tensors:); uvicorn (\"Started server process\", "
       "\"Application startup complete\")",
       "the run got past its configuration: a model loading, a graph capture, the server serving"),
    # vLLM checks at start, only when a speculative config is set, that the draft token slots it reserves a step
    # (num_speculative_tokens a request, times max_num_seqs) leave the scheduler a budget (vllm/config/vllm.py
    # _set_max_num_scheduled_tokens: "max_num_scheduled_tokens is set to N based on the speculative decoding settings,
    # which does not allow any tokens to be scheduled. Increase max_num_batched_tokens ... or decrease
    # num_speculative_tokens."; "VllmConfig does not have enough slots to schedule a token and support the speculative
    # decoding settings"): the setting asks more draft slots than the batch holds, a refusal of it.
    _m("vLLM speculative token budget", Meaning.engine_gap, ("does not allow any tokens to be scheduled",
                                                              "does not have enough slots to schedule a token"),
       r"\bmax_num_scheduled_tokens is set to -?\d{1,9}\b[^\n]{0,120}?\bwhich does not allow any tokens to be scheduled\b|"
       r"\bdoes not have enough slots to schedule a token and support the speculative decoding settings\b",
       "vllm/config/vllm.py (VllmConfig._set_max_num_scheduled_tokens: \"max_num_scheduled_tokens is set to %d based on "
       "the speculative decoding settings, which does not allow any tokens to be scheduled\"; \"VllmConfig does not have "
       "enough slots to schedule a token and support the speculative decoding settings\"), checked only with a "
       "speculative config", "vLLM refuses the speculative setting: its draft token slots a step leave the scheduler no "
       "token budget", engine=_VLLM, cause="ENGINE_LIMITATION", confidence=0.7,
       remedy=("raise max_num_batched_tokens (--max-num-batched-tokens) to hold the draft token slots, or lower "
               "num_speculative_tokens (or max_num_seqs): each running request reserves num_speculative_tokens slots a "
               "step")),
    # -- desktop apps ------------------------------------------------------------------------------------------
    _m("Ollama engine layer", Meaning.app_refusal, ("failed to initialize model",),
       r"failed to initialize model: (?P<arch>\w+): layer (?P<layer>\d+) (?:missing|expected)",
       "ollama model/models/qwen3next/model.go (\"qwen3next: layer %d missing attn_qkv/attn_gate projections\"), "
       "wrapped by its runner; ollama#16282",
       "Ollama's own engine cannot load a layer of this GGUF: in an MTP GGUF the last layer is the MTP block (nextn "
       "tensors only), which Ollama's engine does not load for this architecture", app=LogApp.ollama, engine=_LLAMA,
       cause="NO_MTP_GRAPH",
       remedy=("in Ollama, use the publisher's GGUF without the MTP layer (or convert with --no-mtp); for MTP, serve "
               "the file with llama-server -m FILE --spec-type draft-mtp, or an Ollama release that loads the nextn block")),
    _m("LM Studio named", Meaning.writer, ("LM Studio", "LMStudio", "lmstudio", "lm-studio", "Engine protocol"),
       r"\bLM ?Studio\b|\blmstudio\b|\blm-studio\b|LMSTUDIO_|\bEngine protocol\b",
       "LM Studio's own wording and paths (its llama.cpp engine speaks the \"Engine protocol\")",
       "LM Studio (it runs llama.cpp's llama-server)", app=LogApp.lm_studio, engine=_LLAMA),
    # A poster's words that name the engine ("vLLM main with this PR", "on SGLang 0.5"): whose figures prose and bullets
    # are when no line of an engine's own says (content lines are skipped, so a prompt naming one says nothing).
    # vLLM's own words for its drafting figures (vllm/v1/spec_decode/metrics.py SpecDecodingLogging: "Mean acceptance
    # length: %.2f", "Per-position acceptance rate: %s", "Avg Draft acceptance rate: %.1f%%"), also as a PR's bullets:
    # llama.cpp writes "mean acceptance length =" and "acceptance rate per position", SGLang "accept len".
    _m("vLLM drafting words", Meaning.writer, ("acceptance length:", "acceptance rate:", "acceptance rates:"),
       r"\b(?:Mean acceptance length|Per-position acceptance rates?|Avg Draft acceptance rate):",
       "vllm/v1/spec_decode/metrics.py (SpecDecodingLogging.log: \"Mean acceptance length\", \"Per-position acceptance "
       "rate\", \"Avg Draft acceptance rate\")", "vLLM's words for its drafting figures", engine=_VLLM),
    _m("vLLM named", Meaning.writer, ("vLLM", "VLLM"), r"\b(?:vLLM|VLLM)\b(?![-_./\\])",
       "vLLM's own name, as its docs and PRs write it", "a text about a vLLM run", engine=_VLLM, weight=1),
    _m("SGLang named", Meaning.writer, ("SGLang", "SGLANG"), r"\b(?:SGLang|SGLANG)\b(?![-_./\\])",
       "SGLang's own name, as its docs and PRs write it", "a text about an SGLang run", engine=_SGLANG, weight=1),
    _m("Ollama named", Meaning.writer, ("ollama", "Ollama"), r"\b[Oo]llama\b", "Ollama's own wording and paths",
       "Ollama (it runs llama.cpp, or its own engine)", app=LogApp.ollama, engine=_LLAMA, weight=1),
    # An error line that names speculative decoding, in whatever words an app or fork chose: the class, not the
    # wordings seen so far (rules_message.py says what it establishes).
    _m("speculative error", Meaning.app_refusal,
       ("error", "Error", "ERROR", "fail", "Fail", "FAIL", "annot", "can't", "nable to", "upported", "ompatible",
        "nvalid", "efus", "not found", "No matching", "no matching", "ould not", "ouldn't"),
       # argparse's "argument --x: invalid <type> value: '...'" is a value the parser could not convert (a JSON quoting
       # error of the command line): the user's typing, not a refusal of the method.
       r"(?i)^(?!.*Dumping input data)(?!.*\bargument [-\w/]{1,80}: invalid \w{1,40} value: )"
       r"(?=.*(?:\berror\b|\bfail(?:ed|s|ure)?\b|\bcannot\b|\bcan't\b|\bunable\b|not (?:yet )?supported|unsupported|"
       r"incompatible|not compatible|\binvalid\b|\brefus|\bnot found\b|\bno matching\b|could not|couldn't))(?=.*(?:(?<![A-Za-z])[Ss]peculative[ _-]?(?:decod|draft|model|config|algo|method|token|type|stage|sampl|"
       r"worker|implementation|batch|step|head)|\bdraft(?:er|ing|[ _-]?(?:models?|tokens?|heads?|files?|gguf))\b|\bMTP\b|mtp-[\w.-]*\.gguf|"
       r"multi[- ]token))",
       "the class of app and engine errors about speculative decoding (LM Studio, Ollama, forks, llama.rn)",
       "an error about speculative decoding, in the app's or engine's own words",
       # Its words, not the names it quotes: git's branch 'draft/mtp-export', tar's mtp-phone-backup.tar.gz; and an
       # engine's or app's words, not another program's tagged line (a mail client's "draft model for account 2").
       words_only=True, voiced=True),
    # -- backends ----------------------------------------------------------------------------------------------
    # A CUDA kernel that cannot run on this device (no image for its architecture: a Hopper-only kernel on Blackwell)
    # as the kernel's launch check prints it ("CUDA error (file:line): no kernel image is available for execution on the
    # device"): a backend gap, on the speculative path only where the text ties it (rules_message.py).
    _m("CUDA kernel image missing", Meaning.engine_gap, ("no kernel image",),
       r"\bCUDA error\b[^\n]{0,400}?: no kernel image is available for execution on the device",
       "CUDA's cudaErrorNoKernelImageForDevice (\"no kernel image is available for execution on the device\"), as "
       "flash-attention's and sgl-kernel's launch checks print it (\"CUDA error (%s:%d): %s\")",
       "a CUDA kernel has no image for this GPU's architecture"),
    _m("Level Zero error", Meaning.engine_gap, ("ZE_RESULT_ERROR", "UR_RESULT_ERROR"),
       r"\b(?:ZE|UR)_RESULT_ERROR_\w+", "Intel Level Zero / Unified Runtime status codes (XPU, SYCL)",
       "the XPU backend failed to build or run a kernel"),
    # A kernel's own check naming the function and the bound it supports (aiter's asm MLA kernels: TORCH_CHECK(false,
    # __func__, ":only support fp8 mla decoding for qo_len <= 4"): MTP's verify step asks qo_len = draft tokens), on a line of its own or after the words of the
    # error that wraps it ("Capture cuda graph failed: <kernel>: only support ..."), as a graph capture prints it: a
    # shape the kernel refuses. Under a speculative setting the decode graph carries each request's draft tokens, so the
    # bound is the drafter's (rules_message.py: a refusal, ENGINE_LIMITATION); alone it ties nothing.
    _m(KERNEL_LIMIT, Meaning.engine_gap, ("only support",),
       r"(?:^|:\s)(?P<kernel>[A-Za-z][A-Za-z0-9]{0,80}(?:_[A-Za-z0-9]{1,80}){1,12}):\s?(?:only supports?|supports? only) [^\n]{0,200}?"
       r"(?:<=?|\u2264|\bup to|\bat most|\bno more than)\s{0,2}(?P<bound>\d{1,6})\b",
       "aiter's asm kernels (csrc/py_itfs_cu/asm_mla.cu: TORCH_CHECK / AITER_CHECK(false, __func__, \":only support ... "
       "for qo_len <= N\")), wrapped by SGLang's graph capture (\"Capture cuda graph failed: {e}\")",
       "a kernel supports only shapes up to a bound"),
)


# Words that put a line on the speculative path (an exception's text, a crash's place).
# Word-bounded: MTP never inside another word (SMTP, smtplib), "draft" only as the drafter's (a draft model,
# draft tokens, a drafter), not a blog's draft post.
SPECULATIVE_WORDS = re.compile(r"\bspeculative\.(?:cpp|h)\b|(?<![A-Za-z])[Ss]peculative[ _-]?(?:decod|draft|model|config|algo|method|token|type|stage|"
                               r"sampl|worker|impl|init|gen|propos|batch|step|head)|_speculative|num_speculative|SPECULATIVE_|\b[Dd]raft(?:er|ing|[ _-]?(?:models?|tokens?|toks?|heads?|ctx|context|"
                               r"probs?|len|ids))\b|\bDRAFT_|(?<![A-Z])MTP(?![A-Z]{2})|(?<![A-Za-z])mtp(?![a-z])|"
                               r"NextN|(?<![A-Za-z])[Nn]extn|\bEAGLE|\b[Ee]agle(?:\d|[A-Z_]|\b)|spec_decode|num_speculative")

# The method's own names, which other software does not use for its own things: speculative decoding / sampling and a
# speculative method, algorithm, config or type, draft-model speculation, multi-token prediction, MTP (word-bounded; the
# phones' protocol is blanked before, voices.py), NextN, EAGLE, an mtp- GGUF, draft-mtp. "Draft model", "draft
# tokens", "drafter", a "speculative model" are also a mail client's, an editor's or a trading app's words: a line
# with only those is about speculative decoding only where an engine or app speaks (rules_message.engine_voice).
METHOD_WORDS = re.compile(r"(?i:(?<![A-Za-z])speculative[ _-]?(?:decod|sampl|method|algo|config|type)|"
                          r"\bdraft[ _-]?models? speculation\b|\bmulti[- ]token[- ]?predict|(?<![A-Za-z])nextn|"
                          r"\bmtp-[\w.-]*\.gguf\b|\bdraft-mtp\b|\bEAGLE-?\d?\b)|(?<![A-Za-z])MTP(?![A-Za-z])")

_MAX_PER_MESSAGE = 16  # hits kept per message: the first ones carry the setup, more add nothing


@dataclass(frozen=True)
class Scan:
    """Every catalogue hit in a text, in line order."""

    hits: tuple[Hit, ...]

    def of(self, meaning: Meaning) -> list[Hit]:
        return [h for h in self.hits if h.message.meaning is meaning]

    def first(self, meaning: Meaning) -> Hit | None:
        return next((h for h in self.hits if h.message.meaning is meaning), None)

    @cached_property
    def mtp_sign(self) -> Hit | None:
        """The first line that shows MTP was on."""
        return next((h for h in self.hits if h.message.mtp is MtpUse.on), None)

    @cached_property
    def writer(self) -> Engine | None:
        """The program a line names as its own (argparse's "prog: error:"), else the engine the hits name, each weighed
        by what it says of the writer (an engine's own line over the names of its code over a mention of its name; ties:
        the first named), None when no hit names one."""
        line = self.writer_line
        return line.message.engine if line is not None else None

    @cached_property
    def writer_line(self) -> Hit | None:
        """The line that names the writer (:attr:`writer`): the program's own, else the weightiest of the engine
        the weighed hits name."""
        named = next((h for h in self.hits if h.message.names_writer and h.message.engine is not None), None)
        if named is not None:
            return named
        votes: Counter[Engine] = Counter()
        for h in self.hits:
            if h.message.engine is not None:
                votes[h.message.engine] += h.message.weight
        if not votes:
            return None
        order = [h.message.engine for h in self.hits if h.message.engine is not None]
        engine = max(votes, key=lambda e: (votes[e], -order.index(e)))
        return max((h for h in self.hits if h.message.engine is engine), key=lambda h: h.message.weight)

    @cached_property
    def app(self) -> LogApp | None:
        return next((h.message.app for h in self.hits if h.message.app is not None), None)


def _another_programs_command(line: str) -> bool:
    """A shell prompt line whose command runs no engine, app or container (voices.engine_command)."""
    command = prompt_command(line)
    return command is not None and not engine_command(command)


def scan(text: str) -> Scan:
    """Every catalogue hit in ``text``, in line order: each message's first few lines, found by its keys with
    str.find (one C-speed pass per key; a regex alternation of every key is several times slower on a large log)."""
    found: dict[int, list[tuple[Message, str, re.Match[str]]]] = {}
    content = content_lines(text)  # request bodies, prompts, chat text: the user's words, never a message (voices.py)
    transfer = transfer_lines(text)  # lines where "MTP" is the Media Transfer Protocol of phones: blanked there (voices.py)
    merged = merged_lines(text)  # log lines a copy joined into one: each piece read as its own line (voices.py)
    for message in CATALOGUE:
        mine: dict[int, tuple[str, re.Match[str]]] = {}
        for key in message.keys:
            for line_start, line in lines_with(text, key):
                if line_start in content:
                    continue
                for start, raw in line_pieces(line_start, line, merged):
                    if start in mine or (start != line_start or len(raw) < len(line)) and key not in raw:
                        continue
                    if message.engine_flag and _another_programs_command(raw):
                        continue
                    if message.voiced and (anothers_line(raw) or pipe_row(raw)):
                        continue
                    said = raw if message.raw else strip_prefixes(raw)
                    said = without_transfer(said) if line_start in transfer else said
                    match = message.pattern.search(without_operands(said) if message.words_only else said)
                    if match is not None:
                        mine[start] = (raw, match)
                if len(mine) >= _MAX_PER_MESSAGE * len(message.keys):
                    break
        for start in sorted(mine)[:_MAX_PER_MESSAGE]:
            raw, match = mine[start]
            found.setdefault(start, []).append((message, raw, match))
    hits: list[Hit] = []
    number, counted = 1, 0  # line numbers counted forward from the previous hit's line
    for start in sorted(found):
        number += text.count("\n", counted, start)
        counted = start
        hits += [Hit(message, raw[:MAX_LINE].strip(), number, match) for message, raw, match in found[start]]
    return Scan(tuple(hits))


# The lines that say why MTP failed, whatever printed them (diagnosis/failures.py picks the telling line with it).
MTP_FAILURE_MARKERS = re.compile("|".join(m.pattern.pattern for m in CATALOGUE if m.meaning is Meaning.mtp_failure))


def kinds_read() -> str:
    """What kinds of text the tool reads, for the refusal of a text with no meaningful line."""
    return ("llama-server / llama-cli logs and their fragments (errors, asserts, usage listings, a shell's crash line "
            "under the command), Ollama and LM Studio logs and error strings, vLLM and SGLang logs and Python "
            "tracebacks, mtp-bench output and /metrics pages")
