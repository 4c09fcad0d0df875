"""What a pasted log says about the run behind it: was MTP on, which drafters it chained, which app wrote it.

A crash or failed start is MTP's only when the log shows MTP was on. The signs, from the engines'
sources:

- llama.cpp: ``--spec-type`` naming ``draft-mtp`` (``mtp`` on PR #22673's branch), also in an
  ``ini`` preset (``spec-type=draft-mtp``) or the request's ``"speculative.types":"none,draft-mtp"``;
  the draft-context lines of common/speculative.cpp and tools/server/server-context.cpp
  (``adding speculative implementation 'draft-mtp'``, ``failed to create MTP context``,
  ``failed to load MTP head from``, ``context type MTP requested``), a Gemma 4 assistant drafter
  (``Gemma4Assistant requires ctx_other``, src/llama-context.cpp) or an ``mtp-`` draft file;
- vLLM: ``speculative_config`` whose method names MTP (``mtp``, ``deepseek_mtp``, ``qwen3_next_mtp``);
- Ollama: the runner's command line in ``msg="starting llama server" cmd="..."`` (llm/llama_server.go
  passes ``--spec-type draft-mtp`` for a GGUF with a head, ``draft-dflash`` for a DFlash DRAFT layer).

Other drafters (``draft-dflash``, ``draft-eagle3``, ``draft-simple``, a DFlash/EAGLE draft file) are
noted apart: a run that chains one of them with ``draft-mtp`` on one ``-md`` file is a combination
llama.cpp cannot serve (common_speculative_init_result loads the single -md file as the MTP context,
llama.cpp#27839). MTP was off when the log shows the run without any sign: a command line with flags
and no MTP, only another drafter, an app's runner command without it, a crash right after a prompt-cache
save (server-context.cpp's "updating prompt cache"), or the poster's own words ("with MTP turned off").
A bare crash excerpt shows neither: MTP use is then "not shown".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mtpinspect.logread.drafters import Drafter, drafter_named
from mtpinspect.runtime.flags import MTP_SPEC_TYPE
from mtpinspect.vocabulary import Word


class MtpUse(Word):
    """Whether the run in a log had MTP on."""

    on = "on"
    off = "off"
    not_shown = "not shown"  # a bare excerpt: no command line, no draft lines, nothing of the run's setup


class LogApp(Word):
    """An app that runs llama-server and writes its own lines around llama.cpp's."""

    ollama = "ollama"
    lm_studio = "lm-studio"


# A command line (or preset, or request field) that chains spec types: "--spec-type draft-dflash,draft-mtp".
_SPEC_TYPES = re.compile(r"(?:--spec-type[ =]|spec-type=|\"speculative\.types\":\")\s*(?P<types>[\w,:=.-]+)")
_DRAFT_FILE = re.compile(r"(?:^|\s)(?:-md|--model-draft|--spec-draft-model|--draft-model)[ =](?P<path>\S+)|"
                         r"(?:loading|failed to load) draft model,? '(?P<loaded>[^']+)'")
# vLLM: "--speculative-config '{\"method\": \"mtp\", ...}'", "speculative_config=SpeculativeConfig(method='mtp'",
# "'speculative_config': {'method': 'dspark', ...}".
_VLLM_METHOD = re.compile(r"speculative[_-]config\W[^\n]*?\bmethod\W+(?P<method>[\w-]+)")
# The other engines' drafter settings on a command line: vLLM V0's --speculative-model ("[ngram]", a draft model's repo;
# vllm/engine/arg_utils.py before V1), SGLang's --speculative-algorithm (EAGLE, EAGLE3, STANDALONE, NGRAM; NEXTN is MTP,
# python/sglang/srt/server_args.py). argparse takes an unambiguous prefix ("--speculative-algo").
_ENGINE_DRAFTER = re.compile(r"--speculative[-_]model[ =][\"']?(?P<model>[^\s\"']{1,300})|"
                             r"--speculative-algo\w{0,10}[ =][\"']?(?P<algo>[A-Za-z0-9_]{1,40})")
_MTP_FILE = re.compile(r"(?:^|[/\\'\" ])mtp-[\w.-]+\.gguf|-MTP\.gguf|assistant[\w.-]*\.gguf", re.IGNORECASE)
_OTHER_FILE = re.compile(r"dflash|eagle|dspark", re.IGNORECASE)
_MTP_TYPES = frozenset({MTP_SPEC_TYPE, "mtp"})
# Ollama's own lines: Go slog text ("time=... level=INFO source=server.go:431 msg=...", server/ and llm/),
# older log.Printf lines ("2024/05/12 06:47:18 routes.go:1006: INFO ..."), its runner and its journal unit.
OLLAMA_LINE = re.compile(r"\btime=\S+ level=[A-Z]+ source=[\w./-]+\.go:\d+ msg=|^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d [\w./-]+\.go:\d+: |"
                         r"\bollama\[\d+\]: |ollama runner |ollama_llama_server|^ollama\s+\| ", re.MULTILINE)
