"""Every console example of README.md and docs/: defined here, run here, and written into the Markdown.

A page marks where an example goes; this script writes the block between the markers:

    <!-- example: NAME -->
    ```console
    $ mtpinspect ...
    (the output, or an excerpt of it: "..." stands for lines left out)
    [exit status N]          (only when N is not 0)
    ```
    <!-- /example -->

Each example runs `python -m mtpinspect` in a fresh work folder (shown as /tmp/demo) with its own mtpinspect
cache folder (the built llama-server shared), on the project's own fixtures: the tiny models, the
real-world cases of cases/ on the loopback Hub stand-in (tests/hubstub.py), app stores written as Ollama
and LM Studio write them (tests/appstores.py). tests/test_docs_examples.py runs each one and checks that it
exits as shown and that the shown lines appear in its output, in order (parts that change from run to run,
such as timings, are masked: Example.volatile, Example.stable).

    python docs/examples.py                 # run every example that can run here, rewrite the pages
    python docs/examples.py --only sweep-default,find-glm
    python docs/examples.py --list
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # this checkout's mtpinspect; the fixtures' helpers (hubstub, ...)

from mtpinspect.runtime.build_cache import cache_root  # noqa: E402

# The built llama-servers, read before anything moves the cache folder (the tests give each test its own).
SERVERS = cache_root()
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
SHOWN_WORK = "/tmp/demo"  # the work folder, as the pages show it
# The package folder, as the Quick start's `pip install .` places it: the same on every checkout (CI clones elsewhere).
SHOWN_PACKAGE = ".../site-packages/mtpinspect"
SHOWN_CACHE = "~/.cache/mtpinspect"  # the cache folder where it is by default (cache_dir.py)
BLOCK = re.compile(r"(<!-- example: (?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)(<!-- /example -->)", re.S)
CONSOLE = re.compile(r"^```console\n(?P<text>.*?)^```\n", re.S | re.M)
EXIT_LINE = re.compile(r"^\[exit status (\d+)\]$")
TABLE_RULE = re.compile(r"^-+(  +-+)+$")  # the rule under a table's header row: one dashed run per column
TIMEOUT = 900  # seconds for one example (a default sweep is the longest)

Setup = Callable[[Path, ExitStack], dict[str, str]]


@dataclass(frozen=True)
class Run:
    exit: int
    lines: list[str]  # stdout (and stderr when the example shows it), paths as the pages show them
    # A sweep example's figures recomputed from its runs.jsonl (the oracle), per (class, config as shown),
    # and where its printed table disagrees with them beyond FIGURE_TOLERANCE.
    oracle: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Example:
    name: str
    args: tuple[str, ...]  # mtpinspect's arguments, as shown after `$ mtpinspect`
    exit: int
    setup: Setup = lambda work, stack: {}  # writes the files it needs into the work folder; returns the env
    shown_env: tuple[str, ...] = ()  # variables of the env shown before the command (OLLAMA_MODELS=...)
    before: tuple[tuple[str, ...], ...] = ()  # mtpinspect commands run first, not shown (fill a cache)
    stderr: bool = False  # show stderr after stdout (errors); progress lines are never shown otherwise
    server: bool = False  # runs llama-server or llama.cpp's verify helper (built once: mtpinspect runtime build)
    own_cache: bool = True  # a fresh mtpinspect cache folder; False: the user's (where the built server is)
    keep: Callable[[list[str]], list[str]] | None = None  # an excerpt of the output; None: all of it
    volatile: tuple[str, ...] = ()  # regexes of what changes from run to run: masked when compared
    stable: str | None = None  # regex: only shown lines that match it are compared (the rest are measurements)
    # Section headings printed only when the run measured something (drift's table of where texts part exists
    # only if a trigger changed a text, and whether batching does depends on how the requests met the server):
    # a shown section whose heading the run did not print is not compared.
    measured_sections: tuple[str, ...] = ()
    needs: Callable[[], str | None] = lambda: None  # why it cannot run here, or None
    timeout: float = 300
    columns: int = 120  # the terminal width tables are wrapped to
    # A sweep into out/sweep: its table's figures are checked against its runs.jsonl (check_figures).
    oracle: bool = False
    markdown: bool = False  # the output is Markdown (--format md): written as it is, not as a console block
    # (a file the command writes in the work folder, where the pages show it): copied when the pages are
    # rewritten, so a plot comes from the same run as the table beside it
    figure: tuple[str, str] | None = None

    @property
    def command(self) -> str:
        env = " ".join(f"{k}={v}" for k, v in self._shown_env().items())
        return " ".join(filter(None, [env, "mtpinspect", *map(_quote, self.args)]))

    def _shown_env(self) -> dict[str, str]:
        return {k: SHOWN_ENV[k] for k in self.shown_env}


SHOWN_ENV = {"OLLAMA_MODELS": f"{SHOWN_WORK}/ollama", "HOME": f"{SHOWN_WORK}/home"}


def _quote(arg: str) -> str:
    return arg if re.fullmatch(r"[\w@%+=:,./-]+", arg) else "'" + arg.replace("'", "'\\''") + "'"


# Excerpts ---------------------------------------------------------------------------------------------


def head(n: int) -> Callable[[list[str]], list[str]]:
    """The first n lines."""
    return lambda lines: lines[:n] + (["..."] if len(lines) > n else [])


def sections(*titles: str, first: int = 2) -> Callable[[list[str]], list[str]]:
    """The first lines (the verdict) and the titled sections ("Runtimes" over a line of dashes; a title is
    matched by its start)."""

    def keep(lines: list[str]) -> list[str]:
        out, last = lines[:first], first
        for title in titles:
            at = next((i for i in range(last, len(lines) - 1) if lines[i].startswith(title) and set(lines[i + 1]) == {"-"}),
                      None)
            if at is None:
                raise ValueError(f"no section {title!r} in the output")
            end = next((j for j in range(at, len(lines)) if not lines[j].strip()), len(lines))
            out += (["..."] if at > last else []) + lines[at:end]
            last = end
        return out + (["..."] if any(line.strip() for line in lines[last:]) else [])

    return keep


# Fixtures ---------------------------------------------------------------------------------------------


def _cache_folder(work: Path) -> Path:
    """A cache folder of the example's own whose built llama-servers are the user's (as the tests do)."""
    folder = work.parent / "cache"
    folder.mkdir()
    SERVERS.mkdir(parents=True, exist_ok=True)
    (folder / SERVERS.name).symlink_to(SERVERS, target_is_directory=True)
    return folder


def nothing_built(work: Path, stack: ExitStack) -> dict[str, str]:
    """A machine where no llama-server is built yet: the example's cache folder without the built servers."""
    (work.parent / "cache" / SERVERS.name).unlink()
    return {}


