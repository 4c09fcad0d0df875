"""`diagnose --log` on a hostile text at several sizes: is the time linear in the size?

The text is the worst case issue 42 names, repeated up to each size: 16 KB lines of fork-flag near-matches
(``--a-mtp`` that never closes), 64 KB lines that start like a metrics sample (``llamacpp:``) and are not one,
lines full of the catalogue's keys that never complete a message (``error``, ``speculative``, ``draft``,
``invalid argument``, ``accept len:``, ``spec_decode_``), request bodies (content the catalogue must skip),
Python exception lines and ordinary llama-server lines; and the second round's shapes (a run table with long cells
of near-matching units, llama.cpp's ``spec`` tag, backtrace and traceback frames with long names, a drafter
architecture that never closes, summary keys with 16,000-digit values); and the third round's (renamed-flag near-matches,
drafter-tagged decode lines, acceptance labels by their words, a side-by-side speed table, headings above figures) and
the third set's (traceback frames without their exception, vLLM's engine deaths and crash dump, before -> after speed
cells, a poster's run labels), and round 7's (call chains that never close a frame, shells' death lines that never name a
command), and round 8's (drafter-like module names, quoted drafting names, rank tags and watchdog words that never
complete). Each size is timed in a fresh process-free call of
`diagnose(log_files=[...])` (the whole path: decoding, voices, catalogue, formats, rules); the figure to read is
seconds per MiB, which must stay flat from the smallest size to the largest (MAX_LOG_BYTES, 256 MiB).

    python bench/bench_log_worst.py [--sizes-mib 16 64 256]
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

from mtpinspect.diagnosis import diagnose
from mtpinspect.logread.runs import MAX_LOG_BYTES

_BLOCK = "".join([
    " " + ("--a-mtp" * 2300)[:16000] + "!\n",
    "llamacpp:" + "a" * 65536 + " x y\n",
    ("error: the speculation drafts accept len: token spec_decode_ invalid argument: x " * 200) + "\n",
    'srv  log_server_r: request:  {"messages":[{"role":"user","content":"' + "unknown speculative type: mtp " * 300 + '"}]}\n',
    "ValueError: " + "draft " * 2000 + "\n",
    "".join(f"slot update_slots: id  0 | task {i} | n_tokens = {i * 7}, memory_seq_rm [0, end)\n" for i in range(400)),
    # The second round's shapes: a run table whose rows are long near-matches of its units, llama.cpp's "spec" tag,
    # backtrace and traceback frames with long names, a drafter architecture that never closes, summary keys.
    "| Backend | Draft acceptance | Value |\n|---|---|---|\n" + ("| x | **1" + " 1" * 8000 + " | 1.5 +/- " * 2000 + "@ 1" * 4000 + " |\n") * 2,
    "spec " + " " * 3 + "a" * 16000 + ": x\n",
    "#3 " + "common_speculativ" * 900 + "\n",
    '  File "/x.py", line 1, in ' + "eagl" * 4000 + "\n",
    "unknown model architecture: '" + "mt" * 8000 + "\n",
    '"accept_length": ' + "1" * 16000 + "\nn_drafted = " + "9" * 16000 + "\n",
    # The third round's shapes: renamed-flag near-matches, drafter-tagged decode lines that never close, acceptance
    # labels by their words (long and short lines), a side-by-side table's header, headings above figures.
    "option " + "'--spec-x' is removed; use --colour " * 450 + "\n",
    "draft_" * 3000 + ": llama_decode\n",
    ("* k=2: [00:01<00:00, output: 1 toks/s] **Accpt Len: " * 8)[:390] + "\n" * 1 + ("acc len = x " * 30 + "\n") * 100,
    "| Prompt | " + "Baseline (t/s) | MTP (t/s) | Accept Rate (%) | " * 400 + "\n" + ("| a | 1 | 2 | 3% |\n" * 50),
    ("**" + "Baseline " * 8 + "**\n" + "acc_length=1.00\n") * 50,
    # The third set's: frames that never close their path, deaths that never say it, a crash dump's long field, a
    # before -> after table's long cells, a poster's run labels.
    'File "' + "a/" * 8000 + "\n" + ('File ""/x/spec_decode/' + "b" * 390 + "\n") * 20,
    "EngineCore " + "x" * 16000 + " hit an exception\n",
    "scheduled_spec_decode_tokens={" + "-1, " * 4000 + "\n",
    "| Slot | n_max | Decode Δ |\n|---|---|---|\n" + ("| a | 2 | " + "1 → " * 4000 + " |\n") * 2,
    ("without mtp\nwith mtp\n" * 100),
    # The drafting table's (logread/drafters.py): a frame path of engine names that never reaches its line number, a
    # fault dump's frames, native frames and mangled names that never complete a drafter's, a loader line and a
    # metadata dump that never close.
    'File "' + "vllm/sglang/" * 1300 + '", line 1 in x\n' + ('  File "/s/sglang/' + "a" * 390 + '", line 7 in draft\n') * 20,
    "#4 " + "sglang::ngra" * 1300 + "\n" + "ngram::" * 2000 + "\n" + "_Z24common_speculativ" * 700 + "\n",
    "llama_context" + "::graph_mt" * 1500 + "\n" + "missing tensor 'blk." + "1" * 16000 + "\n",
    "llama_model_loader: - kv 1: general.name str = " + "mt" * 8000 + "\n",
    # The tables read by their words (logread/tables/): aligned columns a line short of the longest a table may
    # have, a box table's rows of near-numbers, comma rows under a header, results blocks of near-fields.
    "config  " + "MTP tok/s  baseline  " * 90 + "\n" + ("x  " + "1.5 tok/s  2  " * 140 + "\n") * 300,
    "┃ Config ┃ " + "tg t/s ┃ " * 20 + "\n" + ("│ MTP n-max 3 │ " + "1" * 60 + " │ " * 20 + "\n") * 200,
    "mode,baseline,eagle3\n" + ("no spec," + "9" * 30 + "," + "1." * 30 + "\n") * 200,
    "spec 7b:\n" + ("decode speed:  " + "6" * 60 + " token/s\n" + "Backend: x\n") * 200,
    "| config | MTP tok/s | baseline |\n" + ("| " + "~ " * 900 + "x | 1" + " " * 900 + "→ | 2 |\n") * 20,
    ("=" * 199 + "\n") * 200 + ("a: 1\n" * 3),
    # Round 7's (process deaths on the drafting path): call chains whose frames never close (long dotted and underscored
    # names, arrows without a frame after them), a shell's death lines whose status never ends or names no command.
    ("a_" * 60 + ".b" * 60 + " -> ") * 60 + "\n" + ("  <- " + "x." * 3000 + "\n") * 20 + ("→ " * 8000 + "\n"),
    "Aborted" + " " * 16000 + "(core dumped\n" + ("./x.sh: line 1: 2 Segmentation fault" + " " * 4000 + "\n") * 5,
    # Round 8's (the ninth set's crashes): a vLLM logger module of drafter-like parts that never reaches ".py:N]", an
    # engine exception quoting names that never close, rank tags and watchdog words that never complete.
    ("INFO 01-02 03:04:05 [" + "eagle_draft_mtp_" * 1000 + "x.py:\n") * 4,
    "(EngineCore_DP0 pid=1) ERROR 01-02 03:04:05 [core.py:1] AttributeError: " + "'draft_a" * 2000 + "\n",
    "[DP1 TP" + "1 EP" * 4000 + "\n" + ("Scheduler Watchdog timeout (self.watchdog_timeout=" + "x" * 390 + "\n") * 20,
    # Round 11's (the eleventh set's refusals and crashes): log lines merged into one (a line of hundreds of logger
    # prefixes, process tags that never close), a kernel's bound that never comes, forward modes run together.
    "(W pid=1) ERROR 01-02 03:04:05 [a.py:1] " + "draft_token_ids x (W pid=1) ERROR 01-02 03:04:05 [a.py:1] " * 300 + "\n",
    "(W pid=1) INFO 01-02 03:04:05 [a.py:1] " + "(w pid=1 " * 1800 + "\n" + "[2026-01-02 03:04:05 " * 800 + "\n",
    "Exception: Capture cuda graph failed: " + "x_y:only support " * 900 + "\n" + "a_" * 8000 + ": only support <\n",
    "DRAFT_EXTEND_V" * 1100 + "\n" + "ValueError: speculative decoding " + "cannot set " * 1400 + "\n",
])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-mib", type=int, nargs="+", default=[16, 64, 256])
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes_mib:
            target = min(size << 20, MAX_LOG_BYTES - (1 << 20))
            path = Path(tmp, f"worst-{size}.log")
            with path.open("w", encoding="utf-8") as out:
                written = 0
                while written < target:
                    out.write(_BLOCK)
                    written += len(_BLOCK)
            gc.collect()
            began = time.perf_counter()
            try:
                report = diagnose(log_files=[path])
                outcome = f"{len(report.causes)} cause(s)"
            except Exception as exc:  # noqa: BLE001 - the outcome is reported, whatever it is
                outcome = f"{type(exc).__name__}: {str(exc)[:60]}"
            seconds = time.perf_counter() - began
            mib = path.stat().st_size / 2**20
            rows.append({"MiB": round(mib), "seconds": round(seconds, 1), "s per MiB": round(seconds / mib, 3),
                         "outcome": outcome})
            print(f"{round(mib)} MiB: {seconds:.1f} s ({seconds / mib:.3f} s per MiB), {outcome}", flush=True)
            path.unlink()
    print(tabulate(rows, headers="keys"))


if __name__ == "__main__":
    main()
