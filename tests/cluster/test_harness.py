"""bench/cluster.py leaves nothing behind: not when it is interrupted, not when it is killed
(the next start removes what a dead run left). Cheap: namespaces and a sleeping process,
no cluster."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from bench.cluster import PREFIX, ROOT, cleanup_leftovers, unavailable_reason

# One cluster for all: pytest-xdist runs the cluster tests on one worker (--dist loadgroup).
pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("cluster")]

NETWORK_ONLY = """
import sys, tempfile, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from bench.cluster import Cluster, _subnet
cluster = Cluster()
cluster._install_stop_handlers()
cluster.workdir = Path(tempfile.mkdtemp(prefix=f"dtcl-{cluster.pid}-"))
(cluster.workdir / "logs").mkdir()
cluster.octet = _subnet()
cluster._network()
sleeper = cluster.spawn("worker1", "sleeper", ["sleep", "600"])
print(sleeper.pid, flush=True)
time.sleep(600)
"""


@pytest.fixture(autouse=True)
def namespaces_needed():
    reason = unavailable_reason()
    if reason:
        pytest.skip(f"no cluster: {reason}")


def ours(pid: int) -> list[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in listed.splitlines() if f"{PREFIX}-{pid}-" in line]


def links_of(pid: int) -> list[str]:
    listed = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    return [line for line in listed.splitlines() if f"dc{pid}x" in line]


def start_network_only() -> tuple[subprocess.Popen, int]:
    process = subprocess.Popen(
        [sys.executable, "-c", NETWORK_ONLY, str(ROOT)], stdout=subprocess.PIPE, text=True
    )
    sleeper = int(process.stdout.readline())
    assert len(ours(process.pid)) == 8 and psutil.pid_exists(sleeper)
    return process, sleeper


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_run_removes_its_namespaces_links_and_processes(number):
    process, sleeper = start_network_only()
    process.send_signal(number)
    process.wait(timeout=30)
    assert ours(process.pid) == [] and links_of(process.pid) == []
    assert not psutil.pid_exists(sleeper) or psutil.Process(sleeper).status() == "zombie"


def test_a_killed_run_is_cleaned_up_by_the_next_start():
    process, sleeper = start_network_only()
    os.kill(process.pid, signal.SIGKILL)  # no handler runs
    process.wait(timeout=10)
    assert len(ours(process.pid)) == 8 and psutil.pid_exists(sleeper)
    removed = cleanup_leftovers()
    assert any(f"{PREFIX}-{process.pid}-" in name for name in removed)
    assert ours(process.pid) == [] and links_of(process.pid) == []
    deadline = time.monotonic() + 5
    while psutil.pid_exists(sleeper) and time.monotonic() < deadline:
        if psutil.Process(sleeper).status() == psutil.STATUS_ZOMBIE:
            break
        time.sleep(0.05)
    assert not psutil.pid_exists(sleeper) or psutil.Process(sleeper).status() == "zombie"