def hub_case(case_id: str) -> Setup:
    """A real-world case of cases/ served as its Hub repo by the loopback stand-in."""

    def setup(work: Path, stack: ExitStack) -> dict[str, str]:
        from casekit import load_cases, serve_cases
        from hubstub import HubStub

        stub = stack.enter_context(HubStub())
        serve_cases(stub, [c for c in load_cases() if c.id == case_id], work.parent / "cases")
        return {"HF_ENDPOINT": stub.url}

    return setup


def stalled_listing(work: Path, stack: ExitStack) -> dict[str, str]:
    """A Hub that reads the listing request of acme/model and answers nothing."""
    from hubstub import Fault, HubStub

    from mtpinspect.tiny_model import write_tiny_model

    (model,) = write_tiny_model(work.parent / "model.gguf")
    stub = stack.enter_context(HubStub())
    stub.add_repo("acme/model", {model.name: model})
    stub.add_fault("acme/model", Fault("stall", "listing", seconds=30))
    return {"HF_ENDPOINT": stub.url}


def census_tree(work: Path, stack: ExitStack) -> dict[str, str]:
    from census_tree import serve_tree
    from hubstub import HubStub

    stub = stack.enter_context(HubStub())
    serve_tree(stub, work.parent / "tree")
    return {"HF_ENDPOINT": stub.url}


def big_pair_on_the_hub(work: Path, stack: ExitStack) -> dict[str, str]:
    """A 100 GiB glm4moe trunk and its mtp- sidecar (sparse files, real headers) as acme/Big-GLM-GGUF."""
    from gguf_factory import write_big_gguf
    from hubstub import HubStub

    folder = work.parent / "big"
    folder.mkdir()
    main = write_big_gguf(folder / "Big-Q4_K_M.gguf", size_gib=100, part="trunk").path
    side = write_big_gguf(folder / "mtp-Big-Q4_K_M.gguf", size_gib=100, part="mtp").path
    stub = stack.enter_context(HubStub())
    stub.add_repo("acme/Big-GLM-GGUF", {main.name: main, side.name: side})
    return {"HF_ENDPOINT": stub.url}


def tiny_sidecar_without_embedding(work: Path, stack: ExitStack) -> dict[str, str]:
    """A trunk and an mtp- sidecar of the shape some repos publish: the head without token_embd."""
    from gguf_factory import write_nextn_gguf

    from mtpinspect.tiny_model import TinyModelSpec, write_tiny_model

    write_tiny_model(work / "Tiny-F32.gguf", TinyModelSpec(nextn=False))
    write_nextn_gguf(work / "mtp-Tiny-F32.gguf", sidecar=True, shared=False)
    return {}


