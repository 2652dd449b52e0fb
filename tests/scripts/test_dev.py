"""``scripts/dev.py``: the supervisor of ``run`` restarts what crashes, gives up on what keeps
crashing, and stops the processes in order; and ``run`` itself, for real, on SQLite and the
embedded Redis: the demo leaderboards rank three models per task, a killed model server comes
back on its ports, and Ctrl-C ends it all cleanly."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.shared_files import REPOSITORY

SCRIPT = REPOSITORY / "scripts" / "dev.py"


@pytest.fixture(scope="module")
def dev():
    spec = importlib.util.spec_from_file_location("dynatask_dev_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def wait_until(condition, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {seconds:.0f}s waiting for {what}")


def test_a_crashing_process_is_restarted_then_given_up_on(dev, capsys, monkeypatch):
    monkeypatch.setattr(dev, "MAX_RESTARTS", 2)
    supervisor = dev.Supervisor(dict(os.environ))
    child = supervisor.start(
        dev.Child("the flaky server", "model servers", python("exit(3)"), restartable=True)
    )
    starts = []
    child.after_restart = lambda restarted: starts.append(restarted.process.pid) or True
    for _ in range(3):
        wait_until(lambda: child.process.poll() is not None, 10, "the exit")
        supervisor.watch()
    output = capsys.readouterr().out
    assert output.count("the flaky server exited with code 3; restarting it") == 2
    assert "restarting it (2 of 2)" in output
    assert len(starts) == 2
    assert child.given_up
    assert "(3 exits within 60s): giving up on it. The rest keeps running" in output
    supervisor.watch()  # a given-up process is left alone
    assert len(starts) == 2


def test_the_web_server_exiting_stops_everything(dev):
    supervisor = dev.Supervisor(dict(os.environ))
    web = supervisor.start(dev.Child("the web server", "web", python("exit(1)")))
    wait_until(lambda: web.process.poll() is not None, 10, "the exit")
    with pytest.raises(SystemExit) as stopped:
        supervisor.watch()
    assert stopped.value.code == 1


STOPPING = """
import signal, sys, time
def stop(*_):
    with open(sys.argv[1], "a") as log:
        log.write(sys.argv[2] + "\\n")
    time.sleep(0.5)  # a second SIGTERM meanwhile would be written down twice
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
open(sys.argv[1] + "." + sys.argv[2], "w").close()
while True:
    time.sleep(0.05)
