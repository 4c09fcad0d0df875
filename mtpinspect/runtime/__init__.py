"""The real llama-server: find or build it, run it, and read what it reports (logs, /metrics, memory)."""

from __future__ import annotations

from mtpinspect.runtime.build import (
    PINNED_LLAMA_CPP,
    PINNED_PACKAGE,
    PINNED_VERSION,
    build_server,
    cache_root,
    cached_server,
    cmake_args,
)
from mtpinspect.runtime.find import ServerBinary, find_server
from mtpinspect.runtime.logs import DraftStats, failure_reason, parse_draft_lines, unused_nextn_tensors
from mtpinspect.runtime.memory import RssSampler, gpu_memory_used
from mtpinspect.runtime.metrics import Metrics, parse_metrics
from mtpinspect.runtime.server import Completion, LlamaServer, ServerDiedError, ServerStartError

__all__ = [
    "PINNED_LLAMA_CPP",
    "PINNED_PACKAGE",
    "PINNED_VERSION",
    "Completion",
    "DraftStats",
    "LlamaServer",
    "Metrics",
    "RssSampler",
    "ServerBinary",
    "ServerDiedError",
    "ServerStartError",
    "build_server",
    "cache_root",
    "cached_server",
    "cmake_args",
    "failure_reason",
    "find_server",
    "gpu_memory_used",
    "parse_draft_lines",
    "parse_metrics",
    "unused_nextn_tensors",
]