def tiny_model(work: Path, stack: ExitStack) -> dict[str, str]:
    from mtpinspect.tiny_model import write_tiny_model

    write_tiny_model(work / "model.gguf")
    return {}


def copy_log(name: str) -> Setup:
    def setup(work: Path, stack: ExitStack) -> dict[str, str]:
        (work / "cases" / "logs").mkdir(parents=True)
        (work / "cases" / "logs" / name).write_bytes((ROOT / "cases" / "logs" / name).read_bytes())
        return {}

    return setup


def mtp_bench_output(work: Path, stack: ExitStack) -> dict[str, str]:
    """What bench/mtp_bench_method.py printed against the built-in model (bench/README.md), as a user pastes it."""
    import json

    pair = json.loads((ROOT / "bench" / "results" / "mtp-bench-head-to-head.json").read_text(encoding="utf-8"))["pairs"][0]
    printed = pair["method"]["printed"].split("\nWrote ")[0]
    (work / "mtp-bench.txt").write_text(printed + "\n", encoding="utf-8")
    return {}


def _tiny_models(folder: Path) -> dict[str, Path]:
    from mtpinspect.tiny_model import TinyModelSpec, write_tiny_model

    (folder / "plain").mkdir(parents=True)
    (folder / "pair").mkdir()
    (head,) = write_tiny_model(folder / "tiny-F32.gguf", TinyModelSpec())
    (nohead,) = write_tiny_model(folder / "plain" / "tiny-nohead-F32.gguf", TinyModelSpec(nextn=False))
    main, side = write_tiny_model(folder / "pair" / "pair.gguf", TinyModelSpec(layout="sidecar"))
    return {"head": head, "nohead": nohead, "main": main, "sidecar": side}


def ollama_store(work: Path, stack: ExitStack) -> dict[str, str]:
    """An Ollama store of the tiny models: a model whose Modelfile sets draft_num_predict 3, one that sets
    nothing, a tag named -mtp without a head, and a trunk with its mtp- sidecar as a DRAFT layer."""
    from appstores import write_ollama_model

    models = _tiny_models(work.parent / "ggufs")
    store = work / "ollama"
    write_ollama_model(store, "mtpinspect-tiny:mtp", gguf=models["head"], params={"draft_num_predict": 3})
    write_ollama_model(store, "mtpinspect-tiny:latest", gguf=models["head"], params={"temperature": 0.7})
    write_ollama_model(store, "mtpinspect-tiny:1b-mtp", gguf=models["nohead"])
    write_ollama_model(store, "hf.co/acme/Tiny-GGUF:Q8_0", gguf=models["main"], draft=models["sidecar"])
    return {"OLLAMA_MODELS": str(store)}


def lmstudio_home(work: Path, stack: ExitStack) -> dict[str, str]:
    """LM Studio's models folder under HOME: a GGUF that bundles its head, and a trunk + mtp- pair."""
    from appstores import write_lmstudio_repo

    models = _tiny_models(work.parent / "ggufs")
    home = work / "home"
    write_lmstudio_repo(home, "acme/Tiny-GGUF", [models["head"]])
    write_lmstudio_repo(home, "acme/Tiny-Pair-GGUF", [models["main"], models["sidecar"]])
    # HOME moves; the cache folder (the built llama-server and verify helper) stays where it is.
    return {"HOME": str(home), "MTPINSPECT_CACHE_DIR": str(SERVERS.parent)}


def _no_trained_model() -> str | None:
    from mtpinspect.trained_model import SHIPPED_GGUF

    return None if SHIPPED_GGUF.is_file() else f"the built-in trained model is not here ({SHIPPED_GGUF})"


# The examples -----------------------------------------------------------------------------------------

