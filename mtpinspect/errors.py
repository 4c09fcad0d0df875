"""Errors that mean "the input or the environment is wrong", not "mtpinspect has a bug".

The CLI renders any of these as one line on stderr and exits with status 2; anything else is a bug
and keeps its traceback.
"""

from __future__ import annotations

import reprlib
from typing import Any

# The exit status of a run stopped by Ctrl-C or a signal, as a shell reports one stopped by Ctrl-C.
INTERRUPTED = 130

_VALUE = reprlib.Repr()  # attributes, not keywords: Python 3.10 and 3.11 take none
_VALUE.maxlevel, _VALUE.maxdict, _VALUE.maxlist, _VALUE.maxstring, _VALUE.maxlong, _VALUE.maxother = 2, 4, 6, 60, 40, 60


class MtpinspectError(Exception):
    """Base class: the message names the thing and what is wrong with it, in one line."""


class SourceError(MtpinspectError):
    """A source cannot be reached or read: missing, gated or private repo, unknown revision, missing file."""


class FormatError(MtpinspectError):
    """A file is not what it claims to be: corrupt or truncated GGUF, bad safetensors header, bad JSON."""


class ServerError(MtpinspectError):
    """llama-server cannot be found, built, started, or died."""


class ServerNotBuilt(ServerError):
    """Nothing names a llama-server and the pinned one is not built yet: a state that `runtime` shows (and
    `runtime build` or the first sweep ends), not a wrong input."""


class UsageError(MtpinspectError):
    """A combination of options that cannot work."""


class OutputError(MtpinspectError):
    """A result cannot be written: read-only or full disk, a folder another sweep is using."""


def shown(value: Any) -> str:
    """A value read from a file, as a one-line message quotes it: JSON's words for null and booleans,
    and never long, whatever the file holds."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return _VALUE.repr(value)
