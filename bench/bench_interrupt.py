"""Ctrl-C at random moments of a census, beside busy processes: how many `find` processes end cleanly (issue 47).

Each round starts `mtpinspect find BASE --limit 0 --no-verify` over tests/census_tree.py's model tree on
the Hub stand-in (at --latency-ms per request, one derivative that never answers, so the census is still
running when the signal comes; --cache cold: an empty header cache each round, as the test has), waits
until the stand-in has seen the child's first request, sleeps a random time in [0, --spread] seconds and
sends SIGINT (or --signal TERM). A round is clean when the child exits 130 within --timeout with no
traceback and no fatal error on stderr (the child runs with PYTHONFAULTHANDLER=1, so a crash prints its
threads' stacks while faulthandler is still on), and, when it was stopped inside the census, the footer
"interrupted: the rows above ..." under the rows judged so far. --busy spinning processes
(tests/cpuburn.py) keep the machine's cores busy throughout. Every unclean round's stderr is printed; a
hang's with gdb's C stacks of every thread (when gdb is installed) and faulthandler's Python ones.
--cores DIR runs the children there with core dumps allowed: a crash after faulthandler is off (in the
C library's exit) leaves its stacks in the core, for `gdb python DIR/core`.

    python bench/bench_interrupt.py [--rounds 200] [--busy 2] [--spread 4] [--latency-ms 250]
                                    [--signal INT|TERM] [--cache cold|warm] [--seed 1] [--cores DIR]
                                    [--json out.json]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from census_tree import serve_tree  # noqa: E402
from cpuburn import burners  # noqa: E402
from hubstub import Fault, HubStub  # noqa: E402

from mtpinspect.cache_dir import CACHE_ENV  # noqa: E402
from mtpinspect.errors import INTERRUPTED  # noqa: E402

FOOTER = "interrupted: the rows above are the derivatives judged before Ctrl-C"


def one_round(stub: HubStub, base: str, env: dict[str, str], delay: float, signum: int, timeout: float,
              cores: Path | None) -> dict[str, object]:
    seen = stub.received()

    def allow_core() -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    proc = subprocess.Popen([sys.executable, "-m", "mtpinspect", "find", base, "--limit", "0", "--no-verify"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cores,
                            preexec_fn=allow_core if cores else None)
    started = time.monotonic()
    while stub.received() == seen and proc.poll() is None and time.monotonic() - started < timeout:
        time.sleep(0.01)
    time.sleep(delay)
    sent = time.monotonic()
    proc.send_signal(signum)
    try:
        out, err = proc.communicate(timeout=timeout)
        ended: float | None = round(time.monotonic() - sent, 3)
    except subprocess.TimeoutExpired:
        # A hang: where each thread is, in C (gdb, when installed) and in Python (faulthandler prints every
        # thread's stack on SIGABRT), before the kill.
        where = _c_stacks(proc.pid)
        proc.send_signal(signal.SIGABRT)
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        err += where
        ended = None
    rows = sum(1 for line in out.splitlines() if "/GLM-4.7" in line)
    crashed = proc.returncode < 0 or "Fatal Python error" in err
    # Stopped inside the census: the rows judged and the footer; before it (the search pages): one line.
    said = FOOTER in out or (not out and err.strip().endswith("mtpinspect: interrupted"))
    clean = ended is not None and proc.returncode == INTERRUPTED and not crashed and "Traceback" not in err and said
    kind = ("clean" if clean else "hung" if ended is None else "crash" if crashed
            else "traceback" if "Traceback" in err else f"exit {proc.returncode}" if proc.returncode != INTERRUPTED
            else "unsaid")
    return {"delay": round(delay, 3), "rc": proc.returncode, "kind": kind, "rows": rows, "footer": FOOTER in out,
            "exit_seconds": ended, "stderr": err}


def _c_stacks(pid: int) -> str:
    gdb = shutil.which("gdb")
    if gdb is None:
        return ""
    try:
        done = subprocess.run([gdb, "-p", str(pid), "-batch", "-ex", "thread apply all bt"], capture_output=True,
                              text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "\n(gdb took over 60 s)\n"
    return "\n--- gdb: thread apply all bt\n" + done.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--busy", type=int, default=2, help="spinning processes beside the census")
    parser.add_argument("--spread", type=float, default=4.0, help="the signal comes 0 to SPREAD s after the first request")
    parser.add_argument("--latency-ms", type=float, default=250.0, help="added to each of the stand-in's answers")
    parser.add_argument("--signal", choices=["INT", "TERM"], default="INT")
    parser.add_argument("--timeout", type=float, default=60.0, help="a child that has not exited by then is a hang")
    parser.add_argument("--cache", choices=["cold", "warm"], default="cold",
                        help="cold: each round an empty header cache (as the test); warm: one cache for all rounds")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, help="write every round here")
    parser.add_argument("--cores", type=Path, help="run the children here, with core dumps allowed (for gdb)")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    signum = getattr(signal, f"SIG{args.signal}")
    rounds: list[dict[str, object]] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-interrupt-") as scratch, HubStub() as stub:
        tree = serve_tree(stub, Path(scratch) / "tree")
        stub.latency = args.latency_ms / 1000
        # One derivative never answers: whatever the machine's speed, the census is running when the signal comes.
        stalled = tree.quantized[len(tree.quantized) // 2]
        for where in ("listing", *stub.files(stalled)):
            stub.add_fault(stalled, Fault("stall", where=where, seconds=2 * args.timeout))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MTPINSPECT_"))}
        env.update({"HF_ENDPOINT": stub.url, "PYTHONPATH": str(ROOT), "MTPINSPECT_TIMEOUT": "120",
                    "PYTHONFAULTHANDLER": "1", CACHE_ENV: str(Path(scratch) / "cache")})
        if args.cores:
            args.cores.mkdir(parents=True, exist_ok=True)
        # SIGTERM ends the bench as Ctrl-C does: the busy children are killed on the way out. And SIGINT gets
        # Python's handler even where the bench was started in the background (a shell ignores SIGINT for
        # those, and a child would inherit that: every round then a "hang").
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        with burners(args.busy, seconds=args.rounds * (args.timeout + 30)):
            for i in range(args.rounds):
                if args.cache == "cold":
                    env[CACHE_ENV] = str(Path(scratch) / f"cache-{i}")
                result = one_round(stub, tree.base, env, rng.uniform(0, args.spread), signum, args.timeout, args.cores)
                if args.cache == "cold":
                    shutil.rmtree(env[CACHE_ENV], ignore_errors=True)  # up to 165 MB of headers a round
                rounds.append(result)
                if result["kind"] != "clean":
                    print(f"round {i + 1}: {result['kind']} (rc {result['rc']}, signal {result['delay']} s after the "
                          f"first request, {result['rows']} rows)\n{result['stderr']}", file=sys.stderr, flush=True)
                elif (i + 1) % 20 == 0:
                    print(f"{i + 1} rounds, {sum(r['kind'] == 'clean' for r in rounds)} clean", file=sys.stderr,
                          flush=True)
    kinds = collections.Counter(str(r["kind"]) for r in rounds)
    exits = sorted(float(r["exit_seconds"]) for r in rounds if r["exit_seconds"] is not None)  # type: ignore[arg-type]
    summary = {
        "rounds": len(rounds), "clean": kinds["clean"], "kinds": dict(kinds), "signal": f"SIG{args.signal}",
        "busy": args.busy, "with_rows": sum(1 for r in rounds if r["rows"]),
        "exit_seconds_median": exits[len(exits) // 2] if exits else None, "exit_seconds_max": exits[-1] if exits else None,
        "minutes": round((time.monotonic() - started) / 60, 1),
    }
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "rounds": rounds}, indent=2))
    return 0 if kinds["clean"] == len(rounds) else 1


if __name__ == "__main__":
    sys.exit(main())