TIMING = r"\d+(\.\d+)? (s|ms)\b"
# A sweep's headings, its table header and its files: the rest are measurements, which change from run to run.
_SWEEP_STABLE = r"^(MTP sweep of|Decode speed|Recommendation|class |runs:|report:|server logs:|-+$)"
QWEN3_NEXT = "derived/Qwen3-Next-80B-A3B-Thinking-FP8-Dynamic"
EXAMPLES = [
    Example("check-hub", ("check", QWEN3_NEXT), 0, hub_case("qwen3-next-fp8-dynamic-third-party")),
    Example("check-hub-short", ("check", QWEN3_NEXT), 0, hub_case("qwen3-next-fp8-dynamic-third-party"),
            keep=sections("Runtimes")),
    Example("check-big-sidecar", ("check", "acme/Big-GLM-GGUF:Q4_K_M"), 0, big_pair_on_the_hub, server=True,
            volatile=(r"process [\d.]+ [KMG]iB", r"[\d.]+ GiB with MTP; [\d.]+ GiB without MTP")),
    Example("check-big-sidecar-cached", ("check", "acme/Big-GLM-GGUF:Q4_K_M"), 0, big_pair_on_the_hub,
            before=(("check", "acme/Big-GLM-GGUF:Q4_K_M"),), server=True, keep=head(2)),
    Example("check-sidecar-refused", ("check", "Tiny-F32.gguf"), 1, tiny_sidecar_without_embedding, server=True,
            keep=sections("Findings", "Runtimes", first=1)),
    Example("check-sidecar-rules-only", ("check", "Tiny-F32.gguf", "--no-verify"), 1, tiny_sidecar_without_embedding,
            keep=sections("Findings", "Runtimes", first=1)),
    Example("check-codes", ("check", "--codes", "--format", "md"), 0, markdown=True),
    Example("check-stalled-hub", ("check", "acme/model", "--timeout", "2"), 2, stalled_listing, stderr=True),
    Example("find-glm", ("find", "zai-org/GLM-4.7", "--limit", "8", "--no-verify"), 0, census_tree, columns=200,
            volatile=(r"[\d.]+ MiB read, in " + TIMING,)),
    Example("sweep-default", ("sweep",), 0, server=True, oracle=True, own_cache=False, needs=_no_trained_model, timeout=TIMEOUT,
            figure=("out/sweep/sweep.png", "docs/sweep-demo.png"),
            keep=sections("Decode speed and acceptance", "Recommendation", "Files", first=4),
            stable=r"^(MTP sweep of|Recommendation|Files|runs:|report:|plot:|server logs:|-+$)"),
    Example("sweep-tiny", ("sweep", "model.gguf", "--n-max", "1,3", "--repeat", "1", "--", "-t", "1"), 0, tiny_model,
            server=True, oracle=True, stable=r"^(MTP sweep of|[A-Z][\w ,()\[\]-]+$|class |runs:|report:|plot:|server logs:)"),
    # The built-in model through llama-server's ChatML fallback and by raw completion (docs/sweep.md).
    Example("sweep-chat", ("sweep", "--request", "chat", "--prompts", "mtp-bench-categories", "--n-predict", "192",
                           "--repeat", "1", "--n-max", "3", "--no-plot", "--", "-t", "1"), 0, server=True, oracle=True,
            own_cache=False, needs=_no_trained_model, timeout=TIMEOUT,
            keep=sections("Decode speed and acceptance", first=5), stable=r"^(MTP sweep of|requests:|-+$)"),
    Example("sweep-completion", ("sweep", "--prompts", "mtp-bench-categories", "--n-predict", "192",
                                 "--repeat", "1", "--n-max", "3", "--no-plot", "--", "-t", "1"), 0, server=True, oracle=True,
            own_cache=False, needs=_no_trained_model, timeout=TIMEOUT,
            keep=sections("Decode speed and acceptance", first=5), stable=r"^(MTP sweep of|requests:|-+$)"),
    # On CPU llama-server the same build gives the same bits: the control, the restart and MTP at -t 1 are
    # compared; batching and threads are this CPU's (kernels differ between instruction sets), and so is the
    # table of where texts part, which is there only when something flipped.
    Example("drift-code", ("drift", "--prompts", "code", "--n-max", "1"), 0, server=True, own_cache=False,
            needs=_no_trained_model, timeout=TIMEOUT, volatile=(r"\b0\.\d{3}\b",),
            measured_sections=("Where the texts part",),
            stable=r"^(Temperature-0 drift of|Triggers|trigger +change|the same server twice|MTP n-max 1 vs baseline|"
                   r"a restart|Answer|Files|answers:|report:|server logs:)"),
    # The serving-condition axes (issue 33), each on the built-in model with short settings.
    Example("sweep-concurrency", ("sweep", "--prompts", "code", "--n-max", "2", "--repeat", "1", "--n-predict", "32",
                                  "--concurrency", "1,4", "--no-plot"), 0, server=True, oracle=True, own_cache=False,
            needs=_no_trained_model, keep=sections("Decode speed and acceptance", "Recommendation", first=2),
            stable=_SWEEP_STABLE, timeout=TIMEOUT),
    Example("sweep-temperature", ("sweep", "--prompts", "code", "--n-max", "2", "--repeat", "2", "--n-predict", "32",
                                  "--temperature", "0,0.8", "--no-plot"), 0, server=True, oracle=True, own_cache=False,
            needs=_no_trained_model, keep=sections("Decode speed and acceptance", "Recommendation", first=2),
            stable=_SWEEP_STABLE, timeout=TIMEOUT),
    Example("sweep-methods", ("sweep", "--prompts", "code", "--n-max", "2", "--repeat", "1", "--n-predict", "32",
                              "--method", "draft-mtp,ngram-simple,ngram-mod", "--no-plot"), 0, server=True, oracle=True,
            own_cache=False, needs=_no_trained_model,
            keep=sections("Decode speed and acceptance", "Methods on the same prompts", "Recommendation", first=2),
            stable=_SWEEP_STABLE, timeout=TIMEOUT),
    Example("sweep-long-prompt", ("sweep", "--prompts", "code", "--n-max", "2", "--repeat", "1", "--n-predict", "16",
                                  "--long-prompt", "2000", "--no-plot"), 0, server=True, oracle=True, own_cache=False,
            needs=_no_trained_model, keep=sections("Decode speed and acceptance", "Recommendation", first=2),
            stable=_SWEEP_STABLE, timeout=TIMEOUT),
    Example("diagnose-log", ("diagnose", "--log", "cases/logs/vllm-qwen3-next-fp8-dynamic-mtp-zero.log"), 1,
            copy_log("vllm-qwen3-next-fp8-dynamic-mtp-zero.log")),
    Example("diagnose-mtp-bench", ("diagnose", "--log", "mtp-bench.txt"), 0, mtp_bench_output),
    Example("diagnose-codes", ("diagnose", "--codes", "--format", "md"), 0, markdown=True),
    Example("diagnose-log-short", ("diagnose", "--log", "cases/logs/vllm-qwen3-next-fp8-dynamic-mtp-zero.log"), 1,
            copy_log("vllm-qwen3-next-fp8-dynamic-mtp-zero.log"), keep=sections("Logs", first=1)),
    Example("diagnose-wrong-spec-type", ("diagnose", "model.gguf", "--", "--spec-type", "mtp", "-t", "1"), 1, tiny_model,
            server=True, keep=sections("Probe: ", first=1), stable=r"^(most likely|Probe:|configuration |as given|  ->)",
            volatile=(r" \(\+\d+ more\)", r"--port \d+")),
    Example("ollama-all", ("check", "ollama:", "--all"), 0, ollama_store, shown_env=("OLLAMA_MODELS",), server=True),
    Example("ollama-mtp-off", ("check", "ollama:mtpinspect-tiny"), 0, ollama_store, shown_env=("OLLAMA_MODELS",),
            server=True, keep=sections("Runtimes", "In Ollama and LM Studio", "Commands", first=1)),
    Example("lmstudio-all", ("check", "lmstudio:", "--all"), 0, lmstudio_home, shown_env=("HOME",), server=True),
    # No llama-server built here: the command it prints names `llama-server` on PATH on every machine.
    Example("tiny-model", ("tiny-model", "tiny.gguf", "--acceptance", "0.5"), 0, nothing_built),
    Example("runtime", ("runtime",), 0, server=True, own_cache=False),
    # The tools found, and so the last line, are this machine's; the backend follows --backend's default.
    Example("runtime-fresh", ("runtime",), 0, nothing_built, volatile=(r"\b(cpu|cuda)\b",),
            stable=r"^(llama-server|field|status|pinned build|cached in|verify helper)"),
]
BY_NAME = {e.name: e for e in EXAMPLES}


