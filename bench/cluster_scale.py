"""Scale figures across hosts: the work that waits on models, on the namespace cluster.

    sudo .venv/bin/python bench/cluster_scale.py [--quick] [--json]

On 2 cores, CPU-bound work cannot grow with hosts; work that waits on a model can. On the
cluster of ``bench/cluster.py`` (two worker hosts):

- **eval**: one run of a fresh model over a dataset, against a model that takes 100 ms per
  batch (8 examples a batch, one batch in flight per worker), with 1, 2 and 4 eval workers
  spread over the worker hosts; examples per second from the run's creation to its end
  (target: 4 workers >= 3.2x one);
- **live**: 50 signed-in users in a closed loop (write an example, wait for the model's
  answer, write the next) against a model that takes 1 s per call, with 1, 2 and 4 live
  workers; answered examples per second (``ANNOTATION_LIVE_BATCH_SIZE=4``, so that one
  worker's drains, not the users, bound the rate);
- beside each figure, the CPU milliseconds per example of each host (all processes of its
  namespace).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.cluster import WORKER_HOSTS, Cluster, _namespace_pids, say  # noqa: E402

TASK = "scale"
CONTEXT_ID = re.compile(r'name="context_id" value="(\d+)"')
EXAMPLE_ID = re.compile(r"/examples/(\d+)/retract")
STATUS = re.compile(r'id="example-status"[^>]*data-status="(\w+)"')
PLACEMENT = {1: ["worker1"], 2: ["worker1", "worker2"], 4: ["worker1", "worker2"] * 2}

SESSIONS = """
from importlib import import_module
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth import get_user_model
User = get_user_model()
engine = import_module(settings.SESSION_ENGINE)
result = []
for index in range(args["count"]):
    user, made = User.objects.get_or_create(username=f"scale-user-{index}")
    if made:
        user.set_unusable_password()
        user.save()
    session = engine.SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    result.append(session.session_key)
"""
EVAL_RUN = """
from django.contrib.auth import get_user_model
from leaderboards.models import Dataset
from leaderboards.services.runs import evaluation_run_create
from models_hub.models import RegisteredModel
from tasks.models import Task
model = RegisteredModel.objects.create(
    task=Task.objects.get(code=args["task"]),
    owner=get_user_model().objects.get(username="bench-owner"),
    name=args["name"], protocol="dynatask", endpoint_url=args["url"], is_published=True,
    batch_size=8, max_concurrency=1, read_timeout=10.0)
result = evaluation_run_create(model, Dataset.objects.get(pk=args["dataset"]),
                               shard_size=args["shard_size"], include_perturbations=False).pk
"""
SET_LOOP = """
from django.contrib.auth import get_user_model
from models_hub import services
from models_hub.models import RegisteredModel
from tasks.models import Task