"""


def test_processes_stop_web_first_and_redis_last(dev, tmp_path):
    log = tmp_path / "stops.log"
    supervisor = dev.Supervisor(dict(os.environ))
    groups = ["redis", "model servers", "cron", "workers", "web"]  # started in this order
    for group in groups:
        command = [sys.executable, "-c", STOPPING, str(log), group.replace(" ", "-")]
        supervisor.start(dev.Child(group, group, command))
    for group in groups:
        wait_until(lambda group=group: Path(f"{log}.{group.replace(' ', '-')}").exists(), 10, group)
    supervisor.stop()
    assert log.read_text().split() == ["web", "workers", "cron", "model-servers", "redis"]


def test_run_accepts_a_virtualenv_set_up_for_the_tests(dev, tmp_path, monkeypatch):
    monkeypatch.setattr(dev, "VENV", tmp_path)
    monkeypatch.setattr(dev, "PYTHON", Path(sys.executable))
    (tmp_path / ".installed-requirements-dev.txt").write_text(
        dev._digest("requirements.txt", "requirements-dev.txt")
    )
    monkeypatch.setattr(dev, "run", lambda *args, **kwargs: pytest.fail("it installed again"))
    dev.ensure_venv("requirements.txt")


def test_the_suite_runs_on_two_workers_per_cpu_within_the_free_redis_databases(dev, monkeypatch):
    monkeypatch.setattr(dev.os, "cpu_count", lambda: 2)
    env = {"REDIS_URL": "redis://127.0.0.1:6379/0"}
    assert dev.test_workers(env, []) == 4
    assert dev.test_workers({"REDIS_URL": "redis://127.0.0.1:6379/14"}, []) == 2
    assert dev.test_workers({"REDIS_URL": "redis://127.0.0.1:6379"}, ["-k", "drain"]) == 4
    assert dev.test_workers({**env, "DYNATASK_TEST_WORKERS": "3"}, []) == 3
    assert dev.test_workers({**env, "DYNATASK_TEST_WORKERS": "auto"}, []) == 4
    for off in ("0", "1"):
        assert dev.test_workers({**env, "DYNATASK_TEST_WORKERS": off}, []) == 0
    # The caller's own choice wins: no second -n.
    for args in (["-n", "2"], ["-n2"], ["--numprocesses=2"], ["-p", "no:xdist"]):
        assert dev.test_workers(env, args) == 0, args


def test_each_xdist_worker_gets_a_redis_database_of_its_own_and_its_children_keep_it():
    code = "from django.conf import settings; print(settings.REDIS_URL)"
    base = {
        k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "DYNATASK_TEST"))
    }

    def redis_url(**env) -> str:
        env = {**base, "DJANGO_SETTINGS_MODULE": "dynatask_site.settings.test", **env}
        done = subprocess.run(
            python(code), cwd=REPOSITORY, env=env, capture_output=True, text=True, check=True
        )
        return done.stdout.strip()

    assert redis_url(REDIS_URL="redis://127.0.0.1:6379/5") == "redis://127.0.0.1:6379/5"
    worker = {"REDIS_URL": "redis://127.0.0.1:6379/5", "PYTEST_XDIST_WORKER": "gw3"}
    assert redis_url(**worker) == "redis://127.0.0.1:6379/8"
    # A child process of worker gw3 inherits the worker's REDIS_URL and keeps it.
    child = {**worker, "REDIS_URL": "redis://127.0.0.1:6379/8", "DYNATASK_TEST_REDIS_WORKER": "gw3"}
    assert redis_url(**child) == "redis://127.0.0.1:6379/8"


# -- the real thing ----------
def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get_json(url: str):
    with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - loopback
        return json.loads(response.read())


def ranked_models(base: str, task: str) -> int:
    try:
        board = get_json(f"{base}tasks/{task}/leaderboard.json")
    except OSError:
        return 0
    return sum(1 for row in board["rows"] if row["dynascore"] is not None)


@pytest.mark.slow
def test_run_serves_the_demo_restarts_a_killed_model_server_and_stops_cleanly(tmp_path):
    port = free_port()
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("REDIS_URL", "DJANGO_SETTINGS_MODULE", "DATABASE_URL")
    }
    env.update(
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        DYNATASK_FORCE_EMBEDDED_REDIS="1",
        LOG_LEVEL="WARNING",
    )
    log_path = tmp_path / "run.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [sys.executable, str(SCRIPT), "run", "--port", str(port), "--no-shared-data"],
            cwd=REPOSITORY,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def output() -> str:
        return log_path.read_text(errors="replace")

    try:
        base = wait_until(
            lambda: (re.search(r"Dynatask is running at (\S+)", output()) or [None, None])[1],
            120,
            "the URL line\n" + output()[-3000:],
        )
        assert base == f"http://127.0.0.1:{port}/"
        # Every demo task's leaderboard ranks three models once their evaluations ran.
        for task in ("sentiment", "nli", "qa", "hs"):
            wait_until(lambda task=task: ranked_models(base, task) >= 3, 60, f"{task} ranked")

        # A model server is killed: the supervisor starts it again on the same ports.
        line = re.search(r"the sentiment demo model server \(pid (\d+)\): (.*)", output())
        pid, urls = int(line[1]), re.findall(r"http://\S+?/(?=,|$)", line[2])
        assert len(urls) == 3
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: "the sentiment demo model server is back" in output(), 30, "restart")
        assert "was killed by SIGKILL; restarting it (1 of 3)" in output()
        for url in urls:
            assert get_json(f"{url}health")["status"] == "ok"

        # Ctrl-C: everything stops in order, no traceback, exit code 0.
        os.kill(process.pid, signal.SIGINT)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    text = output()
    assert "[dynatask] stopping: the web server, the workers, cron" in text
    assert text.rstrip().endswith("[dynatask] stopped"), text[-2000:]
    assert "Traceback" not in text, text[text.index("Traceback") - 500 :][:4000]
    assert "ERROR" not in text.split("press Ctrl-C")[1], text[-3000:]
