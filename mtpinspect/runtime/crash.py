"""Engine crashes: recognise that llama-server (or another engine) crashed, and how.

A crash is a process that died from a signal (SIGSEGV, SIGABRT, SIGILL, SIGBUS, SIGFPE) or printed
one of the engine's own crash texts: a failed ``GGML_ASSERT``, a ``GGML_ABORT``, an uncaught C++
exception (``terminate called after throwing ...``) or a GPU fault (``CUDA error: an illegal memory
access``). A clean exit with an error message (a wrong flag, a model that does not load) is a failed
start, not a crash; SIGKILL is left out too, since it usually means the kernel's out-of-memory killer.

Two entry points: :func:`crash_of` for a process mtpinspect ran (its return code and its log), and
:func:`crash_in_log` for a log pasted from elsewhere, where only the text tells (a shell's
``Segmentation fault (core dumped)``, a container's ``exited with code 139``); a shell's death line also says
which command died (:func:`died_command`), so another program's death is not taken for the engine's.
"""

from __future__ import annotations

import enum
import re
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import ClassVar

# Signals that mean the program itself broke, as opposed to being stopped from outside.
CRASH_SIGNALS = frozenset({signal.SIGSEGV, signal.SIGABRT, signal.SIGILL, signal.SIGBUS, signal.SIGFPE})
_LAST_LINES = 12


class CrashKind(str, enum.Enum):
    """How the engine died, from the most to the least specific evidence."""

    ASSERT = "assert"  # a failed GGML_ASSERT: the condition is the evidence
    ABORT = "abort"  # GGML_ABORT or another file:line fatal message
    EXCEPTION = "exception"  # terminate called after throwing an instance of ...
    GPU_FAULT = "gpu-fault"  # CUDA/HIP/Vulkan/Metal error: illegal memory access, device lost ...
    SIGNAL = "signal"  # only the signal is known (SIGSEGV, SIGILL, ...)
    BACKTRACE = "backtrace"  # only a native backtrace was kept (gdb frames, as ggml prints them)


@dataclass(frozen=True)
class Crash:
    json_properties: ClassVar[dict[str, str]] = {"summary": "summary"}

    kind: CrashKind
    signal: str | None  # "SIGSEGV", "SIGABRT", ... when known
    message: str  # the assert condition, the exception's what(), the GPU error, or the signal's meaning
    where: str | None  # "common/speculative.cpp:1376" when the engine printed it
    lines: tuple[str, ...]  # the log's last meaningful lines (no debugger noise)
    command: str | None = None  # the command a shell's death line names (bash's job line, zsh's, fish's): who died

    @classmethod
    def from_dict(cls, data: dict) -> Crash:
        """A crash as a journal holds it (its JSON form)."""
        return cls(CrashKind(data["kind"]), data.get("signal"), str(data.get("message", "")), data.get("where"),
                   tuple(str(line) for line in data.get("lines") or ()), data.get("command"))

    @property
    def summary(self) -> str:
        """One line: what died and how, e.g. "SIGABRT: GGML_ASSERT(add_ok ...) failed at server-context.cpp:508"."""
        head = self.signal or self.kind.value
        if self.kind is CrashKind.SIGNAL:
            return f"killed by {head} ({self.message})"
        at = f" at {self.where}" if self.where else ""
        return f"{head}: {self.message}{at}"


_SIGNAL_MEANING = {
    "SIGSEGV": "segmentation fault: invalid memory access",
    "SIGABRT": "aborted",
    "SIGILL": "illegal instruction: code built for a CPU feature this CPU lacks",
    "SIGBUS": "bus error: a mapped file changed or memory is misaligned",
    "SIGFPE": "arithmetic exception",
}