task = Task.objects.get(code=args["task"])
owner = get_user_model().objects.get(username="bench-owner")
model = RegisteredModel.objects.create(
    task=task,
    owner=owner,
    name="one-second",
    protocol="dynatask",
    endpoint_url=args["url"],
    is_published=True,
    batch_size=16,
    max_concurrency=16,
    read_timeout=10.0,
)
services.model_set_in_loop(task.rounds.get(number=1), [model], owner)
result = model.pk
"""


def host_cpu(cluster: Cluster) -> dict[str, float]:
    """CPU seconds used so far by the processes of each host (children included)."""
    import psutil

    totals = {}
    for name, host in cluster.hosts.items():
        total = 0.0
        for pid in _namespace_pids(host.namespace):
            try:
                times = psutil.Process(pid).cpu_times()
            except psutil.Error:
                continue
            total += times.user + times.system + times.children_user + times.children_system
        totals[name] = total
    return totals


def per_example(before: dict, after: dict, examples: int) -> dict[str, float]:
    if not examples:
        return {}
    return {
        name: round((after[name] - before.get(name, 0.0)) * 1000 / examples, 2)
        for name in after
        if after[name] - before.get(name, 0.0) > 0.005
    }


def place_workers(cluster: Cluster, kind: str, count: int) -> None:
    """Stop every ``kind`` worker, start ``count`` of them spread over the worker hosts, and
    wait until each is registered with RQ."""
    from rq.worker import Worker

    for host in WORKER_HOSTS:
        for process in [name for name in cluster.hosts[host].processes if name.startswith(kind)]:
            cluster.stop_process(host, process)
    started = {}
    for host in PLACEMENT[count]:
        index = started[host] = started.get(host, -1) + 1
        cluster.start_worker(host, f"{kind}{index}")
    queue = "eval" if kind == "eval" else "live"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        workers = Worker.all(connection=cluster.redis())
        alive = [w for w in workers if queue in w.queue_names() and w.hostname in WORKER_HOSTS]
        if len(alive) == count:
            return
        time.sleep(0.5)
    raise RuntimeError(f"{count} {kind} workers did not register")


def eval_figures(cluster: Cluster, examples: int, counts=(1, 2, 4)) -> dict:
    dataset = cluster.import_dataset(TASK, examples, "scale-set")
    figures = {}
    for count in counts:
        place_workers(cluster, "eval", count)
        before = host_cpu(cluster)
        run = cluster.django(
            EVAL_RUN, task=TASK, name=f"scale-{count}", url=cluster.model_url,
            dataset=dataset, shard_size=examples // 8,
        )  # fmt: skip
        while True:
            status, created, finished = cluster.sql(
                "SELECT status, created_at, finished_at FROM leaderboards_evaluationrun "
                "WHERE id = %s",
                run,
            )[0]
            if status in ("done", "failed"):
                break
            time.sleep(0.2)
        after = host_cpu(cluster)
        seconds = (finished - created).total_seconds()
        figures[count] = {
            "status": status,
            "seconds": round(seconds, 2),
            "examples_per_second": round(examples / seconds, 1),
            "cpu_ms_per_example": per_example(before, after, examples),
        }
        say(f"eval, {count} workers: {figures[count]}")
    one = figures[counts[0]]["examples_per_second"]
    for count in counts:
        figures[count]["ratio_to_one"] = round(figures[count]["examples_per_second"] / one, 2)
    return figures


class User(threading.Thread):
    def __init__(self, cluster: Cluster, session_key: str, stop: threading.Event):
        import requests

        super().__init__(daemon=True)
        self.cluster = cluster
        self.http = requests.Session()
        self.http.cookies.set("sessionid", session_key)
        self.stop_event = stop
        self.errors = 0

    def run(self) -> None:
        import requests

        base = self.cluster.url
        count = 0
        while not self.stop_event.is_set():
            count += 1
            try:
                page = self.http.get(f"{base}/tasks/{TASK}/create", timeout=30)
                context = CONTEXT_ID.search(page.text)
                response = self.http.post(
                    f"{base}/tasks/{TASK}/create",
                    data={
                        "csrfmiddlewaretoken": self.http.cookies.get("csrftoken", ""),
                        "context_id": context.group(1) if context else "",
                        "statement": f"A scaled statement number {count}.",
                        "label": "negative",
                    },
                    headers={"Referer": f"{base}/tasks/{TASK}/create"},
                    timeout=30,
                )
                self.wait_answer(response)
            except requests.RequestException:
                self.errors += 1

    def wait_answer(self, response) -> None:
        found = EXAMPLE_ID.search(response.text)
        if response.status_code != 200 or found is None:
            self.errors += 1
            return
        status = STATUS.search(response.text)
        for _ in range(15):
            if status is None or status.group(1) != "awaiting_model":
                return
            polled = self.http.get(
                f"{self.cluster.url}/tasks/{TASK}/examples/{found.group(1)}/status", timeout=30
            )
            status = STATUS.search(polled.text)


def live_figures(cluster: Cluster, users: int, seconds: float, counts=(1, 2, 4)) -> dict:
    cluster.django(SET_LOOP, task=TASK, url=cluster.slow_model_url)
    keys = cluster.django(SESSIONS, count=users)
    figures = {}
    for count in counts:
        place_workers(cluster, "live", count)
        stop = threading.Event()
        crowd = [User(cluster, key, stop) for key in keys]
        for user in crowd:
            user.start()
        time.sleep(3)  # the loop fills up
        (first,) = cluster.sql("SELECT coalesce(max(id), 0) FROM annotation_example")[0]
        before, started = host_cpu(cluster), time.monotonic()
        time.sleep(seconds)
        (last,) = cluster.sql("SELECT coalesce(max(id), 0) FROM annotation_example")[0]
        after, elapsed = host_cpu(cluster), time.monotonic() - started
        stop.set()
        for user in crowd:
            user.join(timeout=60)
        time.sleep(3)
        (answered,) = cluster.sql(
            "SELECT count(*) FROM annotation_example WHERE id > %s AND id <= %s "
            "AND status = 'model_answered'",
            first,
            last,
        )[0]
        figures[count] = {
            "examples": last - first,
            "answered": answered,
            "answered_per_second": round(answered / elapsed, 2),
            "errors": sum(user.errors for user in crowd),
            "cpu_ms_per_example": per_example(before, after, last - first),
        }
        say(f"live, {count} workers: {figures[count]}")
    one = figures[counts[0]]["answered_per_second"] or 1
    for count in counts:
        figures[count]["ratio_to_one"] = round(figures[count]["answered_per_second"] / one, 2)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer examples, shorter runs")
    parser.add_argument("--json", action="store_true", help="print one JSON object at the end")
    parser.add_argument("--only", choices=("eval", "live"))
    options = parser.parse_args()
    cluster = Cluster(
        model_seconds=0.1,
        slow_model_seconds=1.0,
        web_threads=16,
        eval_workers=0,
        live_workers=0,
        extra_env={"EVAL_SHARDS_PER_MODEL": "8", "ANNOTATION_LIVE_BATCH_SIZE": "4"},
    ).start(seed={"code": TASK, "users": 0, "contexts": 200})
    report = {}
    if options.only in (None, "eval"):
        report["eval"] = eval_figures(cluster, 1600 if options.quick else 3200)
    if options.only in (None, "live"):
        report["live"] = live_figures(cluster, 50, 12 if options.quick else 25)
    cluster.stop()
    if options.json:
        print(json.dumps(report))
    else:
        print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
