"""Who said each line of a pasted text: an engine or app, a traceback, a shell, or content someone typed.

A paste mixes voices. llama-server's ``--verbose`` logs every request body, vLLM logs the prompts it
receives, a user pastes the curl command with its JSON: those lines hold the user's own words (a prompt
about "the draft failed", a chat about SMTP), and a word in them says nothing about the engine. So the
catalogue (catalogue.py) and the crash reader skip content lines, and only what an engine, an app, a
traceback or a shell printed can establish a cause. Content is recognised by its shape, per line:

- a JSON member of a request or response body (``"messages":``, ``"content":``, ``"prompt":`` ...),
  as llama-server's ``log_server_r`` prints them, a ``curl -d`` carries them or a saved body holds them;
- the engines' own request lines: vLLM's ``Received request ...: prompt:``, SGLang's ``GenerateReqInput(``,
  llama-server's ``request:`` / ``response:`` bodies;
- chat-template text: the turn markers of the common templates (``<|im_start|>``, ``[INST]``, ...).

Another program's error line speaks of the files, paths, archives, branches and packages it names (tar's missing
``mtp-phone-backup.tar.gz``, git's pathspec ``'draft/mtp-export'``, pip's requirement ``speculative-decoding``): :func:`without_operands` blanks those names, so a
word inside one is read as a name, not as the program's words about speculative decoding. "MTP" on a line of the
Media Transfer Protocol (libmtp, go-mtpfs, gvfsd-mtp, ...: :func:`transfer_lines`) is a phone's protocol:
:func:`without_transfer` blanks it there.

Log lines a copy joined into one (text recognised from a screenshot) are split where an engine's logger prefix starts
again (:func:`merged_lines`): each piece is read as the line it was.

Each test is a literal key found with str.find, then one linear pattern on that line alone: the cost is one
pass per key over the text, whatever its size.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

# Literals one of which a content line holds; the pattern then decides on that line.
_CONTENT_KEYS = ('"messages"', '"content"', '"prompt"', '"input"', '"query"', '"instruction"', '"text"',
                 "request:", "response:", "prompt:", "GenerateReqInput(", "<|im_start|>", "<|user|>", "<|assistant|>",
                 "[INST]", "<start_of_turn>", "<|start_header_id|>", "<｜User｜>", "<｜Assistant｜>")
_CONTENT = re.compile(
    r"\"(?:messages|content|prompt|input|query|instruction|text)\"\s*:"
    r"|\blog_server_r\w*:\s+(?:request|response):\s*[{\[]"
    r"|\b(?:request|response):\s*\{"
    r"|Received request [\w-]+: prompt:"
    r"|\bprompt: ['\"\[]"
    r"|GenerateReqInput\("
    r"|<\|im_start\|>|<\|user\|>|<\|assistant\|>|\[INST\]|<start_of_turn>|<\|start_header_id\|>|<｜User｜>|<｜Assistant｜>")
MAX_LINE = 16384  # characters kept of a line (a weight list runs to kilobytes; a line may claim to be the whole file)


def lines_with(text: str, key: str) -> Iterator[tuple[int, str]]:
    """(start, line) of each line holding ``key``, in order; the line is cut at MAX_LINE characters. One find per
    line that holds the key: linear in the text."""
    at = text.find(key)
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        yield start, text[start : min(end, start + MAX_LINE)]
        at = text.find(key, end)


def content_lines(text: str) -> frozenset[int]:
    """The start offsets of the lines that are content (request bodies, prompts, chat text), not output."""
    found: set[int] = set()
    for key in _CONTENT_KEYS:
        for start, line in lines_with(text, key):
            if start not in found and _CONTENT.search(line):
                found.add(start)
    return frozenset(found)


def _rewrite_lines(text: str, starts: frozenset[int], rewrite: Callable[[str], str]) -> str:
    """``text`` with each line starting at one of ``starts`` replaced by ``rewrite(line)`` (line numbers kept)."""
    if not starts:
        return text
    parts: list[str] = []
    at = 0
    for start in sorted(starts):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        parts += [text[at:start], rewrite(text[start:end])]
        at = end
    parts.append(text[at:])
    return "".join(parts)


def without_content(text: str) -> str:
    """``text`` with its content lines emptied (line numbers kept): what the engines and the shell said."""
    return _rewrite_lines(text, content_lines(text), lambda line: "")


# A shell prompt and the command after it: "$ cmd", "user@host:~$ cmd", "PS C:\\> cmd", "C:\\> cmd", "# cmd".
_SHELL = re.compile(r"^\s*(?:[\w.-]+@[\w.-]+:\S*[$#]|\$|PS [A-Za-z]:\\[^>\n]{0,200}>|[A-Za-z]:\\[^>\n]{0,200}>|>>>?)\s+(?P<command>\S.*)$")
_ENGINES = re.compile(r"llama[-_](?:server|cli|bench|speculative)|\bmain(?:\.exe)?\b|\bvllm\b|\bsglang\b|\bollama\b|"
                      r"\blms\b|LM ?Studio|llama_cpp|koboldcpp|ik_llama|mtp-bench|docker|podman|\bpython3?\s+-m\s+(?:vllm|sglang)")


def prompt_command(line: str) -> str | None:
    """The command a shell prompt line runs ("user@host:~$ ./llama-server -m ..."), None for any other line."""
    found = _SHELL.match(line[:MAX_LINE])
    return found["command"] if found is not None else None


# A command that runs a program of its own (a compiled binary: "./mapgen --tiles 4", "bin/tool"), not an interpreter, a
# script, a build tool or an engine, any of which may start an engine (llama-cpp-python under "python app.py", llama-server
# under "./run.sh").
_HOSTS = re.compile(r"^(?:sudo\s+)?(?:\S*[/\\])?(?:python[\d.]*|py|uv|pip|node|npm|npx|bun|deno|ruby|perl|java|bash|sh|zsh|fish|"
                    r"env|time|nohup|make|cmake|ninja|cargo|go|gdb|lldb|valgrind|\S+\.(?:sh|py|bat|cmd|ps1|exe|js))(?:\s|$)",
                    re.IGNORECASE)


def own_program(command: str) -> str | None:
    """The program a shell command runs when it is a binary of its own that no engine is (see above); None for an
    engine's, an app's, a container's, an interpreter's, a script's or a build tool's command."""
    program = command.split(maxsplit=1)[0] if command.strip() else ""
    if not program or engine_command(command) or _HOSTS.match(command.strip()) or _ENGINE_PROGRAMS.search(program):
        return None
    return program


def engine_command(command: str) -> bool:
    """Whether a shell command runs an engine, an app or a container (else the program is someone else's)."""
    return _ENGINES.search(command) is not None


# A C library's failed assert names the program that died, as the shell's death line does: glibc's __assert_fail
# prints "PROG: FILE:LINE: FUNC: Assertion `COND' failed." (assert/assert.c, PROG its short name). The engines' own
# binaries (llama-server, llama-cli, the old main/server, test-*, Python for a native extension of vLLM's or SGLang's)
# and their source trees (ggml, llama.cpp's src/llama-*.cpp, csrc/) are the engine's; any other is another program's,
# whatever words its condition, function or file use (a graph tool's ``node.nextn != NULL``).
_C_ASSERT = re.compile(r"^(?P<program>[\w.+-]{1,64}): (?P<file>[^\s:]{1,400}):\d{1,7}: (?:[^\n]{0,400}?: )?"
                       r"Assertion [`'][^\n]{0,2000}' failed\.")
# The programs that are an engine or an app that runs one, by the names their binaries, services and loggers take (the
# old main/server and test-* binaries are llama.cpp's; Python, for a native extension of vLLM's or SGLang's).
_ENGINE_PROGRAMS = re.compile(r"(?i)llama|ggml|gguf|vllm|sglang|ollama|lm-?studio|\blms\b|kobold|lemonade|localai|mlx|exllama|"
                              r"tabby|aphrodite|text-generation|\btgi\b|mtp-bench|mtpinspect|python|^(?:main|server)$|^test-")
_ENGINE_SOURCE = re.compile(r"ggml|llama|gguf|vllm|sglang|kobold|ollama|csrc|[/\\]torch[/\\]|aten|c10", re.IGNORECASE)


# The other C libraries' asserts name only the file: musl's "Assertion failed: COND (FILE: FUNC: LINE)"
# (src/exit/assert.c), MSVC's "Assertion failed: COND, file FILE, line LINE" (the CRT's _wassert).
_FILE_ASSERT = re.compile(r"^Assertion failed: [^\n]{1,2000}?(?: \((?P<musl>[^\s:()]{1,400}): [^\n()]{1,400}: \d{1,7}\)|"
                          r", file (?P<msvc>[^\n]{1,400}), line \d{1,7})$")
# Native frames that name their source file: gdb's "#1  0x... in FN (ARGS) at FILE:LINE", the sanitizers' "#0 0x... in
# FN FILE:LINE:COL" (compiler-rt's symbolizer), valgrind's "==PID==    by 0x...: FN (FILE:LINE)", Go's panic frames'
# "\tFILE.go:LINE +0x..", Rust's "at ./src/FILE.rs:LINE:COL". An engine's frames name its tree, library or functions.
_SOURCE_FRAME = re.compile(r"^\s*#\d{1,4}\s+(?:0x[0-9a-fA-F]{1,16} in )?(?P<gdb>\S{1,400}) \([^\n]{0,2000}\) at (?P<gdbfile>\S{1,400}):\d{1,7}$|"
                           r"^\s*#\d{1,4} 0x[0-9a-fA-F]{1,16} in (?P<san>\S{1,400}) (?P<sanfile>[^\s()]{1,400}?):\d{1,7}(?::\d{1,7})?$|"
                           r"^==\d{1,9}==\s+(?:at|by) 0x[0-9A-Fa-f]{1,16}: (?P<vg>\S{1,400}) \((?P<vgfile>[^\s():]{1,400}):\d{1,7}\)$|"
                           r"^\t(?P<gofile>\S{1,400}\.go):\d{1,7}(?: \+0x[0-9a-f]{1,8})?$")
_ENGINE_FRAME = re.compile(r"ggml|llama|gguf|vllm|sglang|kobold|ollama|csrc|torch|aten|c10|\bcommon_|cuda|cublas|hip|vulkan|"
                           r"metal|triton|nccl|python", re.IGNORECASE)


def assert_file(line: str) -> str | None:
    """The source file a musl or MSVC assert line names when it is no engine's (see above); None otherwise."""
    found = _FILE_ASSERT.match(line.strip()[:MAX_LINE])
    file = (found["musl"] or found["msvc"]) if found is not None else None
    return file if file is not None and not engine_source(file) else None


def foreign_frames(text: str) -> str | None:
    """The first source file of a native backtrace none of whose frames is an engine's (its tree, libraries or
    functions: ggml, llama.cpp, a GPU runtime, PyTorch, Python): another program's crash, as its frames show; None
    when the text has no such frames or one of them is an engine's. One pass over the lines holding a frame's mark."""
    first = None
    for key in ("#", "==", "\t"):
        for _, line in lines_with(text, key):
            found = _SOURCE_FRAME.match(line)
            if found is None:
                if key == "#" and _NATIVE_FRAME.match(line) and _ENGINE_FRAME.search(line):
                    return None  # a frame without its source (a library's, a stripped binary's) that is an engine's
                continue
            if _ENGINE_FRAME.search(line):
                return None
            first = first or next(v for k, v in found.groupdict().items() if k.endswith("file") and v)
    return first


_NATIVE_FRAME = re.compile(r"^\s*#\d{1,4}\s+0x[0-9a-fA-F]{1,16}\b")


def engine_source(path: str) -> bool:
    """Whether a source path is in an engine's tree (ggml, llama.cpp, vLLM's or SGLang's csrc, PyTorch's)."""
    return _ENGINE_SOURCE.search(path) is not None


def assert_program(line: str) -> str | None:
    """The program a C library's assert line says died (see above) when neither it nor the source file it names is an
    engine's; None for an engine's assert and for any other line."""
    found = _C_ASSERT.match(line.strip()[:MAX_LINE])
    if found is None or _ENGINE_PROGRAMS.search(found["program"]) or engine_source(found["file"]):
        return None
    return found["program"]


# -- Lines merged into one -----------------------------------------------------------------------------------------
# A copy that lost its line ends (text recognised from a screenshot, a chat window, a web form) joins an engine's log
# lines into one: each keeps its logger prefix, vLLM's "(Worker_TP0 pid=7) ERROR 04-13 06:24:07 [file.py:932] " (the
# process tag of vllm/v1/executor/multiproc_executor.py, the logger format of vllm/logger.py), SGLang's "[2025-10-22
# 10:27:57 TP0] " (python/sglang/srt/utils: the rank-tagged log format). A line that starts with such a prefix and holds
# another after some text is several lines; each piece is read as the line it was (catalogue.scan), under the line's
# number. A prefix right after another (the process tag, then the logger's) is one.
_LOG_PREFIX = re.compile(r"\([^()\n]{1,60}? pid=\d{1,8}\)(?=\s|$)|"
                         r"(?<![\w(])(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\s{1,4}\d\d-\d\d\s\d\d:\d\d:\d\d(?:\.\d{1,6})?\s{1,4}"
                         r"\[?[\w./-]{1,120}:\d{1,6}[\])]|"
                         r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[^\]\n]{0,60}\]")
