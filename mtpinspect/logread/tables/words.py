"""What a cell's words say, read with "_" and "-" as spaces: a figure (speed, latency, acceptance, mean length,
speed-up), a setting with or without speculative decoding, a key runs must share, a draft length, a number and its unit."""

from __future__ import annotations

import re

_NUMBER = re.compile(r"^[*_`~≈\s]*(?P<value>\d{1,3}(?:,\d{3}){1,4}(?:\.\d{1,20})?(?![\d,])|\d{1,9}(?:\.\d{1,20})?)(?![\d.]|\s*[–—-]\s*\d)(?:\s?(?:±|\+/-|\+-)\s?\d{1,9}(?:\.\d{1,20})?)?\s*(?P<unit>(?!/\s?\d)(?:%|[a-zA-Zµ/×]{1,12}(?:/s)?))?")  # "31.00/0.07": a mean over its std;
# "11.1 +/- 0.1 t/s", "10.0 ± 0.4 t/s": a mean and its spread, the unit after both


# A speed a poster gives as a range of what they saw ("~22-27 tok/s", "31–32 t/s"): its middle, only with a speed's unit
# (a bare "1-4" is a batch range, a key, a date's part).
_SPEED_RANGE = re.compile(r"^[*_`~≈\s]*(?P<low>\d{1,6}(?:\.\d{1,6})?)\s{0,2}[–—-]\s{0,2}(?P<high>\d{1,6}(?:\.\d{1,6})?)\s{0,2}"
                          r"(?P<unit>tok/s|t/s|tokens?/s|tps|toks/s|tok/sec|tokens/sec|tk/s)(?![\w/])", re.IGNORECASE)


def _number(cell: str) -> tuple[float, str] | None:
    """A cell's leading number and the unit after it ("11.91 tok/s" -> (11.91, "tok/s"), "87%" -> (87, "%"))."""
    found = _NUMBER.match(cell)
    if found is None:
        ranged = _SPEED_RANGE.match(cell)
        if ranged is None or float(ranged["high"]) < float(ranged["low"]):
            return None
        return (float(ranged["low"]) + float(ranged["high"])) / 2, ranged["unit"].lower()
    return float(found["value"].replace(",", "")), (found["unit"] or "").lower()  # "1,735.90": thousands


# -- what a cell's words say ----------------------------------------------------------------------------------

# Read on the cell's words with "_" and "-" as spaces: "no_mtp_eager" is "no mtp eager".
_BASELINE = re.compile(r"\b(?:baseline|base model|no spec(?:ulation|ulative(?: decoding)?)?|without (?:speculation|speculative|spec|"
                       r"mtp|draft(?:ing|er)?|eagle\d?|nextn|ngram)|w/o (?:spec\w*|mtp|draft\w*|eagle\d?)|(?:spec(?:ulative)?(?: ?dec(?:oding|ode)?)?|"
                       r"speculation|mtp|draft(?:ing)?|eagle\d?|nextn) ?[=:]? ?(?:off|disabled|false|0)(?![\w.])|no (?:mtp|draft(?:ing|er)?|eagle\d?|nextn|ngram)|"
                       r"non mtp|vanilla|naive(?! (?:draft|spec|mtp|eagle|ngram|medusa))|autoregressive|target (?:model )?only|(?:plain|standard|normal|regular) decoding|"
                       # Chinese headers: "不开mtp" (MTP not on), "关闭投机" (speculation off), "基线" (baseline)
                       r"(?:不开启?|未开启?|关闭|不使用|不用|禁用|无|没有) ?(?:mtp|eagle\d?|nextn|draft|投机|推测|草稿)|基线)\b")
# "Speculative" naming another field's technique (a CPU's or a database's speculative execution, prefetch, loads,
# stores or reads, a CPU's measured in instructions per cycle, "speculative_ipc"; a parser's speculative parsing): not speculative decoding, so no run setting and no tie.
_OTHER_SPECULATION = r"(?! (?:prefetch|execut|exec\b|load|stor|fetch|read|branch|retriev|pag|pars|compil|lock|writ|ipc\b|cycl|instr)\w*)"
_SPEC = re.compile(r"(?<![a-z])(?:mtp|nextn|eagle\d?|draft(?:ing|er)?|spec(?:ulative" + _OTHER_SPECULATION + r"|ulation)?|spec ?dec(?:oding|ode)?|medusa|"
                   r"dflash|ngram|lookahead|n ?max|num speculative tokens)(?![a-z])")
