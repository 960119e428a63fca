"""A real two-node Ray cluster on this machine for the tests and the bench: a head and a
second node started with ``ray start`` (one CPU each, a small object store, every port chosen
free so that other clusters on the machine are left alone), stopped by their PIDs."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

RAY = Path(sys.executable).with_name("ray")

OBJECT_STORE_BYTES = 80 * 1024 * 1024
"""The object store of each node (Ray's floor is 75 MiB): the runs put only shard names in it."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ports() -> list[str]:
    options = [
        "--node-manager-port",
        "--object-manager-port",
        "--dashboard-agent-listen-port",
        "--dashboard-agent-grpc-port",
        "--metrics-export-port",
        "--runtime-env-agent-port",
    ]
    out = ["--min-worker-port", "0", "--max-worker-port", "0"]  # workers: any free port
    for option in options:
        out += [option, str(_free_port())]
    return out


def cluster_env() -> dict[str, str]:
    """The environment of the nodes and of the drivers that join them: no usage reports, no
    token (the cluster listens on this machine only)."""
    return {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a ``ray start --block`` launcher (it stops the processes it started), then kill
    whatever of its process group is left."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        with suppress(subprocess.TimeoutExpired):
            process.wait(5)
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _stop_with_parent() -> None:
    """In a launcher, before it starts: SIGTERM when the process that started it dies (a test
    run killed by a timeout), so that it stops its node instead of being left running."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG


def _wait_for(address: str, launcher: subprocess.Popen[bytes], log: Path, limit_s: float) -> None:
    host, port = address.rsplit(":", 1)
    deadline = time.monotonic() + limit_s
    while True:
        try:
            socket.create_connection((host, int(port)), 1).close()
            return
        except OSError:
            if launcher.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"the Ray head did not start:\n{log.read_text()[-3000:]}"
                ) from None
            time.sleep(0.2)


def _wait_for_cpus(address: str, cpus: int, limit_s: float) -> None:
    """Wait until the cluster shows ``cpus`` CPUs (the second node has joined)."""
    script = (
        "import ray, sys, time\n"
        f"ray.init(address={address!r}, log_to_driver=False)\n"
        f"deadline = time.monotonic() + {limit_s}\n"
        f"while ray.cluster_resources().get('CPU', 0) < {cpus}:\n"
        "    if time.monotonic() > deadline: sys.exit(1)\n"
        "    time.sleep(0.2)\n"
    )
    subprocess.run(
        [sys.executable, "-c", script],
        env=cluster_env(),
        check=True,
        timeout=limit_s + 60,
        capture_output=True,
    )


@contextmanager
def local_cluster(folder: Path, nodes: int = 2, limit_s: float = 180.0) -> Iterator[str]:
    """A head and ``nodes - 1`` more nodes of one CPU each; yields the head's address.

    Args:
        folder: their logs and Ray's session files (a short path: Ray's socket names must fit).
        nodes: how many nodes.
        limit_s: how long the cluster may take to start.
    """
    folder.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    address = f"127.0.0.1:{port}"
    common = [
        "--block",
        "--num-cpus",
        "1",
        "--object-store-memory",
        str(OBJECT_STORE_BYTES),
        "--node-ip-address",
        "127.0.0.1",
        "--disable-usage-stats",
    ]
    launchers: list[subprocess.Popen[bytes]] = []
    try:
        head_log = folder / "head.log"
        launchers.append(
            subprocess.Popen(
                [
                    str(RAY),
                    "start",
                    "--head",
                    "--port",
                    str(port),
                    "--include-dashboard",
                    "false",
                    "--dashboard-port",
                    str(_free_port()),
                    "--temp-dir",
                    str(folder / "ray"),
                    *common,
                    *_ports(),
                ],
                env=cluster_env(),
                stdout=head_log.open("wb"),
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stopped by its PID
                preexec_fn=_stop_with_parent,
            )
        )
        _wait_for(address, launchers[0], head_log, limit_s)
        for k in range(1, nodes):
            launchers.append(
                subprocess.Popen(
                    [str(RAY), "start", "--address", address, *common, *_ports()],
                    env=cluster_env(),
                    stdout=(folder / f"node{k}.log").open("wb"),
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=_stop_with_parent,
                )
            )
        _wait_for_cpus(address, nodes, limit_s)
        yield address
    finally:
        for launcher in reversed(launchers):
            _stop(launcher)
        shutil.rmtree(folder / "ray", ignore_errors=True)
