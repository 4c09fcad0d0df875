"""The llama-server that the commands mtpinspect prints name: the one it would run itself ($LLAMA_SERVER,
else the cached pinned build), found without running or building anything.

Apart from find.py, which runs a llama-server to learn what it is: `check` prints commands for every model
and never runs one, so it imports neither find.py nor the process machinery it needs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from mtpinspect.runtime.build_cache import cached_server

# The llama-server mtpinspect runs instead of the pinned build (find.find_server), and the commands name.
ENV_VAR = "LLAMA_SERVER"
# What printed commands call llama-server when mtpinspect has none of its own to name: the one on PATH.
SERVER_ON_PATH = "llama-server"
# The cached build a printed command names when both are built: CUDA is built only on request or on a GPU
# machine, where it is the one that runs.
_COMMAND_BACKENDS = ("cuda", "cpu")


@dataclass(frozen=True)
class CommandServer:
    """The llama-server that the commands mtpinspect prints name: the one it would run itself."""

    program: str  # $LLAMA_SERVER as set, else the cached pinned build's path, else "llama-server"
    note: str | None  # why the commands fall back to a llama-server on PATH, and how to build the pinned one

    def names(self, command: str | None) -> bool:
        """Whether a printed command runs this llama-server."""
        return command is not None and self.program in command


def server_for_commands() -> CommandServer:
    """find.find_server's rule for printed commands, without running or building anything (check stays fast):
    $LLAMA_SERVER, else the cached pinned build's path, else `llama-server` on PATH with a note."""
    env = os.environ.get(ENV_VAR)
    if env:
        return CommandServer(env, None)
    cached = next((path for path in map(cached_server, _COMMAND_BACKENDS) if path is not None), None)
    if cached is not None:
        return CommandServer(str(cached), None)
    return CommandServer(SERVER_ON_PATH, f"the commands run `{SERVER_ON_PATH}` from PATH, which may be any build: "
                         "`mtpinspect runtime build` builds the pinned one, and commands then name it "
                         f"(or set ${ENV_VAR})")