_PREFIX_KEYS = (" pid=", "[20", "DEBUG ", "INFO ", "WARNING ", "ERROR ", "CRITICAL ")


def merged_lines(text: str) -> dict[int, tuple[int, ...]]:
    """The lines that are several of an engine's log lines merged (see above): each one's start offset, with the offsets
    in it where its pieces start (the first 0). One finditer per line holding a prefix's key: linear in the text."""
    merged: dict[int, tuple[int, ...]] = {}
    seen: set[int] = set()
    for key in _PREFIX_KEYS:
        for start, line in lines_with(text, key):
            if start in seen:
                continue
            seen.add(start)
            pieces: list[int] = []
            end = 0
            for found in _LOG_PREFIX.finditer(line):
                if not pieces and line[: found.start()].strip():
                    break  # the line does not start with a prefix: one line that quotes one
                if not pieces or line[end : found.start()].strip():
                    pieces.append(found.start() if pieces else 0)
                end = found.end()
            if len(pieces) > 1:
                merged[start] = tuple(pieces)
    return merged


def line_pieces(start: int, line: str, merged: dict[int, tuple[int, ...]]) -> Iterator[tuple[int, str]]:
    """(start, text) of each line a text's line at ``start`` holds: itself, or the pieces of a merged one."""
    at = merged.get(start)
    if at is None:
        yield start, line
        return
    for begin, end in zip(at, (*at[1:], len(line))):
        yield start + begin, line[begin:end]