_ASSERT = re.compile(r"(?P<file>[^\s:]+\.\w+):(?P<line>\d+): GGML_ASSERT\((?P<cond>.*)\) failed")
_ABORT = re.compile(r"(?P<file>[^\s:]*?[\w.-]+\.(?:c|cc|cpp|cu|h|hpp|m|metal)):(?P<line>\d+): (?P<msg>\S.*)$")
_TERMINATE = re.compile(r"terminate called after throwing an instance of '(?P<type>[^']+)'")
# MSVC's std::vector::at() and operator[] in checked builds throw std::out_of_range with this what();
# llama.cpp's loader catches it and prints "error loading model: invalid vector subscript"
# (src/llama-model.cpp, the device split of the layers: llama.cpp#22337, #24795, #25873).
_VECTOR_SUBSCRIPT = re.compile(r"(?P<msg>(?:error loading model: )?invalid vector subscript)")
_WHAT = re.compile(r"^\s*what\(\):\s*(?P<what>.+)$")
# GPU faults, most telling first: the runtime's own error text, then what frameworks print around it.
# Each is found by its literal first (a regex alternation over a large log takes seconds), then read
# from its line.
_GPU = (
    ("CUDA error", re.compile(r"(?<![\w-])(?P<msg>CUDA error:? \S.*)")),
    ("ROCm error", re.compile(r"(?<![\w-])(?P<msg>ROCm error:? \S.*)")),
    ("HIP error", re.compile(r"(?<![\w-])(?P<msg>HIP error:? \S.*)")),
    ("SYCL error", re.compile(r"(?<![\w-])(?P<msg>SYCL error:? \S.*)")),
    ("illegal memory access", re.compile(r"(?P<msg>(?:an )?illegal memory access(?: was encountered)?)")),
    ("Memory access fault by GPU", re.compile(r"(?P<msg>Memory access fault by GPU.*)")),
    ("DeviceLost", re.compile(r"(?P<msg>(?:vk::DeviceLostError|ErrorDeviceLost).*)")),
    ("command buffer", re.compile(r"(?P<msg>ggml_metal\w*: error: command buffer \d+ failed.*)")),
    ("cudaError", re.compile(r"(?P<msg>cudaError\w+)")),
)
# What shells, launchers and containers print when a child dies from a signal.
_SHELL_SIGNAL = (
    # bash ("Segmentation fault (core dumped)"), zsh ("zsh: segmentation fault  ./llama-server ..."), Go's os/exec
    # as Ollama reports a dead runner ("signal: segmentation fault (core dumped)"), containers' exit codes.
    (re.compile(r"(?i:segmentation fault)|SIGSEGV|signal 11\b|exit(?:ed with)? code:? 139\b|\bcode=139\b"), "SIGSEGV"),
    (re.compile(r"(?i:illegal (?:hardware )?instruction)|SIGILL|signal 4\b|exit(?:ed with)? code:? 132\b"), "SIGILL"),
    (re.compile(r"Bus error|zsh: bus error|signal: bus error|SIGBUS|signal 7\b|exit(?:ed with)? code:? 135\b"), "SIGBUS"),
    (re.compile(r"(?i:floating point exception)|SIGFPE|signal 8\b|exit(?:ed with)? code:? 136\b"), "SIGFPE"),
    # "Aborted (core dumped)" alone on its line (a paste may bracket or quote it): vLLM's "Aborted request ..." is
    # not a crash. zsh says "zsh: abort", Go "signal: aborted". bash's job line names the command after the padded
    # status (jobs.c pretty_print_job: "[1]+  Aborted                 (core dumped) cmd", or without the job number), and
    # a script's child is reported with its line and pid ("./run.sh: line 14: 4821 Aborted (core dumped) cmd").
    (re.compile(r"(?:^|[\s\[(\"'])Aborted(?: \(core dumped\))?[\])\"'.\s]*$|zsh: abort\b|signal: aborted\b|SIGABRT|"
                r"signal 6\b|exit(?:ed with)? code:? 134\b|"
                r"(?:^(?:\[\d{1,4}\][+-]?\s+)?|: line \d{1,7}:\s+\d{1,9}\s+)Aborted(?:\s+\(core dumped\)|\s{2,}\S)"), "SIGABRT"),
    # MSVC's C runtime: abort() in a Debug build shows a dialog ("Debug Error! ... abort() has been called").
    (re.compile(r"\babort\(\) has been called"), "SIGABRT"),
    # Windows: an access violation, as Go's runtime prints it ("Exception 0xc0000005 0x0 ..." in Ollama's log),
    # as the event log / WER dump says it ("Exception code: 0xc0000005") or as an exit status, also in decimal
    # (NTSTATUS 0xC0000005 = 3221225477, or -1073741819 signed).
    (re.compile(r"Exception(?: [Cc]ode:?)? 0x[cC]0000005\b|exit status 0x[cC]0000005\b|"
                r"(?:exit(?:ed)?|code|status)\D{0,12}(?:3221225477|-1073741819)\b"), "SIGSEGV"),
    # abort() on Windows release builds ends in __fastfail: STATUS_STACK_BUFFER_OVERRUN 0xC0000409 (3221226505).
    (re.compile(r"0x[cC]0000409\b|(?:exit(?:ed)?|code|status)\D{0,12}(?:3221226505|-1073740791)\b"), "SIGABRT"),
    # systemd's unit line (src/core/service.c: "Main process exited, code=dumped, status=11/SEGV") and the kernel's
    # (arch/x86/mm/fault.c show_signal_msg: "llama-server[4821]: segfault at 0 ip ... error 4 in lib.so"; traps.c:
    # "traps: x[4821] trap invalid opcode", "general protection fault", "trap divide error").
    (re.compile(r"\bstatus=\d{1,3}/SEGV\b|\]: segfault at [0-9a-f]{1,16} ip \b|\]: general protection fault\b"), "SIGSEGV"),
    (re.compile(r"\bstatus=\d{1,3}/ABRT\b"), "SIGABRT"),
    (re.compile(r"\bstatus=\d{1,3}/ILL\b|\] trap invalid opcode\b"), "SIGILL"),
    (re.compile(r"\bstatus=\d{1,3}/BUS\b"), "SIGBUS"),
    (re.compile(r"\bstatus=\d{1,3}/FPE\b|\] trap divide error\b"), "SIGFPE"),
    # systemd-coredump's journal line; the frames below it say which signal (abort() -> SIGABRT).
    (re.compile(r"systemd-coredump\[\d+\]: .*Process \d+ \([\w.-]+\) of user \d+ dumped core"), "SIGABRT"),
)
# The command a shell's line says died of a signal: bash's job line ("[1]+  Aborted   (core dumped) cmd", also without
# the job number) and a script's child ("./run.sh: line 14: 4821 Segmentation fault      (core dumped) cmd"; bash
# jobs.c pretty_print_job / notify_of_job_status), zsh's ("zsh: segmentation fault (core dumped)  cmd", Src/jobs.c
# printjob), fish's ("fish: Job 1, 'cmd' terminated by signal SIGSEGV (Address boundary error)", proc.cpp).
_STATUS = (r"(?:Aborted|Segmentation fault|Bus error|Illegal instruction|Floating point exception|Killed|Trace/breakpoint trap|"
           r"Memory fault)")
