"""Runs a poster writes outside tables: results listed one run a line (:func:`_listed_run`), speeds in sentences
(:func:`sentence_runs`), and acceptance figures read by their words wherever they stand (:func:`labelled_samples`)."""

from __future__ import annotations

import re
from dataclasses import replace

from mtpinspect.logread.catalogue import SPECULATIVE_WORDS
from mtpinspect.logread.figures import Sample
from mtpinspect.logread.formats import Figures, LineFormat, Scope
from mtpinspect.logread.tables.words import names_drafting, without_speculation

# A poster's line of results, one run a line: "Without MTP: 25.3 t/s", "- MTP n-max 3: **19.8 tok/s** (acceptance 71%)".
# Read only where its label names speculation or its absence (words.py's: one place for them).
_LISTED_RUN = re.compile(r"^[-*>#\s]{0,6}(?P<label>[^:|=\t\n]{1,80}?)(?:\s*[:=]\s*|\t\s*|\s{2,})[*_`]{0,2}(?P<value>\d{1,6}(?:\.\d{1,4})?)[*_`]{0,2}\s*"
                         r"(?:t/s|tok/s|tokens?/s|tps)\b(?P<rest>[^\n]{0,160})$", re.IGNORECASE)
_RATE_AFTER = re.compile(r"(?i)(?P<value>\d{1,3}(?:\.\d{1,4})?)\s*%\s*(?:accept|acc\b)|accept\w*\D{0,12}?(?P<after>\d{1,3}(?:\.\d{1,4})?)\s*%|@\s*(?P<at>\d{1,3}(?:\.\d{1,4})?)\s*%")
LISTED_RUNS_FORMAT = LineFormat("results listed one run a line", Scope.summary, ("/s",), re.compile(r"/s"))
# Acceptance figures read by their words wherever they stand (a benchmark's summary, a bullet, a bold "**Accpt Len:
# 1.89**", a tqdm line): the label says which figure, with or without "average"/"mean", however abbreviated.
# The label opens its clause, or follows a drafter's word: "Loan acceptance rate", "ICLR 2025 acceptance rate" are
# someone else's.
_OPENS = (r"(?:^|(?<=[^\w\s])|(?<=[^\w\s] )|" +
          "|".join(rf"(?<={word}[ _])" for word in ("spec", "mtp", "draft", "eagle", "eagle3", "speculative")) + ")")
_LABELLED_LENGTH = re.compile(r"(?i)" + _OPENS + r"(?:(?:avg\.?|average|mean)[ _])?(?:accept(?:ance|ed)?|accpt|acc)[ _.-]?len(?:gth)?\b"
                              r"[*_`\s\"']{0,3}[:=][*_`\s]{0,3}(?P<len>\d{1,3}(?:\.\d{1,12})?)(?![\d.]*\s*%)")
_LABELLED_RATE = re.compile(r"(?i)" + _OPENS + r"(?:(?:avg\.?|average|mean|draft)[ _])?(?:accept(?:ance)?|accpt)[ _.-]?rate\b"
                            r"[*_`\s\"']{0,3}[:=][*_`\s]{0,3}(?P<rate>\d{1,3}(?:\.\d{1,12})?)\s*(?P<pct>%)?")
# The share of drafted tokens accepted written before its words, as an app's footer shows it (LM Studio's "82.0% draft
# tokens accepted", apps that copy it): "draft tokens" is speculative decoding's own phrase.
_RATE_BEFORE = re.compile(r"(?i)(?<![\d.])(?P<rate>\d{1,3}(?:\.\d{1,6})?)\s?%\s(?:of\s)?(?:the\s)?draft(?:ed)?\stokens?\s(?:were\s)?accepted\b")
# The line's decode speed: its output or throughput figure where it names one (a tqdm line also times the input).
_LINE_SPEED = re.compile(r"(?i)(?:output|throughput)\W{0,4}(?P<value>\d{1,6}(?:\.\d{1,6})?)\s*(?:tokens?/s|toks/s|tok/s|t/s)\b")
# A label that names a figure, not a run ("Average Accept length", "#questions", "Throughput").
_FIGURE_NAME = re.compile(r"(?i)\b(?:accept|accpt|acc_|throughput|latency|questions|speed|length|rate|tokens?)\b|acc_")
_LINE_LABEL = re.compile(r"^[-*>#\s]{0,6}(?P<label>[^:\[\]|=\n]{1,80}?(?:=\s*\d{1,4})?)\s*[,:\[]")
_HEADING = re.compile(r"^(?:#{1,6}\s+(?P<h>[^\n]{1,80})|[*_]{2}(?P<b>[^*_\n]{1,80})[*_]{2}:?|(?P<c>[^:\n]{1,80}):)$")
LABELLED_FORMAT = LineFormat("acceptance figures by their words", Scope.summary, ("accept", "accpt", "acc "), re.compile(r"acc"))