# -- Another program's tag -----------------------------------------------------------------------------------------
# A line may name the program that printed it: syslog's and journald's "host prog[pid]: " (also without the time and
# host: "mailsync[2211]: "), Python logging's default "LEVEL:logger.name:". A mail client's "mailsync[2211]: ERROR failed
# to load draft model for account 2" is that program's own sense of "draft", whatever its words: a line tagged by a
# program that is no engine or app says nothing of speculative decoding. A tag that names an interpreter, a container
# runtime or a service manager's child (python3, node, docker) says nothing of who runs in it.
_PROGRAM_TAG = re.compile(r"^(?:>\s*)?(?:(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT[\d:.]{8,15}(?:Z|[+-]\d\d:?\d\d)?)"
                          r" [\w.-]{1,64} )?(?P<program>[A-Za-z][\w.@-]{0,80})\[\d{1,9}\]:\s"
                          r"|^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):(?P<logger>[A-Za-z_][\w.]{0,120}):")
# A wrapper script's tag ("start.sh[812]:", "entrypoint[812]:", a service's "serve[812]:") says no more: systemd tags a
# unit's lines by the program it started, which may be the script that starts the engine.
_NOBODY = re.compile(r"(?i)^(?:python[\d.]*|pypy[\d.]*|node|nodejs|java|ruby|perl|bash|sh|zsh|env|sudo|uvicorn|gunicorn|"
                     r"docker\w*|dockerd|containerd\S*|podman|conmon|runc|crun|kubelet|tini|dumb-init|supervisord|root|"
                     r"[\w.-]+\.sh|entrypoint\w*|start\w*|run\w*|serve\w*|launch\w*|main|app)$")