_DIED_COMMAND = re.compile(
    r"^(?:\[\d{1,4}\][+-]?\s+)?" + _STATUS + r"(?:\s+\(core dumped\)\s+|\s{2,})(?P<bash>[\w./~\"'$-][^\n]{0,2000})$|"
    r": line \d{1,7}:\s+\d{1,9}\s+" + _STATUS + r"(?:\s+\(core dumped\))?\s+(?P<script>\S[^\n]{0,2000})$|"
    r"^zsh: (?:abort|segmentation fault|bus error|illegal hardware instruction|floating point exception|killed)"
    r"(?: \(core dumped\))?\s+(?P<zsh>\S[^\n]{0,2000})$|"
    r"^fish: (?:Job \d{1,4}, )?'(?P<fish>[^'\n]{1,2000})' terminated by signal|"
    # systemd's unit and the kernel's process name (see _SHELL_SIGNAL): the program, without its arguments.
    r"\b(?P<unit>[\w@.-]{1,200})\.service: Main process exited, code=(?:dumped|killed), status=\d|"
    r"(?:^|[\s:\]])(?:traps: )?(?P<process>[\w.+-]{1,64})\[\d{1,9}\]:? (?:segfault at|general protection fault|trap )")


def died_command(line: str) -> str | None:
    """The command a shell's death line names (see above), None when the line names none (a quote's closing backtick
    after "Aborted (core dumped)" is no command)."""
    found = _DIED_COMMAND.search(line.strip())
    command = next((v for v in found.groupdict().values() if v), "").strip() if found is not None else ""
    return command if _WORD.search(command) else None


_WORD = re.compile(r"[A-Za-z]{2}")


# A Windows exception dump names the faulting module and offset (WER, "Faulting module name: x.dll",
# "Fault offset: 0x..."); that is all it knows of where.
_WIN_MODULE = re.compile(r"Faulting module name: (?P<module>[\w.-]+)|Fault(?:ing)? offset: (?P<offset>0x[0-9a-fA-F]+)")
_FATAL = re.compile(r"fatal|error|abort|unsupported|not implemented|failed", re.IGNORECASE)
# What ggml's backtrace helper (gdb or libunwind) and the shell add around a crash: not evidence.
_NOISE = re.compile(
    r"^\s*(?:#\d+\s|\[New LWP|\[Thread |\[Inferior |0x[0-9a-f]+ in |\d+\s+\.\./|\d+\s+in \.\./|warning: |"
    r"Using host libthread_db|Attaching to|Downloading separate debug|\(gdb\)|No symbol table)"
)


