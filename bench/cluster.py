"""A Dynatask cluster on one machine: each host a Linux network namespace on one bridge.

    sudo .venv/bin/python bench/cluster.py            # start it, print its addresses, wait
    sudo .venv/bin/python bench/cluster.py --cleanup  # remove what killed runs left behind

Hosts (``Cluster.hosts``), each a namespace with an address in 198.18.<n>.0/24 (the range
set aside for benchmark networks, RFC 2544) and a host name of its own (a UTS namespace):

    db       PostgreSQL 15, its own data directory       .10
    redis    redis-server, no persistence               .11
    model    the demo model with a fixed added latency   .12  (``models_hub.demo.delayed``)
    lb       HAProxy with deploy/haproxy.cfg             .20
    web1/2   gunicorn, production settings               .21, .22
    worker1/2  the live, eval and health workers, run_cron  .31, .32

The bridge has .1 in the root namespace, where this process (the tests' client) runs. There is
no default route in any namespace: hosts reach each other and the bridge, nothing else.

Every process runs in a namespace's session of its own; ``Cluster.stop()`` (also at exit, on
SIGINT/SIGTERM/SIGHUP) kills every process of every namespace (``ip netns pids``), deletes the
namespaces, the bridge and the temporary folder. Names carry this process's pid
(``dtcl-<pid>-<host>``): ``cleanup_leftovers()``, run at every start, removes the namespaces,
links and folders of runs whose process is gone.

It needs root (CI has it). ``unavailable_reason()`` says why a cluster cannot be built here.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
PREFIX = "dtcl"
PG_BIN = Path(os.environ.get("DYNATASK_PG_BIN", "/usr/lib/postgresql/15/bin"))
HAPROXY_CONFIG = ROOT / "deploy" / "haproxy.cfg"
WEB_PORT = 8000
MODEL_PORT = 8080
SLOW_MODEL_PORT = 8081
LB_PORT = 80
# What stays between runs: the collected static files and a dump of the migrated schema, each
# under the digest of what it was made from.
CACHE = ROOT / "var" / "cluster-cache"
ADDRESSES = {
    "db": 10,
    "redis": 11,
    "model": 12,
    "lb": 20,
    "web1": 21,
    "web2": 22,
    "worker1": 31,
    "worker2": 32,
}
WEB_HOSTS = ("web1", "web2")
WORKER_HOSTS = ("worker1", "worker2")
# The cluster's periodic jobs and leases, shorter than production's so that the tests see
# several periods and a dead host's work comes back within seconds.
FAST_TIMINGS = {
    "ANNOTATION_COUNTER_FLUSH_SECONDS": "2",
    "ANNOTATION_LIVE_WATCHDOG_SECONDS": "2",
    "MODELS_HUB_HEALTH_INTERVAL": "5",
    "EVAL_RECOVER_SECONDS": "2",
    "EVAL_JOB_LEASE_SECONDS": "6",
}


class _Background(threading.Thread):
    """``function()`` on a thread; ``join()`` raises what it raised."""

    def __init__(self, function) -> None:
        super().__init__(daemon=True)
        self.function = function
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self.function()
        except BaseException as error:  # noqa: BLE001 - handed to join()
            self.error = error

    def join(self, timeout: float | None = None) -> None:
        super().join(timeout)
        if self.error is not None:
            raise self.error


def _digest(paths) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _migration_files() -> list[Path]:
    return [*ROOT.glob("*/migrations/*.py"), ROOT / "requirements.txt"]


def _static_files() -> list[Path]:
    files = [path for path in (ROOT / "static").rglob("*") if path.is_file()]
    return [*files, ROOT / "requirements.txt", ROOT / "dynatask_site" / "settings" / "prod.py"]


def say(message: str) -> None:
    print(f"[cluster] {message}", file=sys.stderr, flush=True)


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def unavailable_reason() -> str | None:
    """Why no cluster can be built on this machine (None: it can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "unshare", "runuser", "haproxy", "redis-server"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if not (PG_BIN / "postgres").exists():
        return f"PostgreSQL binaries are missing ({PG_BIN})"
    probe = f"{PREFIX}-{os.getpid()}-probe"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"ip netns add fails: {made.stderr.strip()[:120]}"
    _ip("netns", "del", probe, check=False)
    return None


def _namespace_pids(namespace: str) -> list[int]:
    listed = _ip("netns", "pids", namespace, check=False).stdout.split()
    return [int(pid) for pid in listed if pid.isdigit()]


def signal_namespace_processes(namespace: str, signum: int) -> None:
    """Send ``signum`` to every process of ``namespace``, again to any that a process forked
    before it got the signal, until a round finds no new one."""
    signalled: set[int] = set()
    for _ in range(20):
        pids = set(_namespace_pids(namespace)) - signalled
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)
        signalled |= pids