def _listed_run(line: str) -> Figures | None:
    """A results line of one run ("With MTP (n-max 3): 19.8 t/s, 71% accepted"), None when it is not one."""
    found = _LISTED_RUN.match(line) if "/s" in line and len(line) <= 400 else None
    if found is None:
        return None
    label = found["label"].strip(" *_`")
    baseline = without_speculation(label)
    if not baseline and not names_drafting(label):
        return None
    rate = _RATE_AFTER.search(found["rest"])
    value = next((float(v) for v in (rate.group("value", "after", "at") if rate else ()) if v is not None), None)
    return Figures(speed=float(found["value"]), setting=label[:200], baseline=baseline,
                   acceptance=value / 100 if value is not None and value <= 100 and not baseline else None)


# A speed in a sentence of the paste ("without MTP I get 41 t/s", "baseline is ~52 tok/s", "no spec: 30.1 tokens/s"): the
# words since the figure before it say whose.
_SPOKEN_SPEED = re.compile(r"(?i)(?<![\d.])(?<!\+/-\s)(?<!±\s)(?<!±)(?P<value>\d{1,6}(?:\.\d{1,4})?)\s?(?:t/s|tok/s|toks/s|tokens?/s(?:ec)?|tokens per second|tps)\b")
_SENTENCE_REACH = 60  # the words before a figure that can name its run: one clause


def sentence_baselines(text: str) -> list[Sample]:
    """Runs without speculation the poster gives in a sentence of the paste ("Without MTP I get 41 t/s"): a speed whose
    clause names the absence of drafting and no drafter after it ("MTP off: 41 t/s", never "baseline vs MTP: 30 t/s").
    A line an engine printed ("eval time = ...") is the engine's run, not a sentence."""
    return [s for s in sentence_runs(text) if s.figures.baseline]


def sentence_runs(text: str) -> list[Sample]:
    """The runs sentences of the paste give, a speed each, whose clause (the words before it, else after it, up to the
    next figure or clause) names the absence of drafting (a run without speculation) or a drafter ("52 t/s with MTP
    (accept 78%)": a run with it, its acceptance when the clause gives one)."""
    found: list[Sample] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if len(line) > 400 or "/s" not in line and "per second" not in line and "tps" not in line.lower():
            continue
        if "|" in line or re.search(r"(?i)\beval time\b|\bslot\b|\bsrv\b|\bINFO\b|throughput:", line):
            continue  # a table's row (as_runs.py reads it) or an engine's own line
        start = 0
        speeds = list(_SPOKEN_SPEED.finditer(line))
        for at, speed in enumerate(speeds):
            clause = line[max(start, speed.start() - _SENTENCE_REACH):speed.start()]
            start = speed.end()
            before = _CLAUSE_CUT.split(clause)[-1]
            # Or the words right after it, up to the next figure or clause: "41 t/s without MTP, 33 t/s with it".
            after = _CLAUSE_CUT.split(line[speed.end():speeds[at + 1].start() if at + 1 < len(speeds) else len(line)][:_SENTENCE_REACH])[0]
            figures: Figures | None = None
            if (words := next((w for w in (before, after) if _names_only_absence(w)), None)) is not None:
                figures = Figures(speed=float(speed["value"]), setting=words.strip(" :=-*_`")[:200], baseline=True)
            elif (words := next((w for w in (before, after) if names_drafting(w) and not without_speculation(w)), None)):
                rate = _RATE_AFTER.search(words)
                value = next((float(v) for v in (rate.group("value", "after", "at") if rate else ()) if v is not None), None)
                figures = Figures(speed=float(speed["value"]), setting=words.strip(" :=-*_`")[:200], baseline=False,
                                  acceptance=value / 100 if value is not None and value <= 100 else None)
            if figures is not None:
                found.append(Sample(LISTED_RUNS_FORMAT, figures, line[:300], number))
    return found


_CLAUSE_CUT = re.compile(r"[,;(.]\s|\b(?:and|but|while|vs\.?|versus|whereas)\b")
_NEGATED = re.compile(r"(?i)\b(?:without|w/o|no|non)[ -]\w+|\w+[ -](?:off|disabled)\b")


