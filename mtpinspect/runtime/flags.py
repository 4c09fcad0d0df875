"""llama-server's command line as the pinned llama.cpp spells it (common/arg.cpp), modelled once.

Flag spellings are the most version-sensitive knowledge in the project: every flag mtpinspect sets,
reads or refuses is a :class:`Flag` here, and :class:`ServerArgs` is the one reader and editor of an
argument list (the sweep's pass-through arguments, the run a diagnosis explains, the server launcher).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from mtpinspect.errors import UsageError


@dataclass(frozen=True)
class Flag:
    """One llama-server option under all its spellings; the first is the one mtpinspect writes."""

    spellings: tuple[str, ...]
    takes_value: bool = True

    def matches(self, arg: str) -> bool:
        """``arg`` is this flag, alone or as ``--flag=value``."""
        return arg.partition("=")[0] in self.spellings

    def spelled(self, value: object = None) -> list[str]:
        """The flag as mtpinspect writes it, with its value."""
        return [self.spellings[0]] if value is None else [self.spellings[0], str(value)]


MODEL = Flag(("-m", "--model"))
HF_REPO = Flag(("-hf", "-hfr", "--hf-repo"))
HF_FILE = Flag(("--hf-file", "-hff"))
HOST = Flag(("--host",))
PORT = Flag(("--port",))
PARALLEL = Flag(("-np", "--parallel"))
METRICS = Flag(("--metrics",), takes_value=False)
THREADS = Flag(("-t", "--threads"))
CTX_SIZE = Flag(("-c", "--ctx-size"))
TEMPERATURE = Flag(("--temp", "--temperature"))
SPEC_TYPE = Flag(("--spec-type",))
N_MAX = Flag(("--spec-draft-n-max",))
P_MIN = Flag(("--spec-draft-p-min", "--draft-p-min"))
# Given a draft GGUF without --spec-type, llama-server infers the type from it.
DRAFT_MODEL = Flag(("-md", "--spec-draft-model", "--model-draft"))
# Samples the draft on the backend (default on in the pinned build); Ollama passes it with draft-mtp.
SPEC_BACKEND_SAMPLING = Flag(("--spec-draft-backend-sampling",), takes_value=False)
CACHE_TYPE_K = Flag(("-ctk", "--cache-type-k"))
CACHE_TYPE_V = Flag(("-ctv", "--cache-type-v"))
SYNTH_RATES = Flag(("--spec-synth-rates",))
SYNTH_LEN = Flag(("--spec-synth-len",))
# The draft length of the n-gram methods: each has its own flag, --spec-draft-n-max does not reach them
# (common/speculative.cpp builds ngram-simple with ngram_simple.size_m, ngram-mod with ngram_mod.n_max).
NGRAM_SIMPLE_SIZE_M = Flag(("--spec-ngram-simple-size-m",))
NGRAM_MOD_N_MAX = Flag(("--spec-ngram-mod-n-max",))
# Drafts shorter than this are dropped by ngram-mod (default 48, above most n-max values swept).
NGRAM_MOD_N_MIN = Flag(("--spec-ngram-mod-n-min",))
NGRAM_MOD_N_MIN_DEFAULT = 48

# Flags that MTP crash workarounds change (runtime/workarounds.py).
BATCH = Flag(("-b", "--batch-size"))
UBATCH = Flag(("-ub", "--ubatch-size"))
SPLIT_MODE = Flag(("-sm", "--split-mode"))
FLASH_ATTN = Flag(("-fa", "--flash-attn"))
NO_REPACK = Flag(("-nr", "--no-repack"), takes_value=False)
GPU_LAYERS = Flag(("-ngl", "--gpu-layers", "--n-gpu-layers"))
DRAFT_GPU_LAYERS = Flag(("-ngld", "--spec-draft-ngl", "--gpu-layers-draft", "--n-gpu-layers-draft"))
DRAFT_CACHE_TYPE_K = Flag(("-ctkd", "--spec-draft-type-k", "--cache-type-k-draft"))
DRAFT_CACHE_TYPE_V = Flag(("-ctvd", "--spec-draft-type-v", "--cache-type-v-draft"))
OVERRIDE_TENSOR = Flag(("-ot", "--override-tensor"))

# The launcher sets these itself: the model, the loopback host and a free port.
LAUNCHER_FLAGS = (MODEL, HOST, PORT)
# The flags that choose a speculative configuration.
SPEC_FLAGS = (SPEC_TYPE, N_MAX, DRAFT_MODEL)
# What a sweep sets per configuration (a synthetic run adds the --spec-synth-* pair).
CONFIGURATION_FLAGS = (SPEC_TYPE, N_MAX, SYNTH_RATES, SYNTH_LEN, NGRAM_SIMPLE_SIZE_M, NGRAM_MOD_N_MAX, NGRAM_MOD_N_MIN)

# Accepted --spec-type values (common/speculative.cpp); `mtp` is not one of them.
SPEC_TYPES = frozenset({
    "none", "draft-simple", "draft-eagle3", "draft-mtp", "draft-dflash", "draft-dspark",
    "ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache",
})
MTP_SPEC_TYPE = "draft-mtp"
# A separate draft model (-md FILE): the classic draft-and-verify method, not MTP.
DRAFT_SPEC_TYPE = "draft-simple"


class ServerArgs(tuple[str, ...]):
    """A llama-server argument list (a tuple of str), read and edited by flag: every spelling,
    `--flag value` or `--flag=value`."""

    @classmethod
    def of(cls, args: Iterable[str]) -> ServerArgs:
        return cls(args)

    @property
    def args(self) -> tuple[str, ...]:
        return tuple(self)

    def has(self, *flags: Flag) -> bool:
        return any(flag.matches(arg) for arg in self.args for flag in flags)

    def present(self, flags: Iterable[Flag]) -> list[str]:
        """The spelling used for each of ``flags`` that the arguments contain, in the order given."""
        found = []
        for flag in flags:
            used = next((arg.partition("=")[0] for arg in self.args if flag.matches(arg)), None)
            if used is not None:
                found.append(used)
        return found

    def values(self, flag: Flag) -> list[str]:
        """Every value given to ``flag``, in order; UsageError when one is missing."""
        found = []
        index = 0
        while index < len(self.args):
            arg = self.args[index]
            if flag.matches(arg):
                name, has_eq, inline = arg.partition("=")
                if has_eq:
                    found.append(inline)
                elif index + 1 < len(self.args):
                    found.append(self.args[index + 1])
                    index += 1
                else:
                    raise UsageError(f"llama-server argument {name}: expects a value")
            index += 1
        return found

    def value(self, flag: Flag) -> str | None:
        """The value llama-server uses: the last one given."""
        found = self.values(flag)
        return found[-1] if found else None

    def without(self, *flags: Flag) -> ServerArgs:
        """The arguments with ``flags`` (and their values) taken out."""
        kept: list[str] = []
        skip = False
        for arg in self.args:
            if skip:
                skip = False
                continue
            flag = next((f for f in flags if f.matches(arg)), None)
            if flag is not None:
                skip = flag.takes_value and "=" not in arg
                continue
            kept.append(arg)
        return ServerArgs(kept)

    def added(self, *args: str) -> ServerArgs:
        return ServerArgs((*self, *args))

    # -- the settings a diagnosis reads --------------------------------------------------------------

    @property
    def spec_type(self) -> str | None:
        """Repeated --spec-type values add up in llama.cpp (comma-joined here), unlike other flags."""
        found = self.values(SPEC_TYPE)
        return ",".join(found) if found else None

    @property
    def spec_types(self) -> list[str]:
        return [t.strip() for t in (self.spec_type or "").split(",") if t.strip()]

    @property
    def draft_model(self) -> str | None:
        return self.value(DRAFT_MODEL)

    @property
    def n_max(self) -> int | None:
        return self._number(N_MAX, int)

    @property
    def p_min(self) -> float | None:
        return self._number(P_MIN, float)

    @property
    def temperature(self) -> float | None:
        return self._number(TEMPERATURE, float)

    @property
    def ctx_size(self) -> int | None:
        return self._number(CTX_SIZE, int)

    @property
    def threads(self) -> int | None:
        return self._number(THREADS, int)

    @property
    def sets_spec(self) -> bool:
        """The arguments choose a speculative configuration (type, draft model or n-max)."""
        return self.has(*SPEC_FLAGS)

    def checked(self) -> ServerArgs:
        """Self, once every flag read above has its value and every number parses (UsageError otherwise)."""
        for name in ("spec_type", "draft_model", "n_max", "p_min", "temperature", "ctx_size", "threads"):
            getattr(self, name)
        return self

    def _number(self, flag: Flag, kind: type[int] | type[float]) -> int | float | None:
        text = self.value(flag)
        if text is None:
            return None
        try:
            return kind(text)
        except ValueError as exc:
            raise UsageError(f"llama-server arguments: {exc}") from None