def program_tag(line: str) -> str | None:
    """The program (or Python logger) a line's own tag names, None when the line has no such tag (see above)."""
    found = _PROGRAM_TAG.match(line.strip()[:MAX_LINE])
    if found is None:
        return None
    return found["program"] or found["logger"]


def anothers_line(line: str) -> bool:
    """Whether a line's own tag names a program that is no engine or app (neither an interpreter or container runtime,
    which say nothing of what runs in them): that program's words, not an engine's."""
    tag = program_tag(line)
    return tag is not None and not _ENGINE_PROGRAMS.search(tag) and not _NOBODY.match(tag) and \
        not _NOBODY.match(tag.split(".")[0])


def pipe_row(line: str) -> bool:
    """Whether a line is a row of a table drawn with pipes ("| TP4 DP2 MTP | X (unable to launch server) |"): a poster's
    or a bench script's summary, whose words are a label and a note, never an engine's or app's own message."""
    inner = line.strip()
    return inner.startswith("|") and inner.count("|") >= 3


# -- Other programs' operands --------------------------------------------------------------------------------------
# A shell tool's, git's or an OS error's line names the file, path, archive or branch it acted on: `tar (child):
# mtp-phone-backup-2026-11.tar.gz: Cannot open`, `error: pathspec 'draft/mtp-export' did not match`, Python's
# `[Errno 2] No such file or directory: '/data/mtp/x.json'`, rsync's `link_stat "/home/u/mtp-backup" failed`. A word
# inside such a name (a phone backup over Media Transfer Protocol, a branch of draft posts) is the user's name for
# their data, not the program saying anything about speculative decoding. A model file (.gguf, .safetensors) stays: an
# mtp- GGUF is the head itself; so does an engine's code file (.py, .cpp) outside an OS error: its path says where.
_TOKEN = re.compile(r"\S+")
_EDGES = "'\"`()[]{}<>,;:=|"
# The strerror texts and the operand errors of coreutils, tar, rsync, scp, unzip, git and Python's OSError.
_OS_ERROR = re.compile(r"(?i)No such file|cannot (?:stat|access|open|find|remove|create|read|move|copy|overwrite)|"
                       r"Permission denied|Not a directory|Is a directory|File exists|Directory not empty|"
                       r"(?:did|does) not match any|unknown revision|not a valid (?:ref|object|branch)|couldn't find remote ref|"
                       r"\[Errno \d{1,4}\]|\blink_stat\b|\bchange_dir\b|not found in archive|End-of-central-directory")