# Running ----------------------------------------------------------------------------------------------


def run(example: Example, keep_figure: bool = False) -> Run:
    """Run the example in a fresh work folder: its exit status and its output as the pages show it (and,
    with ``keep_figure``, its figure copied to where the pages show it)."""
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="mtpinspect-example-") as tmp:
        work = Path(tmp) / "demo"
        work.mkdir()
        env = {**os.environ, "COLUMNS": str(example.columns), "LINES": "40", "PYTHONPATH": str(ROOT)}
        env["MTPINSPECT_CACHE_DIR"] = str(_cache_folder(work) if example.own_cache else SERVERS.parent)
        env.update(example.setup(work, stack))
        for args in example.before:
            subprocess.run([sys.executable, "-m", "mtpinspect", *args], cwd=work, env=env, capture_output=True,
                           timeout=example.timeout, check=True)
        done = subprocess.run([sys.executable, "-m", "mtpinspect", *example.args], cwd=work, env=env,
                              capture_output=True, text=True, timeout=example.timeout)
        text = done.stdout + (done.stderr if example.stderr else "")
        if keep_figure and example.figure is not None and done.returncode == example.exit:
            shutil.copyfile(work / example.figure[0], ROOT / example.figure[1])
        lines = _as_shown(text, work, env).splitlines()
        if not example.oracle:
            return Run(done.returncode, lines)
        oracle = oracle_figures(work / "out" / "sweep")
        return Run(done.returncode, lines, oracle, check_figures(lines, oracle))


