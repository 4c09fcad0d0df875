"""Progress of a measurement on stderr (sweep, drift): a redrawn bar with ETA on a terminal, one line per
run elsewhere (CI logs stay readable)."""

from __future__ import annotations

import re
import time
from typing import TextIO

from mtpinspect.cli._output import sanitize
from mtpinspect.sweep.progress import BUILD, NOTE, RUN_DONE, RUN_START, SERVER_FAILED, ProgressEvent
from mtpinspect.units import duration

_BAR_WIDTH = 24
# How the build's heartbeat line ends (runtime/build.py's _run): "... (cmake build: 6m12s so far)".
_HEARTBEAT_END = " so far)"
# A compile step of the build, as cmake prints it: "[ 38%] Building CXX object ...".
_BUILD_STEP_RE = re.compile(r"^\[\s*(\d+)%\]")


class BuildLines:
    """The lines of a llama-server build on a stream: its messages as they come; its compile steps ("[ 38%]
    Building ...") redrawn in place on a terminal, elsewhere one line per tenth of the build and every
    heartbeat (the build says where it is every 15 s, runtime/timeouts.py, however quiet or noisy it is)."""

    def __init__(self, stream: TextIO, prefix: str = "llama-server: ") -> None:
        self.stream = stream
        self.prefix = prefix
        self.tty = stream.isatty()
        self.drawn = False  # a redrawn step line is on screen (the next text starts a new line)
        self._started = time.monotonic()
        self._shown = -1  # the last percentage written on a non-TTY stream

    def __call__(self, message: str, elapsed: float | None = None) -> None:
        step = _BUILD_STEP_RE.match(message)
        took = time.monotonic() - self._started if elapsed is None else elapsed
        line = sanitize(f"{self.prefix}{message}" + (f" ({duration(took)})" if step and not message.endswith(_HEARTBEAT_END) else ""))
        if self.tty:
            # Compile steps overwrite each other; any other message (download, configure, done) stays.
            self.stream.write("\r\x1b[K" + line[:120] + ("" if step else "\n"))
            self.drawn = step is not None
        elif step is None or int(step.group(1)) // 10 > self._shown // 10 or message.endswith(_HEARTBEAT_END):
            if step is not None:
                self._shown = max(self._shown, int(step.group(1)))
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = False


def _describe(event: ProgressEvent) -> str:
    if event.prompt_id is not None and event.repeat is not None:
        where = f"{event.configuration} {event.prompt_id} round {event.repeat + 1}"
        return f"{where}: {event.message}" if event.phase == RUN_DONE else where
    return f"{event.configuration}: {event.message}" if event.configuration else event.message


class ProgressBar:
    """Draws the progress of a measurement (sweep, drift) on a stream: redrawn in place on a TTY, one line per event otherwise.

    A llama-server build before the first run is not the sweep's progress: its steps are drawn as build lines
    (redrawn in place on a TTY, one line per tenth of the build otherwise), and the sweep's bar appears only
    once measuring starts, so it never sits at 0/N through a build of many minutes."""

    def __init__(self, stream: TextIO, name: str = "sweep") -> None:
        self.stream = stream
        self.name = name  # the command, leading each line on a non-TTY stream
        self.tty = stream.isatty()
        self._drawn = False
        self._build = BuildLines(stream)

    def __call__(self, event: ProgressEvent) -> None:
        if event.phase == BUILD:
            self._build(event.message, event.elapsed_seconds)
            self._drawn = self._build.drawn
        elif self.tty:
            self._draw(event)
        elif event.phase != RUN_START:
            eta = f" (ETA {duration(event.eta_seconds)})" if event.done else ""
            self.stream.write(sanitize(f"{self.name} [{event.done}/{event.total}] {_describe(event)}") + eta + "\n")
            self.stream.flush()

    def _draw(self, event: ProgressEvent) -> None:
        filled = int(_BAR_WIDTH * event.done / event.total) if event.total else _BAR_WIDTH
        bar = "#" * filled + "-" * (_BAR_WIDTH - filled)
        if event.phase in (SERVER_FAILED, NOTE):
            # Failures stay on screen; the bar is redrawn below them.
            self.stream.write("\r\x1b[K" + sanitize(_describe(event)) + "\n")
        label = sanitize(_describe(event))[:80]
        self.stream.write(f"\r[{bar}] {event.done}/{event.total} ETA {duration(event.eta_seconds)}  {label}\x1b[K")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False