# A branch, ref or pathspec named after git's words (unquoted: "couldn't find remote ref mtp-draft").
_REF_OPERAND = re.compile(r"\b(?:ref|refspec|branch|pathspec|revision|tag)\s+(?P<name>[^\s'\"`]{1,200})")
# A package a package manager names after its own words (pip: "satisfies the requirement X", "No matching distribution
# found for X", "Collecting X"; apt: "Unable to locate package X", "Package X is not available", "Package 'X' has no
# installation candidate"; cargo: "no matching package named `X`"; npm: "'X@*' is not in this registry"): a
# package's name ("speculative-decoding", "libspeculative-draft-dev") is the user's search, not the manager's words.
_PACKAGE_OPERAND = re.compile(r"(?:\bsatisfies the requirement|\bNo matching distribution found for|^Collecting|"
                              r"\bUnable to locate package|\bPackage|\bno matching package named|\bpackage named)\s+"
                              r"(?P<name>[`'\"]?[A-Za-z0-9][\w.+\-\[\],<>=!~*@/]{0,200})|"
                              r"(?P<npm>'[\w@./-]{1,200}@[^'\s]{0,40}') is not in (?:this|the npm) registry")
_MODEL_FILE = re.compile(r"(?i)\.(?:gguf|safetensors)(?::\d+)?$")
_CODE_FILE = re.compile(r"(?i)\.(?:py|pyx|cpp|cc|cxx|c|h|hpp|cu|cuh|rs|go|js|ts)(?::\d+)*$")
_FILE_NAME = re.compile(r"^[\w.+~@%-]{1,200}\.(?:[A-Za-z][A-Za-z0-9]{0,5})$")
_DOTTED = re.compile(r"^[A-Za-z_]\w{0,100}(?:\.[A-Za-z_]\w{0,100}){1,20}$")
_ROOTED = re.compile(r"^(?:[/~]|\.{1,2}[/\\]|[A-Za-z]:[/\\]|\\\\)")