# Figures against an oracle ------------------------------------------------------------------------------

# How far a figure in a sweep's table may be from the one recomputed from runs.jsonl: half a unit in the
# last place it is printed with: tok/s and its range one decimal, TTFT whole milliseconds (absolute);
# acceptance and mean length 3 significant digits (cli/_output.py), so half a unit of the third (SIGNIFICANT).
FIGURE_TOLERANCE = {"tok/s": 0.05 + 1e-9, "TTFT": 0.5 + 1e-9, "acceptance": None, "mean len": None}
SIGNIFICANT = 3


def tolerance(column: str, value: float) -> float:
    """The largest difference FIGURE_TOLERANCE allows for ``value`` printed in ``column``."""
    absolute = FIGURE_TOLERANCE[column]
    if absolute is not None:
        return absolute
    return 0.5 * 10 ** (math.floor(math.log10(abs(value))) - SIGNIFICANT + 1) + 1e-9 if value else 1e-9
# The figures that do not change from run to run at temperature 0 on one request (the same build and
# settings give the same bits on CPU): a page's shown ones are checked against a fresh run's oracle too.
REPRODUCIBLE = ("acceptance", "mean len")
TABLE_TITLE = "Decode speed and acceptance"


def table_rows(lines: list[str], title: str = TABLE_TITLE) -> list[dict[str, str]]:
    """The rows of a titled table as the sink prints it (tabulate's simple format): each cell cut at its
    column's dashes, a wrapped cell's lines joined with a space."""
    starts = [i for i, line in enumerate(lines) if line.startswith(title)]
    if not starts:
        return []
    header, dashes = lines[starts[0] + 2], lines[starts[0] + 3]
    spans = [m.span() for m in re.finditer(r"-+", dashes)]
    names = [header[a:b].strip() for a, b in spans]
    rows: list[dict[str, str]] = []
    for line in lines[starts[0] + 4:]:
        gaps = [line[b:a] for (_, b), (a, _) in zip(spans, spans[1:])]
        if not line.strip() or line == "..." or any(gap.strip() for gap in gaps):
            break  # the table ends at a blank line, an excerpt's "...", or text that crosses its column gaps
        cells = [line[a:b if i + 1 < len(spans) else None].strip() for i, (a, b) in enumerate(spans)]
        if cells[0] or not rows:
            rows.append(dict(zip(names, cells)))
        else:  # a wrapped row's next line
            for name, cell in zip(names, cells):
                if cell:
                    rows[-1][name] = f"{rows[-1][name]} {cell}".strip()
    return rows