_WITH = re.compile(r"^(?:with|w/) \w")
# Words only speculative decoding uses: a table holding one is tied to it on its own. A bare "draft" or "spec" is
# not (a blog's "draft posts", a build's "spec" target): those tables need the paste's tie (SPECULATIVE_WORDS).
# The engines' own names of a speculative setting, as a header or a row's label writes them (read as _words: "-" and "_"
# as spaces): llama.cpp's flags (common/arg.cpp: --draft-max, --draft-min, --draft-p-min / --spec-draft-p-min,
# --draft-p-split, --spec-draft-n-max, --spec-type, --spec-ngram-*, --model-draft), vLLM's (num_speculative_tokens,
# prompt_lookup_max / _min), SGLang's (speculative_num_steps, speculative_eagle_topk, speculative_num_draft_tokens). A
# table sweeping one of them is a table of runs.
_SETTING_NAME = (r"draft (?:p (?:min|split)|n(?: min| max)?|min|max)|spec (?:draft|type|ngram)|model draft|prompt lookup (?:max|min)|"
                 r"num draft tokens|num speculative tokens|n ?max|speculative (?:num (?:steps|draft tokens)|eagle topk)")
_TIE = re.compile(r"(?<![a-z])(?:mtp|nextn|eagle\d?|medusa|dflash|speculative" + _OTHER_SPECULATION + r"|speculation|spec ?dec(?:oding|ode)?|"
                  + _SETTING_NAME + r"|draft (?:model|tokens?|len(?:gth)?)|accept(?:ance|ed)? (?:rate|len(?:gth)?)|"
                  r"acc len)(?![a-z])")
SETTING_NAME = re.compile(r"(?<![a-z])(?:" + _SETTING_NAME + r")(?![a-z])")
_SETTING_ONLY = re.compile(r"(?:" + _SETTING_NAME + r")")  # a header that is a setting's name and nothing else ("n-max 2" is a run)
# A draft length: "n-max 3", "--spec-draft-n-max 0", "n=2", "k=4", "num_speculative_tokens: 5".
_DEPTH_IN = re.compile(r"(?:n ?max|draft n ?max|draft max|num speculative tokens|num draft(?: tokens)?|\bn|\bk)\s*[=: ]\s*(?P<n>\d{1,3})\b")
# A run's draft length in its own label or column head (words read with "_" and "-" as spaces), as the engines' and their
# benchmarks' tables write it: llama.cpp PR tables' "draft 4", "n_draft=8" (common/arg.cpp's --draft / n_draft),
# "main d=2"; vLLM's num_speculative_tokens; the papers' and SGLang sweeps' "k=4". A bare letter needs its "=" ("k=4",
# "d=3"), never "top k" or "pass@k": a name of several letters may take a space ("draft 4", "num_speculative_tokens 5").
# Read only in a table tied to speculative decoding (as_runs.py's tie): a k-means "k=8" or a "d=3" dimension is not one.
_DRAFT_LENGTH_IN = re.compile(r"(?<![\w.@])(?<!top )(?:(?P<name>num speculative tokens|num draft tokens|(?:spec )?n draft|draft n max|"
                              r"draft max|n ?max|draft)\s*(?:[=:]\s*|\s)|(?P<letter>[kd])\s*=\s*)(?P<n>\d{1,3})(?![\w.])")
_DEPTH_COLUMN = re.compile(r"^(?:spec(?:ulative)? )?(?:n ?max|draft n ?max|draft max|num draft(?: tokens)?|num speculative tokens|spec(?:ulative)? tokens|"
                           r"draft (?:tokens|length|len)|steps|num steps|topk|top k|k|gamma)$")