def _operand(token: str, quoted: bool, os_error: bool) -> bool:
    """Is this token (its quotes and punctuation stripped) a name of a file, path or archive, not words?"""
    if not token or _MODEL_FILE.search(token):
        return False
    if _CODE_FILE.search(token) and not os_error:
        return False
    if "/" in token or "\\" in token:
        # Rooted, deep, quoted or named as an operand: a path. One slash between two words ("MTP/EAGLE") is prose.
        return bool(_ROOTED.match(token) or token.count("/") + token.count("\\") > 1 or quoted or os_error
                    or _FILE_NAME.match(token.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]))
    if _DOTTED.match(token) and not os_error:  # a module path ('vllm.v1.spec_decode.eagle'), not a file, but in an OS error
        return False
    return bool(_FILE_NAME.match(token)) or (quoted and os_error)


def without_operands(line: str) -> str:
    """``line`` with the files, paths, archives and branches it names blanked (same length; see above): what the
    program said about them, not their names. Linear: one pass over the line's tokens."""
    os_error = _OS_ERROR.search(line) is not None
    spans: list[tuple[int, int]] = []
    for found in _TOKEN.finditer(line):
        raw = found.group(0)
        token = raw.strip(_EDGES).rstrip(".")  # a sentence's full stop after a name
        quoted = raw[:1] in "'\"`" or raw[:2] in ("(\"", "('", "[\"", "['")
        if _operand(token, quoted, os_error):
            spans.append(found.span())
    if os_error:
        spans += [m.span("name") for m in _REF_OPERAND.finditer(line)]
    spans += [m.span("name") if m["name"] else m.span("npm") for m in _PACKAGE_OPERAND.finditer(line)]
    if not spans:
        return line
    chars = list(line)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)