# LM Studio's engine protocol (its llama-server build prints LMSTUDIO_STARTUP_ERROR, the app wraps the exit).
LM_STUDIO_LINE = re.compile(r"LMSTUDIO_STARTUP_ERROR|Engine protocol runtime llama-server|[/\\]\.?lmstudio[/\\]")
# A command line with its flags (not "llama-server[1234]:" in a journal prefix).
_COMMAND = re.compile(r"(?:^|[\s/\\\"`])(?:llama-server|llama-cli|llama-bench|vllm serve|ollama runner|ollama_llama_server)"
                      r"(?:\.exe)?\s+(?:-|\S+\s+-)|(?:^|[\s$>])\.[/\\]main(?:\.exe)?\s+-")  # ./main: llama.cpp before llama-cli
# The poster's own words next to the paste, and a crash in the prompt cache's save (server-context.cpp).
_SAID_OFF = re.compile(r"MTP (?:turned|switched) off|with(?:out)? MTP (?:off|disabled)|without MTP\b", re.IGNORECASE)
_CACHE_SAVE = re.compile(r"updating prompt cache|saving prompt with length|prompt_save")


@dataclass(frozen=True)
class RunFacts:
    mtp: MtpUse
    evidence: str  # the line that shows MTP on, or what the log shows instead
    spec_types: tuple[str, ...] = ()  # as the command line chains them, in order
    draft_file: str | None = None
    other_drafter: str | None = None  # a drafter that is not MTP (draft-dflash, an EAGLE file, ...)
    app: LogApp | None = None

    @property
    def other_drafting(self) -> bool:
        """MTP off but another drafter on (EAGLE3, DFlash, a draft model, n-gram): the run was on the speculative path,
        and a failure its drafter's code or lines explain is that path's."""
        return self.mtp is MtpUse.off and (self.other_drafter is not None or self.draft_file is not None or
                                           any(t != "none" for t in self.spec_types))

    @property
    def drafter(self) -> Drafter | None:
        """The drafter the run set or its lines show, by its setting's or file's words (drafters.py): MTP when MTP is on,
        None when the text shows no drafter."""
        if self.mtp is MtpUse.on:
            return Drafter.mtp
        if not (self.other_drafter or self.draft_file or any(t != "none" for t in self.spec_types)):
            return None
        return drafter_named(self.other_drafter or next((t for t in self.spec_types if t != "none"), None) or self.draft_file) \
            or Drafter.draft_model

    @property
    def combines_drafters(self) -> bool:
        """draft-mtp chained with another model drafter on the same run."""
        return self.mtp is MtpUse.on and self.other_drafter is not None and bool(_MTP_TYPES & set(self.spec_types))


def _first(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    return pattern.search(text)


def _line_of(text: str, match: re.Match[str]) -> str:
    start = text.rfind("\n", 0, match.start()) + 1
    end = text.find("\n", match.end())
    return text[start : len(text) if end < 0 else end].strip()[:300]


def read_run(text: str) -> RunFacts:
    """What ``text`` (a whole log) shows of the run: MTP on or off, the drafters, the app."""
    app = LogApp.ollama if OLLAMA_LINE.search(text) else LogApp.lm_studio if LM_STUDIO_LINE.search(text) else None
    types: list[str] = []
    for found in _SPEC_TYPES.finditer(text):
        types += [t.split(":")[0] for t in found["types"].split(",") if t]
    draft = _first(_DRAFT_FILE, text)
    draft_file = (draft["path"] or draft["loaded"]).strip("'\"`") if draft else None
    methods = [m["method"].lower() for m in _VLLM_METHOD.finditer(text)]
    others = [t for t in types if t.startswith("draft-") and t not in _MTP_TYPES]
    others += [m for m in methods if "mtp" not in m]
    for found in _ENGINE_DRAFTER.finditer(text):
        named = found["model"] or found["algo"]
        if named.lower() not in ("none", "null") and "mtp" not in named.lower() and "nextn" not in named.lower():
            others.append(named)
    if draft_file and _OTHER_FILE.search(draft_file):
        others.append(draft_file)
    other = others[0] if others else None
    # The lines only an MTP run prints are catalogue.py's; runs.py adds them to what this finds.
    signs = [(m.start(), _line_of(text, m)) for m in (_MTP_FILE.search(text),) if m]
    for found in _SPEC_TYPES.finditer(text):
        if _MTP_TYPES & {t.split(":")[0] for t in found["types"].split(",")}:
            signs.append((found.start(), _line_of(text, found)))
    for found in _VLLM_METHOD.finditer(text):
        if "mtp" in found["method"].lower():
            signs.append((found.start(), _line_of(text, found)))
    if signs:
        return RunFacts(MtpUse.on, min(signs)[1], tuple(types), draft_file, other, app)
    command = _first(_COMMAND, text)
    said, cache = _first(_SAID_OFF, text), _first(_CACHE_SAVE, text)
    shown = (f"the command line shows no MTP: {_line_of(text, command)}" if command else
             f"another drafter, not MTP: {other}" if other else
             f"the poster says so: {_line_of(text, said)}" if said else
             f"it dies saving the prompt cache, not drafting: {_line_of(text, cache)}" if cache else
             # Ollama's log names the runner's flags when it starts one; an app line alone shows nothing of MTP.
             f"{app.value} starts its runner without MTP" if app is LogApp.ollama else None)
    if shown is None:
        return RunFacts(MtpUse.not_shown, "no command line, no MTP draft model, no draft-context line in the log",
                        tuple(types), draft_file, other, app)
    return RunFacts(MtpUse.off, shown, tuple(types), draft_file, other, app)
