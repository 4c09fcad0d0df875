"""The mtpinspect CLI as a user runs it, in a child process: its exit, its stderr, its own peak memory,
the llama-servers it starts, and file systems that are full or read-only.

Full and read-only folders are real tmpfs mounts in a private mount namespace (`unshare`; a user
namespace when not root), so the errors are the kernel's own ENOSPC and EROFS.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import cli_child
import psutil
import pytest

CLI = [sys.executable, "-m", "mtpinspect"]


def run_cli(*args: str, timeout: float = 120, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, **kw)  # type: ignore[call-overload]


def run_cli_measured(*args: str, timeout: float = 60) -> cli_child.CliRun:
    """run_cli, with the child's own peak RSS (``peak_mb``); its address space is capped at 2 GiB."""
    return cli_child.run_cli(*args, timeout=timeout, address_space=2 << 30)


def error_line(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    """The one error line a failure must end with (exit 2, no traceback): progress lines may precede it."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1, proc.stderr
    for needle in needles:
        assert needle.lower() in errors[0].lower(), errors[0]
    return errors[0]


def llama_servers(pid: int) -> list[psutil.Process]:
    """The serving llama-servers under a process (not a `llama-server --version` probe)."""
    servers = []
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    for child in children:
        try:
            if "llama-server" in child.name() and "--port" in child.cmdline():
                servers.append(child)
        except psutil.Error:
            continue  # gone between listing and reading
    return servers


def wait_for_server(proc: subprocess.Popen[str], timeout: float = 60) -> psutil.Process:
    """The first llama-server the CLI process starts (the test fails if none comes up in time)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        servers = llama_servers(proc.pid)
        if servers:
            return servers[0]
        assert proc.poll() is None, f"the CLI exited ({proc.returncode}) before starting llama-server"
        time.sleep(0.02)
    raise AssertionError("no llama-server started")


def gone(process: psutil.Process, timeout: float = 10) -> bool:
    """Has the process ended (a zombie waiting for a reaper counts as ended)?"""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def reap(process: psutil.Process) -> None:
    """Kill a process the code under test left behind, so that a failing test leaves nothing running."""
    try:
        process.kill()
    except psutil.NoSuchProcess:
        pass


def stop_cli(proc: subprocess.Popen[str]) -> None:
    """End a CLI process a test started, and its llama-servers with it, whatever the code under test does."""
    if proc.poll() is None:
        for server in llama_servers(proc.pid):
            reap(server)
        proc.kill()
        proc.wait()


def mount_namespace() -> list[str]:
    """The command prefix that runs a shell script in a private mount namespace, or skip the test."""
    prefix = ["unshare", "--mount"] if os.geteuid() == 0 else ["unshare", "--user", "--map-root-user", "--mount"]
    try:
        ok = subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    if not ok:
        pytest.skip("needs a private mount namespace (unshare) for a real full or read-only file system")
    return prefix


def in_mounts(script: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``script`` (sh) in a private mount namespace; ``$CLI`` runs mtpinspect there."""
    full_env = {**os.environ, **env, "CLI": " ".join(CLI)}
    return subprocess.run([*mount_namespace(), "sh", "-c", script], capture_output=True, text=True, timeout=timeout,
                          env=full_env)