def signal_name(returncode: int | None) -> str | None:
    """"SIGSEGV" for a process killed by a crash signal (return code -11, or 139 through a shell)."""
    if returncode is None:
        return None
    number = -returncode if returncode < 0 else returncode - 128 if 128 < returncode < 160 else None
    if number is None:
        return None
    try:
        sig = signal.Signals(number)
    except ValueError:
        return None
    return sig.name if sig in CRASH_SIGNALS else None


# gdb ("#3 0x... in func (...) from lib") and systemd-coredump ("#2  0x... func (lib + 0x288ff)") frames.
# gdb ("#3 0x... in func"), systemd-coredump ("#2  0x... func (lib + 0x...)") and glibc's backtrace_symbols, as
# ggml's own handler prints it without gdb ("/usr/lib/libllama.so.0(_ZN13llama_context13graph_reserve...+0x1bd) [0x7f...]").
_FRAME = re.compile(r"^.*?#\d+\s+0x[0-9a-f]+ (?:in )?(?P<func>[\w:~<>]+)|"
                    # The look-behind and the bound keep a long run of path characters from being rescanned at
                    # every position (a one-line, megabyte log).
                    # A frame without a symbol ("libggml-base.so(+0x16c5b) [0x7f...]", what a stripped build prints)
                    # is named by its library.
                    r"(?<![\w./+-])(?P<library>[\w./+-]{1,1024})\((?P<symbol>[\w.$]{0,1024})\+0x[0-9a-f]+\) \[0x[0-9a-f]+\]|"
                    # lldb ("frame #3: 0x0000000102b1d2a0 libllama-common.dylib`common_speculative_draft(...) + 1400") and
                    # macOS's crash report ("3   libggml-base.dylib   0x102a3c4f4 ggml_abort + 276").
                    r"^\s{0,8}(?:\* )?frame #\d{1,5}: 0x[0-9a-f]{1,16} [\w.+-]{1,200}`(?P<lldb>[\w:~<>]{1,1024})|"
                    r"^\d{1,5}\s{1,40}[\w.+-]{1,200}\s{1,40}0x[0-9a-f]{6,16} (?P<apple>[\w:~<>]{1,1024}) \+ \d",
                    re.MULTILINE)
_MTP_FRAME = re.compile(r"specul|mtp|nextn|draft", re.IGNORECASE)
# Where a crash is looked for, each found by a literal or a cheap pattern over the whole text first (logs
# run to hundreds of MB): a Python loop over every line would take minutes.
_ASSERT_AT = re.compile(r"GGML_ASSERT\(")
_TERMINATE_AT = re.compile(r"terminate called after throwing")
_ABORT_AT = re.compile(r"\.(?:c|cc|cpp|cu|h|hpp|m|metal):\d+: \S")
# The tail that shells' and launchers' signal lines, and the lines kept as evidence, come from.
_TAIL_CHARS = 64 * 1024
_SHELL_TAIL_LINES = 40


def _lines_at(text: str, pattern: re.Pattern[str]) -> Iterator[str]:
    """Each whole line of ``text`` in which ``pattern`` matches, in order."""
    for match in pattern.finditer(text):
        start = text.rfind("\n", 0, match.start()) + 1
        end = text.find("\n", match.end())
        yield text[start : len(text) if end < 0 else end]


def _backtrace(text: str) -> str | None:
    """The telling frame of a native backtrace (the first in the MTP path, else the first named)."""
    frames = [m["func"] or m["symbol"] or m["lldb"] or m["apple"] or m["library"].rsplit("/", 1)[-1]
              for m in _FRAME.finditer(text) if (m["func"] or m["symbol"]) != "??"]
    if len(frames) < 3:
        return None
    return next((f for f in frames if _MTP_FRAME.search(f)), frames[0])


def _meaningful(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines() if line.strip() and not _NOISE.match(line)]