# A speed-up column: the speculative run's speed over the run without it ("Speedup", "1.8x"); other ratios say no whose.
_SPEEDUP = re.compile(r"\bspeed ?ups?\b")
# "E1 over vanilla": one run's over another's; a change against another run ("Speed Increase": "+59.5%", "Baseline").
_RATIO = re.compile(r"\bratio\b|\bgain\b|×|\bvs\b|\w \bover\b \w|\bincrease\b|\bimprovement\b|\buplift\b")
_LATENCY = re.compile(r"\b(?:tpot|itl|tbt|ms ?/ ?tok(?:en)?|ms per token|s ?/ ?tok(?:en)?|inter token latency|(?:per )?token latency|time per output token)\b")
_SPEED_UNIT = re.compile(r"tok(?:en)?s? ?/ ?s(?:ec)?\b|\btok(?:en)?s? s\b|\bt ?/ ?s\b|\btk ?/ ?s\b|\btps\b|tokens per second|\bthroughput\b")
# A time of the whole request or its first token: lower is better, and not a speed ("decode time", "TTFT").
_TIME = re.compile(r"\b(?:time|duration|latency|ttft|e2e|elapsed)\b")
# A column named by a run and the unit of the time its work took ("Naive(s)", "Medusa (ms)"): lower is better.
# A field name may carry it as its last word instead ("baseline_ms", "speculative_sec"): never a bare "s" or "min",
# which end other words' abbreviations.
_DURATION_HEAD = re.compile(r"(?:\((?P<unit>s|sec|secs|seconds|ms|min|mins|minutes)\)|(?<= )(?P<word>ms|msec|sec|secs|seconds|mins|minutes))$")
_NOT_DECODE = re.compile(r"\bpp\d*\b|\bprompt\b|prefill|\binput\b|\breq(?:uests?)?\b|\bttft\b|\btotal tok")
_SPEED = re.compile(r"\bspeed\b|\bdecode\b|\btg\d*\b|\bgen(?:eration)? rate\b|\beval rate\b")
# SGLang's send_one (python/sglang/test/send_one.py) prints a box table (tabulate's "pretty") headed "Latency (s) | Tokens
# | Acc Length | Speed (token/s)": "acc length" is its acceptance length, its own words (read where the paste names a
# drafter: an account's or an acceleration's "acc" is no tie on its own).
_LENGTH = re.compile(r"\baccept(?:ance|ed)? len(?:gth)?\b|\bacc len(?:gth)?\b|\bmean len\b|\bavg len\b|\bal\b|\btau\b|τ|acceptance length|"
                     r"\btok(?:en)?s? (?:accepted |emitted |generated )?per (?:pass|step|forward|verif\w*|iteration|target (?:pass|step))\b")
# A quantity a table sets beside the speeds that is none ("GPU util (%)", "VRAM (GB)", "power draw (W)").
_OTHER_QUANTITY = re.compile(r"%|°c|\(w\)|\b(?:util(?:i[sz]ation)?|power|watts?|memory|mem|vram|ram|gb|gib|mb|mib|"
                             r"temp(?:erature)?|energy|joules?|cost|price|size|params|parameters|"
                             # counts of the mechanism's work ("forward passes", "drafted tokens"): fewer is the point
                             r"pass(?:es)?|forwards?|iterations?|calls|requests|"
                             r"(?:draft(?:ed)?|output|generated|total|prompt|input) tokens|tokens (?:drafted|generated))\b")
# A count per second of something other than tokens ("main-model passes/s", "steps/s", "req/s"): no decode speed.
_OTHER_PER_SECOND = re.compile(r"\b(?:pass(?:es)?|steps?|forwards?|iterations?|iters?|batch(?:es)?|calls?|rounds?|images?|frames?|ops|"
                               r"quer(?:y|ies))\s?(?:/\s?s(?:ec)?|per s(?:ec(?:ond)?)?)\b")
_RATE = re.compile(r"\baccept(?:ance|ed)?\b|\bacc rate\b|\bacc %|\baccpt\b|\bdraft (?:rate|acc)\b")  # "draft rate": llama.cpp's own words
_KEY = re.compile(r"^(?:bs|batch(?: size)?|concurrency|conc|c|max concurrency|parallel|np|qps|request rate|rps|prompt|prompts|case|dataset|task|"
                  r"category|input len|output len|isl|osl|ctx|context|seq len|gpu|gpus|tp|scenario|workload|test|depth|hardware|device|"
                  r"backend|platform|machine|quant|quants|quantization|quant type|dtype|precision|context length|ctx len|n ctx|"
                  r"context size|kv cache|kv type|prompt length|input length|output length|max tokens|temperature|temp)$")
# One key spelled several ways in one paste's tables ("bs" in one, "batch size" in the next).
_KEY_NAMES = {"batch": "bs", "batch size": "bs", "c": "concurrency", "conc": "concurrency",
              "max concurrency": "concurrency", "prompts": "prompt", "gpus": "gpu", "ctx": "context",
              "context length": "context", "ctx len": "context", "n ctx": "context", "context size": "context",
              "quants": "quant", "quantization": "quant", "quant type": "quant", "temp": "temperature"}
