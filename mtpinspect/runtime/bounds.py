"""The bounds each numeric option of a measurement on llama-server must keep, and why: one table, read by
the CLI's --help and the API's checks (sweep, drift, diagnose). Kept out of the sweep package, so a command
that shows a bound (diagnose --n-predict) does not import the sweep."""

from __future__ import annotations

from dataclasses import dataclass

from mtpinspect.errors import UsageError

# llama-server's logical batch (`--batch-size`, "default: 2048" in its --help): a draft goes to the target
# in one batch with the token before it, and the server sizes a per-slot draft batch of n-max + 1 tokens
# at startup (n-max 2147483647 makes it allocate gigabytes).
LLAMA_BATCH_DEFAULT = 2048
# The request seed is a uint32 in llama.cpp, and 0xFFFFFFFF (LLAMA_DEFAULT_SEED) means "a random seed".
LLAMA_SEED_RANDOM = 0xFFFFFFFF


@dataclass(frozen=True)
class Bound:
    """The values an option may take, and why."""

    option: str
    low: int
    high: int
    why: str

    def check(self, value: int) -> None:
        if not self.low <= value <= self.high:
            raise UsageError(f"{self.option} {value}: must be within {self.low}..{self.high} ({self.why})")

    @property
    def shown(self) -> str:
        return f"{self.low}-{self.high}"


N_MAX_BOUND = Bound("--n-max", 1, LLAMA_BATCH_DEFAULT - 1,
                    "a draft and the token it follows go to llama-server in one batch of at most --batch-size, "
                    f"default {LLAMA_BATCH_DEFAULT}; the baseline is the run without MTP, not n-max 0")
N_PREDICT_BOUND = Bound("--n-predict", 2, 32768,
                        "the first token is never drafted; a longer request would not end within the request timeout")
REPEAT_BOUND = Bound("--repeat", 1, 1000, "every planned run is kept in memory and in the journal")
CONCURRENCY_BOUND = Bound("--concurrency", 1, 64, "each request has its own llama-server slot (-np), and "
                          "every slot holds a share of the context")
LONG_PROMPT_BOUND = Bound("--long-prompt", 256, 131072, "tokens of the long prompt; it must fit the context (-c) "
                          "with --n-predict tokens after it")
# llama.cpp accepts any temperature; above this, sampling is noise and says nothing about serving.
TEMPERATURE_MAX = 5.0
SEED_BOUND = Bound("--seed", 0, LLAMA_SEED_RANDOM - 1, f"llama.cpp's seed is a uint32; {LLAMA_SEED_RANDOM} means random")


def check_temperature(value: float) -> None:
    """A sampling temperature within [0, TEMPERATURE_MAX]; nan fails the comparison too."""
    if not 0.0 <= value <= TEMPERATURE_MAX:
        raise UsageError(f"--temperature {value:g}: must be within 0..{TEMPERATURE_MAX:g} (0 is greedy)")


def check_rate(rate: float) -> None:
    """A forced acceptance (--synthetic) is within [0, 1]; nan fails the comparison too."""
    if not 0.0 <= rate <= 1.0:
        raise UsageError(f"--synthetic {rate:g}: acceptance must be within [0, 1]")