def kill_namespace_processes(namespace: str) -> None:
    """SIGKILL every process of ``namespace`` until none is left (a few rounds at most)."""
    for _ in range(20):
        pids = _namespace_pids(namespace)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def _owner_pid(name: str) -> int | None:
    """The pid in ``dtcl-<pid>-...`` or ``dc<pid>x...`` names."""
    if name.startswith(f"{PREFIX}-"):
        part = name.split("-")[1]
    elif name.startswith("dc") and "x" in name:
        part = name[2:].split("x")[0]
    else:
        return None
    return int(part) if part.isdigit() else None


def cleanup_leftovers(everything: bool = False) -> list[str]:
    """Remove the namespaces, links and folders of runs whose process is gone (or all of
    them with ``everything``); return what was removed."""
    removed = []
    for line in _ip("netns", "list", check=False).stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        pid = _owner_pid(name)
        if pid is None or (not everything and _pid_alive(pid)):
            continue
        kill_namespace_processes(name)
        _ip("netns", "del", name, check=False)
        removed.append(name)
    for line in _ip("-o", "link", "show", check=False).stdout.splitlines():
        name = line.split(":")[1].strip().split("@")[0] if ":" in line else ""
        pid = _owner_pid(name) if name.startswith("dc") else None
        if pid is None or (not everything and _pid_alive(pid)):
            continue
        _ip("link", "del", name, check=False)
        removed.append(name)
    for folder in Path(tempfile.gettempdir()).glob(f"{PREFIX}-*"):
        pid = _owner_pid(folder.name)
        if pid is not None and (everything or not _pid_alive(pid)):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(str(folder))
    return removed


def _subnet() -> int:
    """A /24 of 198.18.0.0/16 that no route of this machine uses yet."""
    routes = _ip("route", "show", check=False).stdout
    start = os.getpid() % 250 + 1
    for offset in range(250):
        octet = (start + offset) % 250 + 1
        if f"198.18.{octet}." not in routes:
            return octet
    raise RuntimeError("no free /24 in 198.18.0.0/16")


@dataclass
class Host:
    """A namespace with one address, a host name and the processes started in it."""

    name: str
    namespace: str
    address: str
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    def command(self, argv: list[str], user: str | None = None) -> list[str]:
        """``argv`` run in this host's namespace, under its own host name."""
        inner = ["runuser", "-u", user, "--", *argv] if user else argv
        return [
            "ip", "netns", "exec", self.namespace, "unshare", "--uts", "--",
            "sh", "-c", 'hostname "$0" && exec "$@"', self.name, *inner,
        ]  # fmt: skip