def _names_only_absence(words: str) -> bool:
    """Whether a clause names a run without drafting and no drafter besides the one it negates ("without MTP I get")."""
    return without_speculation(words) and not names_drafting(_NEGATED.sub("", words))


def _labelled(line: str, above: str) -> Figures | None:
    """A line's acceptance figures by their words, its speed and its run's label (the line's own, else the line above
    it when that one ends in a colon: "EAGLE-3 (num_steps=8):"); a line without speculation that times a baseline
    run ("* vanilla, [...] output: 128.64 toks/s") too; None otherwise."""
    if len(line) > 400:
        return None
    length, rate = _LABELLED_LENGTH.search(line), _LABELLED_RATE.search(line) or _RATE_BEFORE.search(line)
    speed = _LINE_SPEED.search(line)
    named = _LINE_LABEL.match(line)
    label = named["label"].strip(" *_`") if named else ""
    if above and (not label or _FIGURE_NAME.search(label)):  # "#questions: 80, ...": the heading names the run
        label = above
    baseline = bool(label) and without_speculation(label)
    if length is None and rate is None or baseline:  # a baseline's "acceptance" (acc_length=1.00) is no drafter's
        return Figures(speed=float(speed["value"]), setting=label[:200], baseline=True) if baseline and speed else None
    mean_length = float(length["len"]) if length is not None and 1 <= float(length["len"]) <= 64 else None
    value = float(rate["rate"]) if rate is not None else None
    percent = rate is not None and (rate.re is _RATE_BEFORE or rate["pct"])
    acceptance = (value / 100 if percent or value > 1 else value) if rate is not None and value is not None else None
    if acceptance is not None and not 0 <= acceptance <= 1:
        acceptance = None
    if mean_length is None and acceptance is None:
        return None
    return Figures(mean_length=mean_length, acceptance=acceptance, speed=float(speed["value"]) if speed else None,
                   setting=label[:200] or None, baseline=False)


def labelled_samples(text: str) -> list[Sample]:
    """Acceptance figures read by their words, one sample a line (each line a run of its own), where at least one line
    holds them."""
    if not any(word in text.lower() for word in ("accept", "accpt", "acc ", "acc_", "acc-", "acc.")):
        return []
    samples: list[Sample] = []
    heading = ""  # the run's name a heading above its figures gives ("**Baseline**", "EAGLE-3 (num_steps=8):")
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        figures = _labelled(line, heading) if len(line) <= 400 else None
        if figures is not None:
            samples.append(Sample(LABELLED_FORMAT, figures, line[:300], number))
        elif (head := _HEADING.match(line)) is not None:
            heading = next(g for g in head.group("h", "b", "c") if g).strip(" *_`#")
    samples = _unaccepted_as_baseline(samples)
    # A mean length is speculative decoding's own figure; an acceptance rate alone is read where the text drafts.
    lengths = any(s.figures.mean_length is not None for s in samples)
    if not lengths and SPECULATIVE_WORDS.search(text) is None and \
            not any(names_drafting(s.figures.setting or "") for s in samples):
        return []
    return samples if any(not s.figures.baseline for s in samples) else []


def _unaccepted_as_baseline(samples: list[Sample]) -> list[Sample]:
    """Lines of one shape, none naming its setting, one accepting nothing (mean length exactly 1.00, acceptance 0) and
    another accepting drafts: the one accepting nothing is the run without speculation, as a benchmark script prints it
    ("Throughput: 88.61 token/s, Acceptance length: 1.00" above "... 234.54 token/s, Acceptance length: 5.88"). A line
    whose label names a drafter keeps its zero: that is a head that drafted and was refused."""
    def unnamed(sample: Sample) -> bool:
        label = sample.figures.setting or ""
        return not names_drafting(label) and not without_speculation(label)

    def nothing(f: Figures) -> bool:
        return (f.mean_length == 1.0 or f.mean_length is None) and f.acceptance in (0.0, None) and \
            (f.mean_length, f.acceptance) != (None, None)

    accepting = [s for s in samples if not s.figures.baseline and ((s.figures.mean_length or 1.0) > 1 or (s.figures.acceptance or 0) > 0)]
    if not accepting or not all(unnamed(s) for s in samples):
        return samples
    return [replace(s, figures=replace(s.figures, baseline=True, mean_length=None, acceptance=None))
            if not s.figures.baseline and nothing(s.figures) and s.figures.speed is not None else s for s in samples]
