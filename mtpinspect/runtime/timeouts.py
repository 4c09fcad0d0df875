"""How long a llama-server may take to come up: the limits server.py enforces, kept apart from it so the
options that show them (sweep, drift and diagnose --start-timeout) need not import the server's machinery;
and how often its build says where it is (build.py, and the CLI's build lines)."""

from __future__ import annotations

# A starting llama-server logs, or at least reads its weights (CPU time in page faults), all the time;
# one that does neither this long is hung, however long a big model may take to load.
SILENCE_TIMEOUT_S = 60.0
# The default limit for a start (sweep and diagnose --start-timeout): a big model from a slow disk.
START_TIMEOUT_S = 600.0
# The longest a llama-server build step goes without a progress line, whatever it prints meanwhile (one large
# file compiling, cmake's lines that are not progress, pip resolving): docs/runtime.md promises one every 15 s.
BUILD_HEARTBEAT_S = 15.0