class Cluster:
    """The hosts of the module docstring; ``start()`` builds them, ``stop()`` removes them."""

    def __init__(
        self,
        *,
        model_seconds: float = 0.05,
        slow_model_seconds: float = 3.0,
        web_workers: int = 2,
        web_threads: int = 4,
        eval_workers: int = 1,
        live_workers: int = 1,
        extra_env: dict[str, str] | None = None,
        keep_logs: Path | None = None,
    ) -> None:
        self.pid = os.getpid()
        self.octet = 0
        self.model_seconds = model_seconds
        self.slow_model_seconds = slow_model_seconds
        self.web_workers = web_workers
        self.web_threads = web_threads
        self.eval_workers = eval_workers
        self.live_workers = live_workers
        self.extra_env = dict(extra_env or {})
        self.keep_logs = keep_logs
        self.hosts: dict[str, Host] = {}
        self.workdir: Path | None = None
        self.static_root = CACHE / "static-unset"
        self.secret_key = secrets.token_urlsafe(48)
        self._stopped = False
        self._previous_handlers: dict[int, object] = {}

    # -- addresses -------------------------------------------------------------------------
    def address(self, host: str) -> str:
        return f"198.18.{self.octet}.{ADDRESSES[host]}"

    @property
    def gateway(self) -> str:
        return f"198.18.{self.octet}.1"

    @property
    def url(self) -> str:
        """The site, through the load balancer."""
        return f"http://{self.address('lb')}"

    def web_url(self, host: str) -> str:
        return f"http://{self.address(host)}:{WEB_PORT}"

    @property
    def model_url(self) -> str:
        return f"http://{self.address('model')}:{MODEL_PORT}/"

    @property
    def slow_model_url(self) -> str:
        return f"http://{self.address('model')}:{SLOW_MODEL_PORT}/"

    @property
    def database_url(self) -> str:
        return f"postgres://postgres@{self.address('db')}:5432/dynatask"

    @property
    def redis_url(self) -> str:
        return f"redis://{self.address('redis')}:6379/0"

    def log_path(self, host: str, process: str) -> Path:
        return self.workdir / "logs" / f"{host}-{process}.log"

    def env(self, **overrides: str) -> dict[str, str]:
        """The environment of every Django process of the cluster (production settings)."""
        hosts = ",".join(self.address(name) for name in ("lb", *WEB_HOSTS))
        env = {
            key: value
            for key, value in os.environ.items()
            if key in ("PATH", "LANG", "LC_ALL", "HOME", "VIRTUAL_ENV")
        }
        env.update(
            DJANGO_SETTINGS_MODULE="dynatask_site.settings.prod",
            SECRET_KEY=self.secret_key,
            DATABASE_URL=self.database_url,
            REDIS_URL=self.redis_url,
            ALLOWED_HOSTS=f"{hosts},localhost",
            SECURE_SSL_REDIRECT="0",
            SECURE_COOKIES="0",
            SECURE_HSTS_SECONDS="0",
            TRUSTED_PROXY_COUNT="1",
            MODELS_HUB_ALLOWED_HOSTS="198.18.0.0/15",
            STATIC_ROOT=str(self.static_root),
            MEDIA_ROOT=str(self.workdir / "media"),
            LOG_LEVEL="WARNING",
            PYTHONUNBUFFERED="1",
            PYTHONDONTWRITEBYTECODE="1",
            **FAST_TIMINGS,
        )
        env.update(self.extra_env)
        env.update(overrides)
        return env

    # -- life cycle ------------------------------------------------------------------------
    def start(self, seed: dict | None = None) -> Cluster:
        """Build every host. With ``seed`` (``seed()``'s keywords), the data is seeded while
        the web and worker hosts boot; ``self.seeded`` holds what ``seed()`` returned."""
        reason = unavailable_reason()
        if reason:
            raise RuntimeError(f"cannot build a cluster here: {reason}")
        removed = cleanup_leftovers()
        if removed:
            say(f"removed leftovers of earlier runs: {', '.join(removed)}")
        self._install_stop_handlers()
        self.workdir = Path(tempfile.mkdtemp(prefix=f"{PREFIX}-{self.pid}-"))
        self.workdir.chmod(0o755)
        (self.workdir / "logs").mkdir()
        self.octet = _subnet()
        try:
            self._network()
            self.start_postgres(wait=False)
            self.start_redis()
            self.start_model(wait=False)
            static = _Background(self._collectstatic)
            self.wait_postgres()
            self.migrate_cached()
            seeding = None
            if seed is not None:
                seeding = _Background(lambda: setattr(self, "seeded", self.seed(**seed)))
            for name in WEB_HOSTS:
                self.start_web(name, wait=False)
            for name in WORKER_HOSTS:
                self.start_workers(name)
            static.join()
            for name in WEB_HOSTS:
                self.wait_ready(name)
            self.start_lb()
            self.wait_models()
            if seeding is not None:
                seeding.join()
        except BaseException:
            self.stop()
            raise
        return self

    def _install_stop_handlers(self) -> None:
        atexit.register(self.stop)

        def stop_and_exit(number, frame):
            self.stop()
            previous = self._previous_handlers.get(number)
            if callable(previous):
                previous(number, frame)
            raise SystemExit(128 + number)

        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            with contextlib.suppress(ValueError):  # not the main thread: atexit only
                self._previous_handlers[number] = signal.signal(number, stop_and_exit)

    def stop(self) -> None:
        """Kill every process of every host, delete the namespaces, the bridge, the folder."""
        if self._stopped:
            return
        self._stopped = True
        for host in self.hosts.values():
            kill_namespace_processes(host.namespace)
            for process in host.processes.values():
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=5)
            _ip("netns", "del", host.namespace, check=False)
        for index in range(len(ADDRESSES)):
            _ip("link", "del", f"dc{self.pid}x{index}a", check=False)
        _ip("link", "del", self._bridge, check=False)
        if self.workdir is not None:
            if self.keep_logs is not None:
                shutil.copytree(self.workdir / "logs", self.keep_logs, dirs_exist_ok=True)
            shutil.rmtree(self.workdir, ignore_errors=True)

    # -- network ---------------------------------------------------------------------------
    @property
    def _bridge(self) -> str:
        return f"dc{self.pid}xbr"

    def _network(self) -> None:
        _ip("link", "add", self._bridge, "type", "bridge")
        _ip("addr", "add", f"{self.gateway}/24", "dev", self._bridge)
        _ip("link", "set", self._bridge, "up")
        for index, name in enumerate(ADDRESSES):
            namespace = f"{PREFIX}-{self.pid}-{name}"
            outside, inside = f"dc{self.pid}x{index}a", f"dc{self.pid}x{index}b"
            _ip("netns", "add", namespace)
            self.hosts[name] = Host(name, namespace, self.address(name))
            _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
            _ip("link", "set", inside, "netns", namespace)
            _ip("link", "set", outside, "master", self._bridge, "up")
            _ip("-n", namespace, "addr", "add", f"{self.address(name)}/24", "dev", inside)
            _ip("-n", namespace, "link", "set", inside, "up")
            _ip("-n", namespace, "link", "set", "lo", "up")

    # -- processes -------------------------------------------------------------------------
    def spawn(
        self, host: str, process: str, argv: list[str], env=None, user=None, cwd=ROOT
    ) -> subprocess.Popen:
        """Start ``argv`` on ``host`` as ``process`` (its log: ``log_path(host, process)``)."""
        target = self.hosts[host]
        with open(self.log_path(host, process), "ab") as log:
            popen = subprocess.Popen(
                target.command(argv, user=user),
                cwd=cwd,
                env=env if env is not None else self.env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        target.processes[process] = popen
        return popen

    def signal(self, host: str, process: str, number: int = signal.SIGTERM) -> None:
        popen = self.hosts[host].processes.get(process)
        if popen is not None and popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(popen.pid, number)

    def stop_process(self, host: str, process: str, seconds: float = 20.0) -> None:
        """SIGTERM ``process`` on ``host`` (a graceful stop), SIGKILL it after ``seconds``."""
        popen = self.hosts[host].processes.pop(process, None)
        if popen is None:
            return
        if popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(popen.pid, signal.SIGTERM)
        try:
            popen.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(popen.pid, signal.SIGKILL)
            popen.wait(timeout=10)

    def freeze_host(self, host: str) -> None:
        """Stop every process of ``host`` where it stands (SIGSTOP), children forked meanwhile
        too: a test can then read what the host holds without a race, and kill or thaw it."""
        signal_namespace_processes(self.hosts[host].namespace, signal.SIGSTOP)

    def thaw_host(self, host: str) -> None:
        """Let the processes that ``freeze_host`` stopped go on (SIGCONT)."""
        signal_namespace_processes(self.hosts[host].namespace, signal.SIGCONT)

    def kill_host(self, host: str) -> None:
        """The host dies: every process in it is killed at once (kill -9)."""
        kill_namespace_processes(self.hosts[host].namespace)
        for popen in self.hosts[host].processes.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                popen.wait(timeout=5)
        self.hosts[host].processes.clear()

    def wait_port(self, host: str, port: int, seconds: float = 60.0, process: str = "") -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with (
                contextlib.suppress(OSError),
                socket.create_connection((self.address(host), port), 0.5),
            ):
                return
            popen = self.hosts[host].processes.get(process)
            if popen is not None and popen.poll() is not None:
                break
            time.sleep(0.1)
        tail = ""
        if process:
            tail = self.log_path(host, process).read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{host}:{port} ({process}) is not listening\n{tail}")

    def manage(self, *args: str, env=None, cwd=ROOT, host: str = "worker1") -> str:
        """``manage.py args`` on ``host`` (the hosts share this machine's files), to its end."""
        completed = subprocess.run(
            self.hosts[host].command([PYTHON, "manage.py", *args]),
            cwd=cwd,
            env=env if env is not None else self.env(),
            capture_output=True,
            text=True,
            check=False,
        )
        if completed.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{completed.stderr[-3000:]}")
        return completed.stdout

    def django(self, code: str, **values):
        """Run ``code`` with Django set up on the cluster's database and Redis, from the root
        namespace (an operator's shell); ``values`` are its ``args``, and what it leaves in
        ``result`` comes back (JSON)."""
        script = (
            "import json, sys\nimport django\ndjango.setup()\n"
            "args = json.loads(sys.argv[1])\nresult = None\n"
            f"{code}\nprint('RESULT ' + json.dumps(result, default=str))\n"
        )
        completed = subprocess.run(
            [PYTHON, "-c", script, json.dumps(values)],
            cwd=ROOT,
            env=self.env(),
            capture_output=True,
            text=True,
            check=False,
        )
        if completed.returncode != 0:
            raise RuntimeError(f"cluster script failed:\n{completed.stderr[-3000:]}")
        line = completed.stdout.strip().splitlines()[-1]
        return json.loads(line.removeprefix("RESULT "))

    # -- the hosts' services ---------------------------------------------------------------
    def start_postgres(self, wait: bool = True) -> None:
        data = self.workdir / "pgdata"
        sockets = self.workdir / "pgsocket"
        for folder in (data, sockets):
            folder.mkdir()
            shutil.chown(folder, "postgres", "postgres")
        subprocess.run(
            ["runuser", "-u", "postgres", "--", str(PG_BIN / "initdb"), "-D", str(data),
             "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"],
            check=True, capture_output=True,
        )  # fmt: skip
        with open(data / "pg_hba.conf", "a") as hba:
            hba.write("host all all 198.18.0.0/15 trust\n")
        self.spawn(
            "db",
            "postgres",
            [str(PG_BIN / "postgres"), "-D", str(data),
             "-c", f"listen_addresses={self.address('db')}",
             "-c", f"unix_socket_directories={sockets}",
             "-c", "max_connections=200", "-c", "shared_buffers=64MB",
             "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
            env={"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8"},
            user="postgres",
            cwd=self.workdir,
        )  # fmt: skip
        if wait:
            self.wait_postgres()

    def wait_postgres(self) -> None:
        """Wait for PostgreSQL, then create the ``dynatask`` database."""
        self.wait_port("db", 5432, 60, "postgres")
        import psycopg

        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(
                    f"host={self.address('db')} user=postgres dbname=postgres", autocommit=True
                ) as connection:
                    connection.execute("CREATE DATABASE dynatask")
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def start_redis(self) -> None:
        (self.workdir / "redis").mkdir(exist_ok=True)
        self.spawn(
            "redis",
            "redis",
            ["redis-server", "--bind", self.address("redis"), "--port", "6379",
             "--save", "", "--appendonly", "no", "--protected-mode", "no",
             "--dir", str(self.workdir / "redis")],
        )  # fmt: skip
        self.wait_port("redis", 6379, 20, "redis")

    def restart_redis(self, down_seconds: float = 1.0) -> None:
        """kill -9 Redis, wait ``down_seconds``, start it again: empty (no persistence)."""
        self.kill_host("redis")
        time.sleep(down_seconds)
        self.start_redis()

    def start_model(self, wait: bool = True) -> None:
        """The demo sentiment model, ``model_seconds`` per batch on ``MODEL_PORT`` and
        ``slow_model_seconds`` on ``SLOW_MODEL_PORT`` (two servers of the model host)."""
        for name, port, seconds in (
            ("model", MODEL_PORT, self.model_seconds),
            ("slow-model", SLOW_MODEL_PORT, self.slow_model_seconds),
        ):
            kwargs = json.dumps({"seconds": seconds})
            self.spawn(
                "model",
                name,
                [PYTHON, "manage.py", "serve_model", "models_hub.demo.delayed:DelayedHandler",
                 "--host", self.address("model"), "--port", str(port), "--kwargs", kwargs],
            )  # fmt: skip
        if wait:
            self.wait_models()

    def wait_models(self) -> None:
        self.wait_port("model", MODEL_PORT, 60, "model")
        self.wait_port("model", SLOW_MODEL_PORT, 60, "slow-model")

    def migrate(self, cwd: Path = ROOT) -> None:
        self.manage("migrate", "--noinput", "-v", "0", cwd=cwd)

    def migrate_cached(self) -> None:
        """Migrate the empty database, or restore the dump of an earlier migration of the
        same migrations (``var/cluster-cache``): seconds instead of half a minute."""
        dump = CACHE / f"schema-{_digest(_migration_files())}.dump"
        connection = ["-h", self.address("db"), "-U", "postgres", "-d", "dynatask"]
        if dump.exists():
            restored = subprocess.run(
                [str(PG_BIN / "pg_restore"), "--no-owner", *connection, str(dump)],
                capture_output=True, check=False,
            )  # fmt: skip
            if restored.returncode == 0:
                return
            raise RuntimeError(f"pg_restore failed: {restored.stderr[-2000:]!r}")
        self.migrate()
        CACHE.mkdir(parents=True, exist_ok=True)
        partial = dump.with_suffix(".partial")
        subprocess.run(
            [str(PG_BIN / "pg_dump"), "-Fc", "--no-owner", *connection, "-f", str(partial)],
            capture_output=True, check=True,
        )  # fmt: skip
        partial.rename(dump)

    def _collectstatic(self) -> None:
        """``collectstatic`` with the production storage (hashed, compressed names), kept in
        ``var/cluster-cache`` per content of the static files and the requirements."""
        target = CACHE / f"static-{_digest(_static_files())}"
        if not (target / "staticfiles.json").exists():
            partial = target.with_name(target.name + f".partial-{self.pid}")
            shutil.rmtree(partial, ignore_errors=True)
            self.manage(
                "collectstatic", "--noinput", "-v", "0", env=self.env(STATIC_ROOT=str(partial))
            )
            shutil.rmtree(target, ignore_errors=True)
            partial.rename(target)
        self.static_root = target

    def start_web(self, host: str, *, cwd: Path = ROOT, wait: bool = True) -> None:
        self.spawn(
            host,
            "gunicorn",
            [PYTHON, "-m", "gunicorn", "dynatask_site.wsgi",
             "--bind", f"{self.address(host)}:{WEB_PORT}",
             "--workers", str(self.web_workers), "--threads", str(self.web_threads),
             "--worker-class", "gthread", "--keep-alive", "75",
             "--timeout", "30", "--graceful-timeout", "20", "--log-level", "warning"],
            cwd=cwd,
        )  # fmt: skip
        if wait:
            self.wait_ready(host)

    def wait_ready(self, host: str, seconds: float = 90.0) -> None:
        """Wait until ``host``'s gunicorn answers 200 on /readyz."""
        import requests

        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with contextlib.suppress(requests.RequestException):
                if requests.get(f"{self.web_url(host)}/readyz", timeout=2).status_code == 200:
                    return
            popen = self.hosts[host].processes.get("gunicorn")
            if popen is not None and popen.poll() is not None:
                break
            time.sleep(0.2)
        tail = self.log_path(host, "gunicorn").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{host} is not ready\n{tail}")

    def start_lb(self) -> None:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "DYNATASK_WEB1": f"{self.address('web1')}:{WEB_PORT}",
            "DYNATASK_WEB2": f"{self.address('web2')}:{WEB_PORT}",
            "DYNATASK_HOST": self.address("lb"),
            "DYNATASK_LB_BIND": f"{self.address('lb')}:{LB_PORT}",
            "DYNATASK_LB_ADMIN_SOCKET": str(self.admin_socket),
            "DYNATASK_LB_LOG": "stdout",
        }
        self.spawn("lb", "haproxy", ["haproxy", "-db", "-f", str(HAPROXY_CONFIG)], env=env)
        self.wait_port("lb", LB_PORT, 20, "haproxy")
        self.wait_lb_up(*WEB_HOSTS)

    @property
    def admin_socket(self) -> Path:
        return self.workdir / "haproxy.sock"

    def lb_command(self, command: str) -> str:
        """Send one command to HAProxy's runtime API; return its answer."""
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(5)
            sock.connect(str(self.admin_socket))
            sock.sendall(command.encode() + b"\n")
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def lb_servers(self) -> dict[str, dict[str, str]]:
        """``show stat`` of the web backend's servers: {web1: {status, scur, stot, ...}}."""
        lines = self.lb_command("show stat").splitlines()
        header = lines[0].lstrip("# ").split(",")
        rows = [dict(zip(header, line.split(","), strict=False)) for line in lines[1:] if line]
        return {
            row["svname"]: row
            for row in rows
            if row.get("pxname") == "web" and row["svname"] not in ("BACKEND",)
        }

    def wait_lb_up(self, *hosts: str, seconds: float = 30.0) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            servers = self.lb_servers()
            if all(servers.get(host, {}).get("status") == "UP" for host in hosts):
                return
            time.sleep(0.2)
        raise RuntimeError(f"HAProxy does not see {hosts} up: {self.lb_servers()}")

    def replace_web(self, host: str, cwd: Path = ROOT) -> None:
        """One step of a rolling restart (docs/deploy.md): drain ``host`` at the balancer,
        wait for its requests to end, stop its gunicorn gracefully, start the release at
        ``cwd``, and put it back once its readiness check passes."""
        self.lb_command(f"set server web/{host} state drain")
        deadline = time.monotonic() + 30
        while self.lb_servers()[host].get("scur") != "0" and time.monotonic() < deadline:
            time.sleep(0.1)
        self.lb_command(f"set server web/{host} state maint")
        self.stop_process(host, "gunicorn")
        self.start_web(host, cwd=cwd)
        self.lb_command(f"set server web/{host} state ready")
        self.wait_lb_up(host)

    def start_workers(self, host: str) -> None:
        """The worker host's processes: live and eval workers, a chat worker, a health worker,
        run_cron."""
        for index in range(self.live_workers):
            self.start_worker(host, f"live{index}")
        self.start_worker(host, "chat")
        for index in range(self.eval_workers):
            self.start_worker(host, f"eval{index}")
        self.start_worker(host, "health")
        self.spawn(host, "cron", [PYTHON, "manage.py", "run_cron"])

    def start_worker(self, host: str, process: str) -> None:
        """One RQ worker of ``host``, named ``<host>-<process>`` (``live0``, ``eval1``,
        ``chat``, ``health``) after its kind, with the command line of docs/deploy.md."""
        kind = process.rstrip("0123456789")
        queues = {
            "live": ["live", "--worker-class", "rq.worker.SimpleWorker"],
            "eval": ["eval", "default", "--worker-class", "leaderboards.jobs.EvalWorker"],
            "chat": ["chat", "--worker-class", "rq.worker.SimpleWorker"],
            "health": ["health"],
        }[kind]
        name = f"{host}-{process}-{secrets.token_hex(3)}"
        self.spawn(host, process, [PYTHON, "manage.py", "rqworker", *queues, "--name", name])

    def stop_workers(self, host: str) -> None:
        for process in list(self.hosts[host].processes):
            self.stop_process(host, process)

    # -- data ------------------------------------------------------------------------------
    def add_model(self, task: str, url: str, name: str, **fields) -> int:
        return self.django(ADD_MODEL, task=task, url=url, name=name, fields=fields)

    def import_dataset(self, task: str, count: int, slug: str) -> int:
        return self.django(IMPORT_DATASET, task=task, count=count, slug=slug)

    def create_runs(self, models: list[int], dataset: int, shard_size: int) -> list[int]:
        return self.django(CREATE_RUNS, models=models, dataset=dataset, shard_size=shard_size)

    def score(self, model: int, dataset: int) -> dict:
        """The Score of ``model`` on ``dataset`` without the figures that depend on timing."""
        return self.django(SCORE, model=model, dataset=dataset)

    def sql(self, query: str, *params) -> list[tuple]:
        """Rows of ``query`` on the cluster's database (from the root namespace)."""
        import psycopg

        conninfo = f"host={self.address('db')} user=postgres dbname=dynatask"
        with psycopg.connect(conninfo, autocommit=True) as connection:
            return connection.execute(query, params).fetchall()

    def redis(self):
        from redis import Redis

        return Redis.from_url(self.redis_url, socket_timeout=5)

    def seed(self, code: str = "cluster", users: int = 4, **options) -> dict:
        """The sentiment task ``code`` with contexts, the model host's model in its loop, an
        owner (``bench-owner``) and ``users`` workers (``bench-worker-<i>``), all with the
        password ``bench-password``."""
        sys.path.insert(0, str(ROOT))
        from bench import harness

        return harness.seed_task(self.env(), code, self.model_url, users=users, **options)


# -- data of the cluster (scripts run by ``Cluster.django``) ------------------------------------
ADD_MODEL = """
from django.contrib.auth import get_user_model
from models_hub.models import RegisteredModel
from tasks.models import Task

task = Task.objects.get(code=args["task"])
owner = get_user_model().objects.get(username="bench-owner")
fields = {"batch_size": 4, "max_concurrency": 4, "read_timeout": 10.0, **args["fields"]}
model = RegisteredModel.objects.create(
    task=task,
    owner=owner,
    name=args["name"],
    protocol="dynatask",
    endpoint_url=args["url"],
    is_published=True,
    **fields,
)
result = model.pk
"""
IMPORT_DATASET = """
import io
from leaderboards.services.datasets import dataset_import
from tasks.models import Task
words = ("good", "bad", "plain", "love", "hate")
labels = ("positive", "negative", "neutral", "positive", "neutral")
rows = "".join(
    json.dumps({"uid": f"u{i}", "statement": f"This is a {words[i % 5]} day number {i}.",
                "context": "Describe your day.", "label": labels[i % 5],
                "tags": ["even" if i % 2 == 0 else "odd"]}) + "\\n"
    for i in range(args["count"]))
dataset = dataset_import(Task.objects.get(code=args["task"]), io.BytesIO(rows.encode()),
                         name=args["slug"], slug=args["slug"], filename="rows.jsonl",
                         evaluate=False)
result = dataset.pk
"""
CREATE_RUNS = """
from leaderboards.models import Dataset
from leaderboards.services.runs import evaluation_run_create
from models_hub.models import RegisteredModel

dataset = Dataset.objects.get(pk=args["dataset"])
result = [
    evaluation_run_create(
        RegisteredModel.objects.get(pk=model_id),
        dataset,
        shard_size=args["shard_size"],
        include_perturbations=False,
    ).pk
    for model_id in args["models"]
]
"""
SCORE = """
from leaderboards.models import Score
JOB_METRICS = {"examples_per_second", "latency_p50_ms", "latency_p95_ms", "memory_utilization"}
score = Score.objects.get(model_id=args["model"], dataset_id=args["dataset"])
result = {"metrics": {k: v for k, v in score.metrics.items() if k not in JOB_METRICS},
          "per_tag": score.per_tag, "main_value": score.main_value,
          "ci": [score.ci_low, score.ci_high], "example_count": score.example_count}
"""


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cleanup", action="store_true", help="remove what runs that are gone left, and exit"
    )
    parser.add_argument("--model-seconds", type=float, default=0.05)
    options = parser.parse_args()
    if options.cleanup:
        removed = cleanup_leftovers()
        say(f"removed: {', '.join(removed) or 'nothing'}")
        return 0
    reason = unavailable_reason()
    if reason:
        say(f"cannot build a cluster here: {reason}")
        return 1
    started = time.monotonic()
    cluster = Cluster(model_seconds=options.model_seconds).start(seed={"users": 4})
    seeded = cluster.seeded
    say(f"up in {time.monotonic() - started:.1f} s; logs in {cluster.workdir / 'logs'}")
    say(f"site {cluster.url} (task {seeded['task']}; bench-worker-0 / bench-password)")
    for name, host in cluster.hosts.items():
        say(f"  {name:8} {host.address:15} {host.namespace}")
    say("Ctrl-C stops and removes everything")
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
