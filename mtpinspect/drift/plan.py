"""The drift experiment: which servers start, which passes over the prompts each serves, and which two
passes each trigger compares.

Every trigger changes one thing and holds the rest: the same server twice (the control), a server
started again (restart), MTP at each n-max against the baseline, the prompts sent all at once against
one by one on the same server (batching; the slot count is the same on both sides), and on a CPU build
the thread count. The baseline's first pass is the reference: it asks for the top candidates of every
token (llama-server's ``n_probs``, which does not change the text), so a divergence can be judged.
MTP passes never ask for them: with ``n_probs`` llama-server drafts a little differently (the draft
counts change, the text does not), and the acceptance shown must be the user's.
"""

from __future__ import annotations

from dataclasses import dataclass

from mtpinspect.vocabulary import Word

REFERENCE = "baseline"


class Trigger(Word):
    control = "control"  # the same server, the same requests, twice
    restart = "restart"  # the same settings on a server started again
    mtp = "mtp"  # MTP at one n-max against the baseline
    batch = "batch"  # all prompts at once against one by one, on one server with a slot each
    slots = "slots"  # one by one on one slot against one by one on many (what batching holds fixed)
    threads = "threads"  # CPU: another thread count


@dataclass(frozen=True)
class Server:
    """One server start: the baseline or MTP at ``n_max``, with ``threads`` (None: the engine's own) and ``slots``."""

    id: str
    n_max: int | None = None
    threads: int | None = None
    slots: int = 1


@dataclass(frozen=True)
class Pass:
    """The prompts sent once to a server: one by one, or all at once."""

    id: str
    server: Server
    at_once: bool = False
    probabilities: bool = False  # ask for the top candidates (n_probs, logprobs): baseline passes

    @property
    def label(self) -> str:
        """What progress lines call it."""
        return self.id

    @property
    def configuration(self) -> Pass:
        """Progress names a server start by its ``configuration.label`` (sweep/progress.py): the first pass."""
        return self


@dataclass(frozen=True)
class Check:
    """One trigger: two passes that differ in that one thing."""

    trigger: Trigger
    reference: str  # the pass id of the baseline side
    other: str
    label: str  # "MTP n-max 3 vs baseline"
    change: str  # what differs, in the engine's terms


@dataclass(frozen=True)
class DriftPlan:
    passes: tuple[Pass, ...]  # in the order they run; passes of one server are consecutive
    checks: tuple[Check, ...]
    not_measured: tuple[str, ...]  # triggers that cannot be measured here, and why

    @property
    def servers(self) -> list[Server]:
        return list(dict.fromkeys(p.server for p in self.passes))


def build_plan(n_max: tuple[int, ...], *, slots: int, threads: tuple[int, int] | None, probabilities: bool,
               restart: str | None, baseline: str | None, own_slots: bool = True) -> DriftPlan:
    """The passes and checks.

    ``threads``: (the held thread count, the other one) on a CPU build, else None. ``probabilities``: ask
    the baseline's passes for their top candidates. ``own_slots``: the slot count is this tool's to set
    (llama-server started here), so it is checked alone. ``restart``/``baseline``: None when possible, else why not
    (a running server cannot be restarted; an endpoint without --baseline-endpoint has no baseline).
    """
    held = threads[0] if threads else None
    base = Server(REFERENCE if baseline is None else "mtp-endpoint", threads=held)
    # Never from an MTP server: with n_probs llama-server drafts a little differently.
    probabilities = probabilities and baseline is None
    passes = [Pass(REFERENCE, base, probabilities=probabilities), Pass("again", base, probabilities=probabilities)]
    checks = [Check(Trigger.control, REFERENCE, "again", "the same server twice", "nothing")]
    not_measured = []
    if baseline is None:
        for n in sorted(set(n_max)):
            server = Server(f"n-max-{n}", n_max=n, threads=held)
            passes.append(Pass(server.id, server))
            checks.append(Check(Trigger.mtp, REFERENCE, server.id, f"MTP n-max {n} vs baseline", f"MTP on at n-max {n}"))
    else:
        not_measured.append(f"MTP vs baseline: {baseline}")
    if restart is None:
        again = Server("restart", threads=held)
        passes.append(Pass("restart", again, probabilities=probabilities))
        checks.append(Check(Trigger.restart, REFERENCE, "restart", "a restart", "the server started again"))
    else:
        not_measured.append(f"a restart: {restart}")
    if slots > 1:
        many = Server(f"slots-{slots}", threads=held, slots=slots)
        passes += [Pass("one-by-one", many, probabilities=probabilities), Pass("at-once", many, at_once=True, probabilities=probabilities)]
        checks.append(Check(Trigger.batch, "one-by-one", "at-once", f"one by one vs {slots} at once",
                            f"{slots} requests at once in shared batches"))
        if own_slots:
            checks.append(Check(Trigger.slots, REFERENCE, "one-by-one", f"1 slot vs {slots} slots, one by one",
                                f"{slots} slots instead of 1"))
    if threads is not None:
        other = Server(f"threads-{threads[1]}", threads=threads[1])
        passes.append(Pass(other.id, other, probabilities=probabilities))
        checks.append(Check(Trigger.threads, REFERENCE, other.id, f"-t {threads[0]} vs -t {threads[1]}",
                            f"{threads[1]} threads instead of {threads[0]}"))
    return DriftPlan(tuple(passes), tuple(checks), tuple(not_measured))