# -- The Media Transfer Protocol -----------------------------------------------------------------------------------
# "MTP" is also the Media Transfer Protocol of phones and cameras over USB: libmtp ("LIBMTP PANIC: ...", libmtp.c's
# LIBMTP_ERROR and its "Error %d: %s" error stack), its mtp-detect / mtp-files tools, udev's mtp-probe, the FUSE mounts
# go-mtpfs ("detect failed: %v" over mtp/detect.go's "no MTP devices found"), jmtpfs and simple-mtpfs, GNOME's gvfsd-mtp
# (gvfsbackendmtp.c: "Unable to open MTP device “%s”", mtp://host URIs, gvfs/mtp:host= mount points), KDE's kio-mtp
# worker, android-file-transfer-linux's aft-mtp-cli. A line such a program printed, or whose words are the protocol's
# (an MTP device, MTP storage, PTP/MTP, "MTP+ADB", a USB VID; never a bare "(MTP)" or "USB", which drafting results
# and hosts' logs hold too), or what a shell shows under one of their commands, uses
# "MTP" for a phone, never for a drafter: :func:`without_transfer` blanks the word there (voices, not the cause rules).
_TRANSFER = re.compile(
    r"(?i:\blibmtp|\b(?:go-|j|simple-)?mtpfs\b|\bgvfsd(?:-mtp)?\b|\bkio[_-]?mtp\b|\bkio\.workers\.mtp\b|"
    r"\bmtp-(?:detect|probe|files|folders|tracks|connect|getfile|sendfile|sendtr|albums|hotplug|filetree|newfolder|"
    r"delfile|emptyfolders|format|reset|trexist|playlists|getplaylist)\b|\baft-mtp-\w+|android[- ]file[- ]transfer|"
    r"\bmtp://|\bmtp:host=|media transfer protocol)|"
    r"\bMTP[ _-]?(?:[Dd]evices?|[Ss]torages?|[Oo]bjects?|[Rr]esponder|[Ii]nitiator|[Ee]xtensions?)\b|"
    r"\bPTP ?/ ?MTP\b|\bMTP ?/ ?PTP\b|\bMTP ?\+ ?ADB\b|\bADB ?\+ ?MTP\b|\bVID=|\bPTP_[A-Z]|\bidVendor\b")
# A shell command running one of those programs (or naming an mtp:// location): the lines under it are its output.
_TRANSFER_COMMAND = re.compile(r"(?i)^(?:sudo\s+(?:-\S+\s+)*)?(?:\S*/)?(?:(?:go-|j|simple-)?mtpfs|mtp-[\w-]+|aft-mtp-[\w-]+)(?:\s|$)"
                               r"|\bmtp://")
_TRANSFER_KEYS = ("mtp", "MTP", "Mtp")
_MTP_WORD = re.compile(r"(?i)mtp")


def transfer_lines(text: str) -> frozenset[int]:
    """The start offsets of the lines where "MTP" is the Media Transfer Protocol (see above): a line holding MTP in
    the protocol's words or a protocol program's voice, and every line a shell shows under a protocol program's
    command, up to the next prompt. Linear: one find pass per key, and each line under a command is walked once."""
    found: set[int] = set()
    for key in _TRANSFER_KEYS:
        walked = 0  # the output of a protocol command is walked up to here (once per key: linear)
        for start, line in lines_with(text, key):
            if _TRANSFER.search(line):
                found.add(start)
            shell = _SHELL.match(line)
            if shell is None or start < walked or not _TRANSFER_COMMAND.search(shell["command"]) \
                    or engine_command(shell["command"]):
                continue
            found.add(start)
            at = text.find("\n", start)
            while at >= 0:
                end = text.find("\n", at + 1)
                end = len(text) if end < 0 else end
                if _SHELL.match(text[at + 1 : min(end, at + 1 + MAX_LINE)]):
                    break
                found.add(at + 1)
                at = end if end < len(text) else -1
            walked = len(text) if at < 0 else at
    return frozenset(found)


def without_transfer(line: str) -> str:
    """``line`` with each "MTP" (any case, inside a name too: LIBMTP, go-mtpfs) blanked, same length: on a line of the
    Media Transfer Protocol (:func:`transfer_lines`) the word names a phone's protocol, not a drafter."""
    return _MTP_WORD.sub("   ", line)


def without_transfer_words(text: str) -> str:
    """``text`` with "MTP" blanked on each line of the Media Transfer Protocol (:func:`transfer_lines`), same length:
    what a crash or failure reader may take as a tie to MTP."""
    return _rewrite_lines(text, transfer_lines(text), without_transfer)
