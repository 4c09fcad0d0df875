"""Fuzzing `check` with GGUF files: random byte mutations of a model and its mtp- sidecar, and typed metadata
mutations (a count as a string, a float, a bool, an array, a negative or huge number; the architecture as
a number; keys removed).

Every mutated file goes through the real CLI entry point (``mtpinspect.cli.main``) in a child process, which
runs many of them and reports its own peak RSS (VmHWM). Each run must end in exit 2 with one line on stderr,
or a report that validates against the schema (exit 0 or 1): never a traceback, never a hang (a per-check
alarm), never more than MAX_RSS_MB. CI runs a few seconds' worth; MTPINSPECT_FUZZ_ITERATIONS sets how many
files of each kind a longer run tries (MTPINSPECT_FUZZ_SEED picks another sequence).

    MTPINSPECT_FUZZ_ITERATIONS=3000 python -m pytest tests/test_fuzz_gguf.py
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ITERATIONS = int(os.environ.get("MTPINSPECT_FUZZ_ITERATIONS", "80"))
SEED = int(os.environ.get("MTPINSPECT_FUZZ_SEED", "0"))
MAX_RSS_MB = 200
ADDRESS_SPACE_LIMIT = 1 << 30
CHECK_SECONDS = 20  # one check of a tiny file takes milliseconds; this long is a hang
KINDS = ("bytes", "typed")


# -- the child: mutate, check, classify ----------------------------------------------------------------


def _base_files(folder: Path) -> dict[str, bytes]:
    """A trunk-only main GGUF and its mtp- sidecar (glm4moe, tiny), as bytes."""
    from gguf_factory import write_nextn_gguf

    main = write_nextn_gguf(folder / "base.gguf", extra_metadata={"glm4moe.block_count": 3})
    side = write_nextn_gguf(folder / "mtp-base.gguf", sidecar=True)
    files = {"m.gguf": main.read_bytes(), "mtp-m.gguf": side.read_bytes()}
    main.unlink()
    side.unlink()
    return files


_INTERESTING = [0, 1, 2, 3, 63, 64, 65, 511, 512, 513, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1]


def _mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    header = min(len(out), 4096)  # the tiny files' metadata and tensor infos
    for _ in range(rng.randint(1, 4)):
        how = rng.random()
        pos = rng.randrange(header)
        if how < 0.4:
            out[pos : pos + 8] = rng.randbytes(rng.choice((1, 2, 4, 8)))
        elif how < 0.8:
            width = rng.choice((4, 8))
            value = rng.choice(_INTERESTING) % 2 ** (8 * width)
            out[pos : pos + width] = value.to_bytes(width, "little")
        elif how < 0.9:
            del out[rng.randrange(1, len(out)) :]
        else:
            chunk = out[pos : pos + rng.randint(1, 64)]
            out[pos:pos] = chunk
    return bytes(out)


def _typed_value(rng: random.Random) -> Any:
    from gguf import GGUFValue
    from gguf.constants import GGUFValueType as T

    choices = [
        lambda: GGUFValue(rng.choice(_INTERESTING[:12]), T.UINT32),
        lambda: GGUFValue(rng.choice((-1, -3, -(2**31))), T.INT32),
        lambda: GGUFValue(rng.choice((1, 3, 2**40, 2**64 - 1)), T.UINT64),
        lambda: GGUFValue(rng.choice((1, 2, 3)), rng.choice((T.UINT8, T.INT8, T.UINT16, T.INT16, T.INT32, T.INT64))),
        lambda: GGUFValue(rng.choice((1.0, 3.5, -2.0, float("nan"), float("inf"))), rng.choice((T.FLOAT32, T.FLOAT64))),
        lambda: GGUFValue(rng.random() < 0.5, T.BOOL),
        lambda: GGUFValue(rng.choice(("1", "3", "-1", "", "glm4moe", "x" * 300, "\x1b[31m")), T.STRING),
        lambda: GGUFValue([rng.randint(-5, 5) for _ in range(rng.randint(1, 80))], T.ARRAY, T.INT32),
        lambda: GGUFValue([f"t{i}" for i in range(rng.randint(1, 80))], T.ARRAY, T.STRING),
    ]
    return rng.choice(choices)()


def _mutate_typed(rng: random.Random, folder: Path) -> str:
    """Write m.gguf and mtp-m.gguf with one or two keys of one of them changed; return what was changed."""
    from gguf_factory import Glm4MoeDims, glm4moe_metadata, glm4moe_tensors, write_gguf

    dims = Glm4MoeDims()
    base = {"general.name": "fuzz", **glm4moe_metadata(dims), "tokenizer.ggml.model": "test",
            "tokenizer.ggml.tokens": [f"t{i}" for i in range(dims.n_vocab)]}
    main_meta = {**base, "glm4moe.block_count": dims.n_layer}
    del main_meta["glm4moe.nextn_predict_layers"]
    metas = {"m.gguf": main_meta, "mtp-m.gguf": dict(base)}
    target = rng.choice(list(metas))
    keys = ["glm4moe.nextn_predict_layers", "glm4moe.block_count", "glm4moe.embedding_length", "glm4moe.vocab_size",
            "general.architecture", "tokenizer.ggml.tokens", "split.count", "general.name", "general.alignment"]
    changed = []
    for key in rng.sample(keys, rng.randint(1, 2)):
        if rng.random() < 0.15 and key in metas[target]:
            del metas[target][key]
            changed.append(f"{target}: {key} removed")
            continue
        # A value given for general.architecture replaces the one write_gguf sets.
        value = _typed_value(rng)
        metas[target][key] = value
        changed.append(f"{target}: {key} = {value.type.name} {str(value.value)[:40]}")
    trunk = [t for t in glm4moe_tensors(dims) if not t.name.startswith(f"blk.{dims.n_layer}.")]
    for name, meta in metas.items():
        tensors = trunk if name == "m.gguf" else glm4moe_tensors(dims, sidecar=True)
        write_gguf(folder / name, arch="glm4moe", metadata=meta, tensors=tensors)
    return "; ".join(changed)


def _run_check(path: Path) -> tuple[int | None, str, str, str | None]:
    """(exit status, stdout, stderr, the exception that escaped main, if any) of `check PATH --format json`."""
    from mtpinspect.cli import main

    out, err = io.StringIO(), io.StringIO()
    escaped = None
    code: int | None = None
    signal.alarm(CHECK_SECONDS)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["check", str(path), "--format", "json"])
    except BaseException as exc:  # noqa: BLE001 - a fuzzer records whatever escapes
        escaped = f"{type(exc).__name__}: {str(exc)[:200]}"
    finally:
        signal.alarm(0)
    return code, out.getvalue(), err.getvalue(), escaped


def _verdict(code: int | None, stdout: str, stderr: str, escaped: str | None, schema: dict) -> str | None:
    """None for an acceptable outcome, else what was wrong."""
    import jsonschema

    if escaped is not None:
        return f"escaped main: {escaped}"
    if code == 2:
        lines = [line for line in stderr.splitlines() if line.strip()]
        if len(lines) != 1 or "Traceback" in stderr:
            return f"exit 2 with {len(lines)} line(s) on stderr: {stderr[:300]!r}"
        return None
    if code in (0, 1):
        try:
            jsonschema.validate(json.loads(stdout), schema)
        except (ValueError, jsonschema.ValidationError) as exc:
            return f"exit {code} without a valid report: {str(exc)[:300]}"
        return None
    return f"exit {code}"


def _alarm(_signum: int, _frame: object) -> None:
    raise TimeoutError(f"check ran past {CHECK_SECONDS} s")


def child(kind: str, seed: int, count: int, folder: Path) -> dict[str, Any]:
    import logging
    import resource

    import mtpinspect

    # A check that tries to allocate gigabytes fails here with MemoryError (recorded like any escape)
    # instead of taking the machine's memory; a normal run's address space is under 200 MB.
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_LIMIT, ADDRESS_SPACE_LIMIT))
    logging.disable(logging.WARNING)  # gguf-py warns when a mutated key overwrites another
    signal.signal(signal.SIGALRM, _alarm)
    schema = json.loads((Path(mtpinspect.__file__).parent / "schemas" / "check.schema.json").read_text())
    rng = random.Random(f"{kind}-{seed}")
    base = _base_files(folder)
    outcomes = {"report": 0, "error": 0}
    failures = []
    for i in range(count):
        if kind == "bytes":
            victim = rng.choice(list(base))
            for name, data in base.items():
                (folder / name).write_bytes(_mutate_bytes(rng, data) if name == victim else data)
            what = f"bytes of {victim}"
        else:
            what = _mutate_typed(rng, folder)
        code, stdout, stderr, escaped = _run_check(folder / "m.gguf")
        problem = _verdict(code, stdout, stderr, escaped, schema)
        if problem is None:
            outcomes["report" if code in (0, 1) else "error"] += 1
        else:
            failures.append(f"{kind} seed {seed} #{i} ({what}): {problem}")
    with open("/proc/self/status") as status:
        peak_kib = int(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
    return {"runs": count, **outcomes, "failures": failures[:20], "failed": len(failures), "peak_mb": peak_kib / 1024}


# -- the tests ------------------------------------------------------------------------------------------


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="peak RSS is read from /proc (Linux)")
@pytest.mark.parametrize("kind", KINDS)
def test_fuzzed_gguf_is_one_line_or_a_valid_report(tmp_path: Path, kind: str) -> None:
    proc = subprocess.run([sys.executable, __file__, kind, str(SEED), str(ITERATIONS), str(tmp_path)],
                          capture_output=True, text=True, timeout=60 + ITERATIONS * CHECK_SECONDS,
                          cwd=Path(__file__).parent)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["failed"] == 0, "\n".join(result["failures"])
    assert result["peak_mb"] < MAX_RSS_MB, result
    # The mutations reach both outcomes: files refused with one line, and files still read as models.
    assert result["report"] > 0 and result["error"] > 0, result


if __name__ == "__main__":
    # python tests/test_fuzz_gguf.py KIND SEED COUNT FOLDER: the child; prints one JSON line.
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    kind_arg, seed_arg, count_arg, folder_arg = sys.argv[1:5]
    print(json.dumps(child(kind_arg, int(seed_arg), int(count_arg), Path(folder_arg))))