# A cell of speeds before and after speculation was turned on ("22.7 → 40.6 (+79%)"), under a speed's or a change's name.
_ARROW = re.compile(r"(?P<before>\d{1,6}(?:\.\d{1,6})?)\s{0,8}(?:t/s|tok/s|tps)?\s{0,8}(?:→|->|=>|⇒)\s{0,8}(?P<after>\d{1,6}(?:\.\d{1,6})?)")
_CHANGE = re.compile(r"δ|\bdelta\b|\bchange\b")
_PROMPT_ROW = re.compile(r"\bpp\d*\b|\bprefill\b|\bprompt (?:processing|eval)|\bttft\b|\binput\b")
_SPEED_UNITS = frozenset({"", "tok/s", "t/s", "tokens/s", "token/s", "tps", "toks/s", "tok/sec", "tokens/sec", "tk/s"})
_PROMPT_TEST = re.compile(r"^(?:pp\d*|prefill|prompt processing)$")
_ABSENT = frozenset({"-", "—", "–", "n/a", "na", "none", "", "/"})  # a cell left empty on purpose (words: "_" and "-" read as spaces)
_YES = frozenset({"yes", "y", "on", "true", "enabled", "✓", "✔", "x"})
_NO = frozenset({"no", "n", "off", "false", "disabled", "✗", "✘", "-", "—", "none", "0"})
_FILLER = re.compile(r"\b(?:mean|avg|average|median|p50|output|total|decode|gen(?:eration)?|token|tokens|tok|per|s|ms|ts|"
                     r"latency|throughput|tpot|itl|speed|t|tps|sec|eval)\b")


def _words(cell: str) -> str:
    """A cell's words, lowercased, emphasis and code marks dropped, "_" and "-" read as spaces."""
    return re.sub(r"\s+", " ", re.sub(r"[*`_\-]+", " ", cell.lower())).strip()


def _figure(words: str) -> str | None:
    """The figure a header or row label names: "length", "rate", "ratio", "latency", "speed"; None."""
    if _LENGTH.search(words):
        return "length"
    if _RATE.search(words):
        return "rate"
    if _SPEEDUP.search(words):
        return "speedup"
    if _RATIO.search(words):
        return "ratio"
    if _OTHER_PER_SECOND.search(words):
        return "time"  # the mechanism's own pace (passes, steps per second): not the tokens a user gets
    if _LATENCY.search(words):
        return "latency"
    if (_SPEED_UNIT.search(words) or _SPEED.search(words)) and _NOT_DECODE.search(words):
        return "time"  # the prompt's speed, requests per second, prompt and output together: not decoding's
    if _SPEED_UNIT.search(words):
        return "speed"
    if _OTHER_QUANTITY.search(words) and not _SPEED.search(words):
        return "time"  # a row or column of GPU utilisation, memory, power, a count: not decoding's pace, whatever its numbers
    if _TIME.search(words):
        return "time"
    if _DURATION_HEAD.search(words) and _setting(words) is not None:
        return "duration"  # the time a run's work took, per key (each key the same work for every run)
    if _SPEED.search(words):
        return "speed"
    return None


_AR_CELL = re.compile(r"^ar(?: decoding| baseline)?(?: ?[(\[][^)\]]{0,30}[)\]])?$")


def _setting(words: str) -> bool | None:
    """True: the words name a run without speculative decoding; False: one with it; None: neither."""
    if _BASELINE.search(words) or _AR_CELL.match(words):  # "AR (tok/s)": autoregressive decoding, the whole cell
        return True
    depth = _DEPTH_IN.search(words)
    if depth is not None and int(depth["n"]) == 0 and _SPEC.search(words):
        return True  # "--spec-draft-n-max 0": drafting off (a row's own figures can still show it drafted)
    if _SPEC.search(words):
        return False
    length = draft_length(words)
    if length is not None:  # "k=4", "d=2": a drafting run's length; "k=0": drafting off
        return length == 0
    return None


def draft_length(words: str) -> int | None:
    """The draft length a label or column head names ("k=4", "d=2", "draft 8", "n_draft=8", "num_speculative_tokens 5"),
    None where it names none. ``words``: a cell's words (:func:`_words`)."""
    found = _DRAFT_LENGTH_IN.search(words)
    return int(found["n"]) if found is not None and int(found["n"]) <= 64 else None