def _engine_text(text: str) -> tuple[CrashKind, str, str | None] | None:
    """The engine's own crash text, most specific first: (kind, message, file:line)."""
    for line in _lines_at(text, _ASSERT_AT):
        if not _NOISE.match(line) and (m := _ASSERT.search(line)):
            return CrashKind.ASSERT, f"GGML_ASSERT({m['cond']}) failed", _short_path(m["file"], m["line"])
    for match in _TERMINATE_AT.finditer(text):
        following = _meaningful(text[match.start() : match.start() + 4096])
        if m := _TERMINATE.search(following[0]):
            what = next((w["what"] for w in map(_WHAT.match, following[1:4]) if w), None)
            return CrashKind.EXCEPTION, f"uncaught {m['type']}" + (f": {what.strip()}" if what else ""), None
    for line in _lines_at(text, re.compile("invalid vector subscript")):
        if m := _VECTOR_SUBSCRIPT.search(line):
            return CrashKind.EXCEPTION, f"std::out_of_range: {m['msg']}", None
    for needle, pattern in _GPU:
        for line in _lines_at(text, re.compile(re.escape(needle))):
            if m := pattern.search(line):
                return CrashKind.GPU_FAULT, m["msg"].strip(), None
    for line in _lines_at(text, _ABORT_AT):
        if not _NOISE.match(line) and "GGML_ASSERT" not in line and (m := _ABORT.search(line)):
            return CrashKind.ABORT, m["msg"].strip(), _short_path(m["file"], m["line"])
    return None


def _windows_where(text: str) -> str | None:
    """"ggml-cuda.dll+0x1a2b" from a Windows exception dump, None when the text has none."""
    found = {k: v for m in _WIN_MODULE.finditer(text[-_TAIL_CHARS:]) for k, v in m.groupdict().items() if v}
    return "+".join(found[k] for k in ("module", "offset") if k in found) or None


def _short_path(path: str, line: str) -> str:
    """The source path inside the engine's tree (build folders differ on every machine)."""
    parts = path.replace("\\", "/").split("/")
    if "llama.cpp" in parts[:-1]:
        parts = parts[len(parts) - parts[::-1].index("llama.cpp") :]
    return f"{'/'.join(parts[-4:])}:{line}"


def crash_of(returncode: int | None, log_text: str) -> Crash | None:
    """The crash of a process mtpinspect ran, from its return code and log; None if it did not crash."""
    return _crash(signal_name(returncode), log_text)


def crash_in_log(log_text: str, prompt_command: Callable[[str], str | None] | None = None) -> Crash | None:
    """A crash recorded in a log from elsewhere (no return code): the engine's text or the shell's. ``prompt_command``
    reads a shell prompt's command from a line (logread/voices.py): a lone signal line ("Segmentation fault (core
    dumped)") is the death of the last command a prompt ran before it."""
    tail = _meaningful(log_text[-_TAIL_CHARS:])[-_SHELL_TAIL_LINES:]
    sig = next((name for pattern, name in _SHELL_SIGNAL for line in tail if pattern.search(line)), None)
    crash = _crash(sig, log_text)
    if crash is None:
        return None
    command = next((c for c in map(died_command, reversed(tail)) if c is not None), None)
    if command is None and crash.kind is CrashKind.SIGNAL and prompt_command is not None:
        death = max(i for i, line in enumerate(tail) if any(pattern.search(line) for pattern, _ in _SHELL_SIGNAL))
        command = next((c for c in map(prompt_command, reversed(tail[:death])) if c is not None), None)
    return crash if command is None else replace(crash, command=command)


def _crash(sig: str | None, text: str) -> Crash | None:
    found = _engine_text(text)
    if found is not None and found[0] is CrashKind.ABORT and sig is None and not _FATAL.search(found[1]):
        found = None  # a file:line message alone, with no sign that the process died, is just a log line
    tail = tuple(_meaningful(text[-_TAIL_CHARS:])[-_LAST_LINES:])
    if found is None:
        frame = _backtrace(text)
        if frame is not None:
            return Crash(CrashKind.BACKTRACE, sig, f"native backtrace through {frame}", None, tail)
        return None if sig is None else Crash(CrashKind.SIGNAL, sig, _SIGNAL_MEANING[sig], _windows_where(text), tail)
    kind, message, where = found
    if sig is None and kind is not CrashKind.GPU_FAULT:
        sig = "SIGABRT"  # GGML_ASSERT, ggml_abort and std::terminate all end in abort()
    return Crash(kind, sig, message, where, tail)