def oracle_figures(out: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Per (class, configuration as the table labels it): the figures recomputed from the runs in
    runs.jsonl, not from the report: tok/s median, min and max of the runs' decode speeds, acceptance pooled
    from the requests' own counts (and the same from the server log's draft lines, which must agree), mean
    length from the /metrics drafts, TTFT the median of every request's client-timed first token."""
    if not (out / "runs.jsonl").is_file() or not (out / "report.json").is_file():
        return {}
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    labels = {(g["prompt_class"], g["configuration"]): g["label"] + (f" [{g['workaround']}]" if g.get("workaround") else "")
              for g in report["results"]}
    runs: dict[tuple[str, str], list[dict]] = {}
    for line in (out / "runs.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("kind") == "run" and record.get("status") == "ok":
            runs.setdefault((record["prompt_class"], record["configuration"]), []).append(record)
    figures: dict[tuple[str, str], dict[str, Any]] = {}
    for key, mine in runs.items():
        speeds = [r["decode_tokens_per_second"] for r in mine if r.get("decode_tokens_per_second")]
        drafted, accepted = sum(r["drafted"] for r in mine), sum(r["accepted"] for r in mine)
        drafts = sum(r["drafts"] for r in mine)
        logged = [r["log"] for r in mine if r.get("log")]
        first_tokens = [ms for r in mine for ms in r.get("per_request_first_token_ms", [])]
        figures[(key[0], labels.get(key, key[1]))] = {
            "tok/s": (statistics.median(speeds), min(speeds), max(speeds)) if speeds else None,
            "acceptance": accepted / drafted if drafted else None,
            "log acceptance": (sum(x["accepted"] for x in logged) / sum(x["generated"] for x in logged)
                               if logged and sum(x["generated"] for x in logged) else None),
            "mean len": 1 + accepted / drafts if drafts else None,
            "TTFT": statistics.median(first_tokens) if first_tokens else None,
            "concurrency": mine[0].get("concurrency", 1),
            "temperature": mine[0].get("temperature", 0.0),
        }
    return figures


def _numbers(cell: str) -> list[float]:
    return [float(x) for x in re.findall(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?", cell)]


def check_figures(lines: list[str], oracle: dict[tuple[str, str], dict[str, Any]],
                  columns: tuple[str, ...] = tuple(FIGURE_TOLERANCE), reproducible_only: bool = False) -> list[str]:
    """Where the table in ``lines`` disagrees with the oracle beyond FIGURE_TOLERANCE (one line each)."""
    problems = []
    rows = table_rows(lines)
    if oracle and not rows:
        return [f"no '{TABLE_TITLE}' table to check"]
    for row in rows:
        key = (row.get("class", ""), row.get("config", ""))
        expected = oracle.get(key)
        if expected is None:
            problems.append(f"{key}: a row without runs in runs.jsonl")
            continue
        if expected["log acceptance"] is not None and expected["acceptance"] is not None and \
                abs(expected["log acceptance"] - expected["acceptance"]) > 1e-9:
            problems.append(f"{key}: the requests' counts give acceptance {expected['acceptance']:.5f}, "
                            f"the server log's draft lines {expected['log acceptance']:.5f}")
        if reproducible_only and (expected["concurrency"] != 1 or expected["temperature"] != 0.0):
            continue
        for column in columns:
            if column not in row or (reproducible_only and column not in REPRODUCIBLE):
                continue
            want = expected[column]
            got = _numbers(row[column]) if row[column] not in ("", "-") else []
            if column == "tok/s":  # median [min-max]
                got, want = got[:3], list(want) if want else None
            else:
                got, want = got[:1], [want] if want is not None else None
            if want is None or not got:
                if bool(want) != bool(got):
                    problems.append(f"{key}: {column} shown {row[column]!r}, oracle {want}")
                continue
            if len(got) != len(want) or any(abs(g - w) > tolerance(column, w) for g, w in zip(got, want)):
                problems.append(f"{key}: {column} shown {row[column]!r}, runs.jsonl gives "
                                + ", ".join(f"{w:.4f}" for w in want))
    return problems


def _as_shown(text: str, work: Path, env: dict[str, str]) -> str:
    """Paths as the pages show them: the work folder as /tmp/demo, the package as installed, the home folder
    as ~; a heading's underline keeps the length of its heading as shown."""
    swaps = [(str(work.resolve()), SHOWN_WORK), (str(work), SHOWN_WORK), (str(ROOT / "mtpinspect"), SHOWN_PACKAGE)]
    swaps += [(env[name], "http://127.0.0.1:PORT") for name in ("HF_ENDPOINT",) if name in env]
    # The built servers' folder is shown where it is by default, wherever this run keeps it
    # ($MTPINSPECT_CACHE_DIR, $XDG_CACHE_HOME, a HOME of any length).
    swaps += [(str(work.parent / "cache"), SHOWN_CACHE), (str(SERVERS.resolve()), f"{SHOWN_CACHE}/{SERVERS.name}"),
              (str(SERVERS.parent), SHOWN_CACHE)]
    swaps.append((str(Path.home()), "~"))
    lines = text.split("\n")
    for i, line in enumerate(lines):
        shown = line
        for old, new in swaps:
            shown = shown.replace(old, new)
        underline = i + 1 < len(lines) and lines[i + 1] and set(lines[i + 1]) == {"-"}
        if shown != line and underline and len(lines[i + 1]) == min(len(line), 100):  # Output.heading's rule
            lines[i + 1] = "-" * min(len(shown), 100)
        lines[i] = shown
    return "\n".join(lines)


def render(example: Example, result: Run) -> str:
    """The console block of the example's result."""
    lines = result.lines if example.keep is None else example.keep(result.lines)
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    tail = [f"[exit status {result.exit}]"] if result.exit else []
    if example.markdown:  # a table the page shows as a table: the command is said in the text around it
        return "\n".join([*(line.rstrip() for line in lines), *tail]) + "\n"
    return "\n".join(["```console", f"$ {example.command}", *(line.rstrip() for line in lines), *tail, "```"]) + "\n"


# Reading the pages back -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shown:
    page: Path
    name: str
    command: str
    lines: list[str]
    exit: int = 0
    extra: list[str] = field(default_factory=list)  # text in the marked block outside its console block


def shown_blocks(pages: tuple[Path, ...] = PAGES) -> Iterator[Shown]:
    for page in pages:
        for m in BLOCK.finditer(page.read_text()):
            body = m["body"]
            example = BY_NAME.get(m["name"])
            if example is not None and example.markdown:
                lines = body.splitlines()
                status = EXIT_LINE.match(lines[-1]) if lines else None
                yield Shown(page, m["name"], example.command, lines[:-1] if status else lines,
                            int(status[1]) if status else 0)
                continue
            console = CONSOLE.search(body)
            lines = console["text"].splitlines() if console else []
            command = lines[0].removeprefix("$ ") if lines else ""
            out = lines[1:]
            status = EXIT_LINE.match(out[-1]) if out else None
            extra = [t for t in CONSOLE.sub("", body).splitlines() if t.strip()]
            yield Shown(page, m["name"], command, out[:-1] if status else out, int(status[1]) if status else 0, extra)


def unmarked_console_blocks(pages: tuple[Path, ...] = PAGES) -> list[str]:
    """Console blocks that no example marker holds: output nothing regenerates or checks."""
    found = []
    for page in pages:
        text = BLOCK.sub("", page.read_text())
        found += [f"{page.relative_to(ROOT)}: {m['text'].splitlines()[0] if m['text'] else ''}" for m in CONSOLE.finditer(text)]
    return found


def _mask(line: str, volatile: tuple[str, ...]) -> str:
    for pattern in volatile:
        line = re.sub(pattern, "", line)  # dropped: a part that may be absent compares equal too
    return " ".join(line.split())  # column widths follow the values


def _unprinted_sections(example: Example, shown: list[str], actual: list[str]) -> set[int]:
    """The shown lines of each Example.measured_sections section the run did not print: from its heading to the
    next heading (a line above a rule of dashes only; a table's rule has gaps between its columns)."""
    skipped: set[int] = set()
    for i, line in enumerate(shown[:-1]):
        if not any(line.startswith(name) for name in example.measured_sections) or line in actual:
            continue
        end = next((j for j in range(i + 2, len(shown) - 1) if shown[j] and set(shown[j + 1]) == {"-"}), len(shown))
        skipped.update(range(i, end))
    return skipped


def missing_lines(example: Example, shown: list[str], actual: list[str]) -> list[str]:
    """The shown lines that do not appear in the actual output, in order ("..." skips; volatile parts and,
    with Example.stable, lines that are measurements are not compared)."""
    have = [_mask(line, example.volatile) for line in actual]
    missing, at = [], 0
    unprinted = _unprinted_sections(example, shown, actual)
    # A table's header row (the line above its rule of dashed columns) is always compared, also where
    # Example.stable skips measurements: a column the tool prints must not be missing from an example.
    headers = {i for i, line in enumerate(shown[:-1]) if TABLE_RULE.match(shown[i + 1]) and line.strip()}
    for i, line in enumerate(shown):
        # A table's rule is as long as its widest value (a path that differs between machines): layout, not content.
        rule = set(line) <= {"-", " "}
        measured = example.stable and not re.search(example.stable, line) and i not in headers
        if line == "..." or not line.strip() or rule or measured or i in unprinted:
            continue
        want = _mask(line, example.volatile)
        try:
            at = have.index(want, at) + 1
        except ValueError:
            missing.append(line)
    return missing


def rewrite(results: dict[str, tuple[Example, Run]], pages: tuple[Path, ...] = PAGES) -> list[Path]:
    """Write each result into every page that marks its example; the pages changed."""
    changed = []
    for page in pages:
        old = page.read_text()

        def block(m: re.Match[str]) -> str:
            if m["name"] not in results:
                return m[0]
            return m[1] + render(*results[m["name"]]) + m[4]

        new = BLOCK.sub(block, old)
        if new != old:
            page.write_text(new)
            changed.append(page)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="comma-separated example names")
    parser.add_argument("--list", action="store_true", help="list the examples and where they are shown")
    args = parser.parse_args(argv)
    names = args.only.split(",") if args.only else list(BY_NAME)
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        parser.error(f"unknown example(s): {', '.join(unknown)} (known: {', '.join(BY_NAME)})")
    if args.list:
        where: dict[str, list[str]] = {}
        for s in shown_blocks():
            where.setdefault(s.name, []).append(str(s.page.relative_to(ROOT)))
        for e in EXAMPLES:
            print(f"{e.name:28} {', '.join(where.get(e.name, ['(not shown)']))}: $ {e.command}")
        return 0
    results, failed = {}, 0
    for name in names:
        example = BY_NAME[name]
        if (reason := example.needs()) is not None:
            print(f"{name}: skipped: {reason}", file=sys.stderr)
            continue
        print(f"{name}: $ {example.command}", file=sys.stderr, flush=True)
        result = run(example, keep_figure=True)
        if result.exit != example.exit:
            print(f"{name}: exit status {result.exit}, expected {example.exit}:\n" + "\n".join(result.lines[-20:]),
                  file=sys.stderr)
            failed += 1
            continue
        results[name] = (example, result)
    for page in rewrite(results):
        print(f"rewrote {page.relative_to(ROOT)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
