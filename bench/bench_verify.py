"""How fast, and in how little memory, does llama.cpp verify a 100+ GB model with its MTP sidecar?

Writes a trunk GGUF and its ``mtp-`` sidecar with ``tests/gguf_factory.py:write_big_gguf`` (a glm4moe
header with a 150,000-token BPE vocabulary and about 1,000 tensors in a Q4_K_M-like mix, over a sparse
hole of ``--size-gib`` GiB: no disk), then:

(a) runs the verify helper on the local pair, ``--repeat`` times: wall time, and the helper's own
    peak RSS (VmHWM), against the 1 GiB bound of issue 9;
(b) runs ``mtpinspect.check`` on the same pair served by the loopback Hub stand-in (tests/hubstub.py):
    the headers are fetched, written into header-only sparse copies and verified; wall time of the
    whole check, bytes served, and the verification's own time and RSS.

    python bench/bench_verify.py [--size-gib 100] [--repeat 3] [--context 4096]

The helper is the cached one (``mtpinspect runtime build`` makes it).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from gguf_factory import write_big_gguf  # noqa: E402
from hubstub import HubStub  # noqa: E402

import mtpinspect  # noqa: E402
from mtpinspect.inspection.engine import ask_llama_cpp  # noqa: E402
from mtpinspect.inspection.evidence import gather  # noqa: E402
from mtpinspect.runtime.build_cache import find_helper  # noqa: E402
from mtpinspect.runtime.verify import verify  # noqa: E402
from mtpinspect.sources.policy import FetchPolicy  # noqa: E402
from mtpinspect.sources.resolve import resolve  # noqa: E402

MiB = 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-gib", type=float, default=100.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--context", type=int, default=4096)
    args = parser.parse_args()
    helper = find_helper()
    if helper is None:
        sys.exit("the verify helper is not built: run `mtpinspect runtime build`")
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        folder = Path(tmp)
        began = time.perf_counter()
        main = write_big_gguf(folder / "Big-Q4_K_M.gguf", size_gib=args.size_gib, part="trunk").path
        side = write_big_gguf(folder / "mtp-Big-Q4_K_M.gguf", size_gib=args.size_gib, part="mtp").path
        total = main.stat().st_size + side.stat().st_size
        on_disk = (main.stat().st_blocks + side.stat().st_blocks) * 512
        print(f"pair: {total / 1e9:.1f} GB ({main.name} + {side.name}), {on_disk / MiB:.1f} MiB on disk, "
              f"written in {time.perf_counter() - began:.1f} s")

        flags = ["--spec-type", "draft-mtp", "--spec-draft-n-max", "2", "-c", str(args.context)]
        runs = [verify(helper, ["-m", str(main), "-md", str(side), *flags]) for _ in range(args.repeat)]
        v = runs[-1]
        assert v.ok and v.memory is not None and v.memory.total_bytes is not None, v.error
        rows = [[
            "local pair", len(runs), f"{min(r.seconds for r in runs):.2f}", f"{statistics.median(r.seconds for r in runs):.2f}",
            f"{max(r.peak_rss or 0 for r in runs) / MiB:.0f}", v.ok,
        ]]

        with HubStub() as stub:
            stub.add_repo("acme/Big-GGUF", {main.name: main, side.name: side})
            began = time.perf_counter()
            report = mtpinspect.check("acme/Big-GGUF:Q4_K_M", endpoint=stub.url, context=args.context,
                                      policy=FetchPolicy(cache=False))  # the headers from the Hub, not the header cache
            whole = time.perf_counter() - began
            served = stub.bytes_served("acme/Big-GGUF")
            # The verification alone, on header-only copies of the same fetch.
            target = resolve("acme/Big-GGUF:Q4_K_M", endpoint=stub.url)
            remote = ask_llama_cpp(gather(target), helper, args.context).verification
        assert remote is not None and report.runtimes["llama.cpp"].verified is not None
        rows.append(["Hub, header-only copies", 1, f"{remote.seconds:.2f}", f"{remote.seconds:.2f}",
                     f"{(remote.peak_rss or 0) / MiB:.0f}", remote.ok])
        print(tabulate(rows, headers=["verified", "runs", "best s", "median s", "peak RSS MiB", "ok"]))
        print(f"\nwhole `check` over the Hub stand-in: {whole:.2f} s, {served / MiB:.2f} MiB served "
              f"({served / total * 100:.4f}% of the files), verdict: {report.verdict}")
        m = v.memory
        print(f"llama.cpp's estimate at -c {m.context}: {m.total_bytes / 2**30:.2f} GiB with MTP, "
              f"{m.without_mtp_bytes / 2**30:.2f} GiB without; MTP adds {m.mtp_bytes / MiB:.0f} MiB "
              f"(weights {m.mtp.weights / MiB:.0f}, KV {m.mtp.kv / MiB:.0f}, compute {m.mtp.compute / MiB:.0f})")


if __name__ == "__main__":
    main()
