"""mtp-bench's method, written from its description (issue 35), for the head-to-head with `mtpinspect sweep`.

One request per prompt, in order, to a running llama-server's ``/v1/chat/completions`` (the prompt as the one
user message), ``max_tokens`` 192 and seed 42; per prompt the server's own ``timings`` give the tokens
predicted, drafted and accepted and the decode rate. It prints one row per prompt as mtp-bench does
(``name pred= draft= acc= rate= tok/s=``), then ``Aggregate:`` and its JSON (total_draft,
total_draft_accepted, aggregate_accept_rate, wall_s_total, concurrency, batch_wall_s,
aggregate_throughput_tok_s), and ``--out`` writes ``{"results": [...], "aggregate": {...}}``.

Like mtp-bench it sends no temperature unless told (the server's default sampling then applies);
``--temperature 0`` makes it greedy, as the sweep is. Only the standard library: it is a client, nothing else.

    python bench/mtp_bench_method.py --url http://127.0.0.1:8080 [--prompts FILE.jsonl] [--temperature 0] [--out run.json]
"""

from __future__ import annotations

import argparse
import json
import time
import urllib.request
from pathlib import Path
from typing import Any

# The nine-category set the sweep ships (cases/prompts/sets): the same prompts on both sides.
DEFAULT_PROMPTS = Path(__file__).resolve().parent.parent / "cases" / "prompts" / "sets" / "mtp-bench-categories.jsonl"
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def load(path: Path) -> list[tuple[str, str]]:
    items = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(str(item.get("id") or item.get("name")), item["prompt"]) for item in items]


def ask(url: str, text: str, max_tokens: int, seed: int, temperature: float | None) -> dict[str, Any]:
    body: dict[str, Any] = {"messages": [{"role": "user", "content": text}], "max_tokens": max_tokens, "seed": seed}
    if temperature is not None:
        body["temperature"] = temperature
    request = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    began = time.perf_counter()
    try:
        with _OPENER.open(request, timeout=600) as response:
            answer = json.loads(response.read())
    except (OSError, ValueError) as exc:
        return {"wall_s": round(time.perf_counter() - began, 3), "predicted_n": 0, "predicted_per_second": 0.0,
                "draft_n": 0, "draft_n_accepted": 0, "accept_rate": None, "error": str(exc)}
    wall = time.perf_counter() - began
    timings = answer.get("timings") or {}
    predicted = timings.get("predicted_n") or (answer.get("usage") or {}).get("completion_tokens") or 0
    drafted, accepted = timings.get("draft_n", 0), timings.get("draft_n_accepted", 0)
    return {"wall_s": round(wall, 3), "predicted_n": predicted,
            "predicted_per_second": round(timings.get("predicted_per_second") or (predicted / wall if wall else 0.0), 2),
            "draft_n": drafted, "draft_n_accepted": accepted,
            "accept_rate": round(accepted / drafted, 4) if drafted else None}


def row(result: dict[str, Any]) -> str:
    if result.get("error"):
        return f"  {result['name']:<18} ERROR: {result['error']}"
    rate = "n/a" if result["accept_rate"] is None else f"{result['accept_rate']:.3f}"
    return (f"  {result['name']:<18} pred={result['predicted_n']:>4} draft={result['draft_n']:>4} "
            f"acc={result['draft_n_accepted']:>4} rate={rate} tok/s={result['predicted_per_second']:.1f}")


def run(url: str, prompts: list[tuple[str, str]], max_tokens: int, seed: int, temperature: float | None) -> dict[str, Any]:
    began = time.perf_counter()
    results = []
    for name, text in prompts:
        result = {"name": name, **ask(url, text, max_tokens, seed, temperature)}
        print(row(result), flush=True)
        results.append(result)
    batch_wall = time.perf_counter() - began
    ok = [r for r in results if not r.get("error")]
    drafted = sum(r["draft_n"] for r in ok)
    accepted = sum(r["draft_n_accepted"] for r in ok)
    predicted = sum(r["predicted_n"] for r in ok)
    aggregate = {
        "n_requests": len(results), "n_failed": len(results) - len(ok), "concurrency": 1, "repeat": 1,
        "total_predicted": predicted, "total_draft": drafted, "total_draft_accepted": accepted,
        "aggregate_accept_rate": round(accepted / drafted, 4) if drafted else None,
        "wall_s_total": round(sum(r["wall_s"] for r in results), 2), "batch_wall_s": round(batch_wall, 2),
        "aggregate_throughput_tok_s": round(predicted / batch_wall, 2) if batch_wall > 0 else 0.0,
    }
    print("Aggregate:", json.dumps(aggregate, indent=2), flush=True)
    return {"results": results, "aggregate": aggregate}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--prompts", type=Path, default=DEFAULT_PROMPTS)
    parser.add_argument("--max-tokens", type=int, default=192)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--temperature", type=float, default=None, help="not sent unless given (the server's default)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    document = run(args.url.rstrip("/"), load(args.prompts), args.max_tokens, args.seed, args.temperature)
    if args.out is not None:
        args.out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        print("Wrote", args.out)


if __name__ == "__main__":
    main()