def without_speculation(text: str, whole: bool = False) -> bool:
    """Whether a label names a run without speculative decoding ("Baseline", "no MTP", "Normal decoding speed");
    ``whole``: the label is nothing else (a cell "baseline", not "baseline vs MTP")."""
    words = _words(text)
    return (_BASELINE.fullmatch(words) if whole else _BASELINE.search(words)) is not None


def names_drafting(text: str) -> bool:
    """Whether a label names a drafter or speculative decoding ("MTP n-max 3", "EAGLE-3", "ngram")."""
    return _SPEC.search(_words(text)) is not None


def _key_of(words: str) -> str:
    """What is left of a label once its setting and figure words are taken out: the key runs must share."""
    words = _BASELINE.sub(" ", words)
    words = _SPEC.sub(" ", words)
    words = _FILLER.sub(" ", _LENGTH.sub(" ", _RATE.sub(" ", words)))
    return " ".join(re.sub(r"[^\w.=]+", " ", words).split())


def _cell_figure(cell: str) -> str | None:
    """The figure a cell's own unit names ("11.91 tok/s", "9.19 ms", "87%")."""
    read = _number(cell)
    if read is None:
        return None
    unit = read[1]
    return "speed" if unit in _SPEED_UNITS - {""} else \
        "latency" if unit in ("ms", "ms/tok", "ms/token") else None


# A column of tokens' pace: a speed in tokens or a per-token latency (not a request's or a connection's).
_TOKEN_PACE = re.compile(r"\btok(?:en)?s?\b|\btpot\b|\bitl\b|\bt ?/ ?s\b|\btps\b|time per output token")


# ik_llama.cpp's and llama.cpp's threads write a run's acceptance after its speed with "@" ("3.90 t/s @ 93%"); "at 90%"
# is as often a GPU's load or a power limit.
_AT_RATE = re.compile(r"@\s*(?P<at>\d{1,3}(?:\.\d{1,4})?)\s*%")


def _cell_acceptance(cell: str) -> float | None:
    """The share of drafts accepted a speed's cell notes after the speed ("3.90 t/s @ 93%", "19.8 tok/s (acceptance
    71%)"), as a fraction; None where it notes none."""
    if _cell_figure(cell) != "speed":
        return None
    note = _RATE_NOTE.search(cell) or _AT_RATE.search(cell)
    value = next((float(v) for v in (note.groupdict().values() if note else ()) if v is not None), None)
    return value / 100 if value is not None and value <= 100 else None


# A grid's corner names its rows' key and its columns' ("tp\\conc": tensor-parallel size by concurrency), as SGLang's
# benchmark sweeps print one grid per figure under its title (benchmark/dflash/bench_dflash_gsm8k_sweep.py's
# _format_table: "DFLASH output tok/s", "Baseline output tok/s", "Speedup (DFLASH / baseline)", "DFLASH acceptance
# length (mean spec_accept_length)"), aligned with spaces or as Markdown pipes.
_GRID_CORNER = re.compile(r"^(?P<rows>[a-z][a-z ]{0,20}?)\s?\\\s?(?P<columns>[a-z][a-z ]{0,20})$")


_RATE_NOTE = re.compile(r"(?i)(?P<before>\d{1,3}(?:\.\d{1,4})?)\s*%\s*(?:accept|acc\b)|accept\w*\D{0,12}?(?P<after>\d{1,3}(?:\.\d{1,4})?)\s*%")


# An engine's or a model file's words (an engine's name, a GGUF's quantization) or a drafter's own figures ("mean len", a
# program's "accept_rate" key): a table of acceptance in a paste holding them is a drafter's. Tokens alone are not: a
# tokenizer's, a rate limiter's or a queue's table has "tokens/s" beside an "accept rate" too.
_MODEL_WORDS = re.compile(r"(?i)\bmean[ _]len\b|\baccept(?:ance)?[ _]len|\bacc(?:ept)?_rate\b|"
                          r"\b(?:ollama|llama[.-]?\w*|vllm|sglang|lm ?studio)\b|\bgguf\b|\bbpw\b|\b(?:ud-)?i?q\d(?:_[a-z0-9]{1,4}){1,3}\b")
# Column names only llama.cpp's server-bench prints (tools/server/bench: predicted tokens per second, "pred").
_LLAMA_TABLE = re.compile(r"\bspec_avg_pred_t/s\b|\bbase_avg_pred_t/s\b")
