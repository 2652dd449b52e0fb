"""One cluster of network-namespace hosts (``bench/cluster.py``) for every cluster test.

The tests run in the root namespace and talk to the hosts over the bridge: to the load
balancer, to a web host directly, to PostgreSQL and Redis for what they check. A test that
kills or restarts a host brings it back before it ends, so the tests share one cluster.
Without root or network namespaces they skip with a one-line reason.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bench.cluster import Cluster, unavailable_reason

ROOT = Path(__file__).resolve().parents[2]
TASK = "cluster"
USERS = 6
PASSWORD = "bench-password"
CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
CONTEXT_ID = re.compile(r'name="context_id" value="(\d+)"')
EXAMPLE_ID = re.compile(r"/examples/(\d+)/retract")
STATUS = re.compile(r'id="example-status"[^>]*data-status="(\w+)"')
TIMEOUT = 20


@pytest.fixture(scope="session")
def cluster():
    reason = unavailable_reason()
    if reason:
        pytest.skip(f"no cluster: {reason}")
    logs = os.environ.get("CLUSTER_LOGS")  # keep the hosts' logs there (CI artifacts)
    built = Cluster(model_seconds=0.05, slow_model_seconds=3.0, keep_logs=logs and Path(logs))
    built.start(seed={"code": TASK, "users": USERS})
    built.model_id = built.seeded["model_ids"][0]
    yield built
    built.stop()


@dataclass
class Site:
    """A user's browser on the site: one set of cookies, sent to whichever base URL a
    request names (the balancer, or a web host directly, as if it answered the site's name)."""

    cluster: Cluster
    username: str
    session: object = None
    cookies: dict = field(default_factory=dict)
    served_by: Counter = field(default_factory=Counter)

    def __post_init__(self):
        import requests

        self.session = requests.Session()

    def csrf(self) -> str:
        return self.cookies.get("csrftoken", "")

    def request(self, method: str, url: str, **options):
        self.session.cookies.clear()  # the site's cookies are ours, whatever the host
        response = self.session.request(
            method, url, cookies=dict(self.cookies), timeout=TIMEOUT, allow_redirects=False,
            **options,
        )  # fmt: skip
        self.cookies.update(response.cookies.get_dict())
        self.served_by[response.headers.get("X-Served-By", "")] += 1
        return response

    def get(self, path: str, base: str | None = None, **options):
        return self.request("GET", (base or self.cluster.url) + path, **options)

    def post(self, path: str, data: dict, base: str | None = None):
        base = base or self.cluster.url
        return self.request(
            "POST",
            base + path,
            data={"csrfmiddlewaretoken": self.csrf(), **data},
            headers={"Referer": base + path},
        )

    def api(self, method: str, path: str, body: dict, base: str | None = None):
        return self.request(
            method,
            (base or self.cluster.url) + "/api/v1" + path,
            json=body,
            headers={"X-CSRFToken": self.csrf(), "Referer": base or self.cluster.url},
        )

    def login(self, base: str | None = None) -> None:
        page = self.get("/accounts/login/", base)
        assert page.status_code == 200, page.status_code
        response = self.post(
            "/accounts/login/", {"username": self.username, "password": PASSWORD}, base
        )
        assert response.status_code == 302, (response.status_code, response.text[:500])

    def create(self, base: str | None = None, text: str = "What a lovely day it was."):
        """Open the create page and send an example: (response, example id or None)."""
        page = self.get(f"/tasks/{TASK}/create", base)
        assert page.status_code == 200, page.status_code
        context = CONTEXT_ID.search(page.text)
        response = self.post(
            f"/tasks/{TASK}/create",
            {"context_id": context.group(1) if context else "", "statement": text,
             "label": "negative"},
            base,
        )  # fmt: skip
        found = EXAMPLE_ID.search(response.text) if response.status_code == 200 else None
        return response, int(found.group(1)) if found else None


@pytest.fixture(scope="session")
def signed_in(cluster):
    """The owner and ``USERS - 1`` workers, signed in once through the balancer, side by
    side (a sign-in hashes a password: most of a second of CPU)."""
    from concurrent.futures import ThreadPoolExecutor

    made = [Site(cluster, "bench-owner")]
    made += [Site(cluster, f"bench-worker-{index}") for index in range(USERS - 1)]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda site: site.login(), made))
    return made


@pytest.fixture(scope="session")
def sites(signed_in):
    """Signed-in workers (``bench-worker-<i>``)."""
    return signed_in[1:]


@pytest.fixture(scope="session")
def owner(signed_in):
    return signed_in[0]


def example_status(cluster: Cluster, example_id: int) -> str:
    rows = cluster.sql("SELECT status FROM annotation_example WHERE id = %s", example_id)
    return rows[0][0] if rows else ""


def wait_for(predicate, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {seconds} s waiting for {what}")


class Load:
    """A closed loop: each signed-in site sends examples through the balancer, one at a
    time, until stopped. Keeps what was acknowledged, what failed and who answered when."""

    def __init__(self, sites: list[Site], prefix: str = "Load"):
        self.sites = sites
        self.prefix = prefix
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.acknowledged: set[int] = set()
        self.failures: list[tuple[float, str]] = []
        self.answers: list[tuple[float, str]] = []  # (when, host that answered)
        self.threads = [threading.Thread(target=self._run, args=(s,), daemon=True) for s in sites]

    def _run(self, site: Site) -> None:
        import requests

        count = 0
        while not self.stopping.is_set():
            count += 1
            started = time.monotonic()
            try:
                response, example_id = site.create(text=f"{self.prefix} {site.username} {count}.")
                host = response.headers.get("X-Served-By", "")
                failed = None if example_id else f"HTTP {response.status_code} from {host}"
            except (requests.RequestException, AssertionError) as error:
                host, example_id, failed = "", None, repr(error)[:200]
            with self.lock:
                if failed:
                    self.failures.append((started, failed))
                else:
                    self.acknowledged.add(example_id)
                    self.answers.append((started, host))

    def __enter__(self) -> Load:
        self.started = time.monotonic()
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=60)
