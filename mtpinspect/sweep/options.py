"""What a sweep is asked to do: the typed options of :func:`mtpinspect.sweep.run_sweep`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mtpinspect.runtime.server import START_TIMEOUT_S
from mtpinspect.sweep.prompts import Prompt
from mtpinspect.vocabulary import WorkaroundMode


@dataclass(frozen=True)
class SweepOptions:
    n_max: tuple[int, ...] = (1, 2, 3, 4)
    repeat: int = 3
    order: str = "rounds"  # or "grouped": all rounds of a configuration on one server start
    # A .txt/.jsonl file, a directory of them, a built-in class name, or the prompts themselves;
    # None: every built-in class.
    prompts: str | Path | Sequence[Prompt] | None = None
    n_predict: int = 128
    seed: int = 42
    server: str | Path | None = None
    build_server: bool = True
    backend: str = "cpu"
    mtp_file: Path | None = None
    out_dir: Path = Path("out/sweep")
    resume: bool = False
    synthetic: tuple[float, ...] = ()
    server_args: tuple[str, ...] = ()
    plot: bool = True
    startup_timeout: float = START_TIMEOUT_S
    request_timeout: float = 600.0
    workaround: WorkaroundMode = WorkaroundMode.auto
