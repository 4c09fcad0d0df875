"""Every head we can make, through `check` and `diagnose` on the real llama-server (issue 32).

Does `diagnose` tell a foreign or weak head from hard text, and a quantized head from both, and does
`check` see a foreign sidecar before anything runs? Each head is made the way real ones are:

- ``shipped``: the built-in trained model (trunk and head in one GGUF, the pinned converter's Q8_0);
- ``Q4_0``, ``Q2_K``, ``TQ1_0``: its MTP block re-quantized by the pinned llama-quantize;
- ``pair``: the pinned converter's ``--no-mtp`` trunk and ``--mtp`` sidecar of the same checkpoint;
- ``seed1-*``: the ``--mtp`` sidecar of a second training run (``mtpinspect train OUT --seed 1``, after
  its number of steps: ``--steps 6``, ``--steps 30``, the full recipe) given to the shipped trunk, as a
  sidecar of another fine-tune or revision is.

For each: check's findings on the head and its embedding-row comparison (bytes read), the probe's
acceptance at n-max 1 on the copy class and on code and prose-en, and the head cause diagnose names
first, against the one expected.

    mtpinspect train /tmp/s6 --seed 1 --steps 6      # and --steps 30, and the full recipe (about an hour)
    python bench/bench_heads.py --run seed1-s6=/tmp/s6 --run seed1-s30=/tmp/s30 --run seed1-full=/tmp/full \\
        [--out DIR] [--json bench/results/heads.json] [-- LLAMA-SERVER ARGS]

Needs the train extra (the pinned converter imports torch) for ``pair`` and the seed-1 sidecars.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from tabulate import tabulate

import mtpinspect
from mtpinspect.diagnosis import diagnose
from mtpinspect.diagnosis.probe_result import COPY_CLASS
from mtpinspect.trained_model import OUTTYPE, write_gguf, write_sidecar
from mtpinspect.training.toolchain import convert

# The causes that say what the head is, in the order they are looked for among diagnose's causes.
HEAD_CAUSES = ("HEAD_FOREIGN", "HEAD_WEAK", "HEAD_QUANTIZED", "HEAD_DISAGREES", "PROMPT_CLASS")
HEAD_FINDINGS = ("SIDECAR_FOREIGN", "SIDECAR_MISMATCH", "LOW_BIT_MTP_HEAD", "MTP_QUANTIZED")


@dataclass(frozen=True)
class Head:
    name: str
    made: str
    main: Path
    sidecar: Path | None
    expected: str | None  # the head cause diagnose must name; None: none (a head that matches)


@dataclass
class Row:
    head: str
    made: str
    check_findings: list[str]
    embedding: str
    copy: float | None
    code: float | None
    prose_en: float | None
    head_cause: str | None
    first_cause: str | None
    expected: str | None
    ok: bool
    seconds: float


def make_heads(out: Path, runs: dict[str, Path]) -> list[Head]:
    heads = []
    shipped = out / "shipped" / "tiny.gguf"
    shipped.parent.mkdir(parents=True, exist_ok=True)
    write_gguf(shipped, force=True)
    heads.append(Head("shipped", "the built-in model (pinned converter, Q8_0)", shipped, None, None))
    for kind, expected in (("Q4_0", None), ("Q2_K", None), ("TQ1_0", "HEAD_QUANTIZED")):
        path = out / kind / "tiny.gguf"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_gguf(path, head_type=kind, force=True)
        heads.append(Head(kind, f"MTP block {kind} (pinned llama-quantize)", path, None, expected))
    pair = out / "pair" / "tiny.gguf"
    pair.parent.mkdir(parents=True, exist_ok=True)
    trunk, side = (w.path for w in write_sidecar(pair, force=True))
    heads.append(Head("pair", "--no-mtp trunk + --mtp sidecar (pinned converter)", trunk, side, None))
    for name, run in runs.items():
        curve = (run / "curve.jsonl").read_text().splitlines()
        steps = json.loads(curve[-1])["step"] if curve else "?"
        made = out / name / f"mtp-{name}.gguf"
        made.parent.mkdir(parents=True, exist_ok=True)
        convert(run / "checkpoint", made, OUTTYPE, mtp="sidecar")
        heads.append(Head(name, f"--mtp sidecar of `train --seed 1` after {steps} steps, on the shipped trunk",
                          trunk, made, "HEAD_FOREIGN"))
    return heads


def measure(head: Head, server_args: list[str]) -> Row:
    start = time.perf_counter()
    mtp_file = str(head.sidecar) if head.sidecar else None
    check = mtpinspect.check(str(head.main), mtp_file=mtp_file, verify=False)
    findings = [f.code for f in check.findings if f.code in HEAD_FINDINGS]
    embedding = next((e for f in check.findings if f.code in ("MTP_SIDECAR", "SIDECAR_FOREIGN")
                      for e in f.evidence if "token_embd.weight (" in e), "-")
    report = diagnose(str(head.main), mtp_file=mtp_file, server_args=server_args)
    rates = {f.prompt_class: f.acceptance for f in (report.probe.figures if report.probe else []) if f.n_max == 1}
    codes = [c.code for c in report.causes]
    head_cause = next((c for c in codes if c in HEAD_CAUSES), None)
    return Row(head.name, head.made, findings, embedding.split(": ", 1)[-1], rates.get(COPY_CLASS), rates.get("code"),
               rates.get("prose-en"), head_cause, codes[0] if codes else None, head.expected,
               head_cause == head.expected, round(time.perf_counter() - start, 1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", action="append", default=[], metavar="NAME=DIR",
                        help="a `mtpinspect train --seed 1` output folder, as NAME (repeatable)")
    parser.add_argument("--out", type=Path, help="where the heads are written (default: a temporary folder)")
    parser.add_argument("--json", type=Path, help="write the rows here too")
    parser.add_argument("server_args", nargs="*", help="llama-server arguments for the probe (after --)")
    args = parser.parse_args(argv)
    runs = dict(item.split("=", 1) for item in args.run)
    with tempfile.TemporaryDirectory(prefix="bench-heads-") as tmp:
        out = args.out or Path(tmp)
        heads = make_heads(out, {name: Path(path) for name, path in runs.items()})
        rows = []
        for head in heads:
            rows.append(measure(head, args.server_args))
            print(f"{head.name}: {rows[-1].head_cause or 'no head cause'} ({rows[-1].seconds} s)", flush=True)

    def pct(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    table = [[r.head, r.made, ", ".join(r.check_findings) or "-", r.embedding, pct(r.copy), pct(r.code), pct(r.prose_en),
              r.head_cause or "-", r.first_cause or "-", r.expected or "no head cause", "yes" if r.ok else "NO"]
             for r in rows]
    print(tabulate(table, headers=["head", "made", "check", "embedding rows", COPY_CLASS, "code", "prose-en",
                                   "diagnose: head cause", "first cause", "expected", "right"], tablefmt="github"))
    print(f"\n{sum(r.ok for r in rows)} of {len(rows)} heads named as expected")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1) + "\n")
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
