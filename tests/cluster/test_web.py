"""The web hosts behind HAProxy: sessions, caches, a host's death and a rolling upgrade."""

from __future__ import annotations

import re
import shutil
import subprocess
import time

import pytest

from tests.cluster.conftest import (
    CONTEXT_ID,
    CSRF_INPUT,
    ROOT,
    STATUS,
    TASK,
    Load,
    Site,
    example_status,
)

# One cluster for all: pytest-xdist runs the cluster tests on one worker (--dist loadgroup).
pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("cluster")]

SENTIMENT_YAML = (ROOT / "tasks" / "demo_data" / "sentiment.yaml").read_text()
PLACEHOLDER = re.compile(r'placeholder="([^"]*)"')


def test_a_session_and_its_csrf_token_work_whichever_web_host_answers(cluster):
    site = Site(cluster, "bench-worker-5")
    web1, web2 = cluster.web_url("web1"), cluster.web_url("web2")
    site.login(web1)
    page = site.get(f"/tasks/{TASK}/create", web1)
    assert page.status_code == 200
    token = CSRF_INPUT.search(page.text).group(1)
    # Signed in on web2 as well, and web1's form token is good there.
    assert site.get(f"/tasks/{TASK}/create", web2).status_code == 200
    context = CONTEXT_ID.search(page.text).group(1)
    response = site.request(
        "POST",
        f"{web2}/tasks/{TASK}/create",
        data={"csrfmiddlewaretoken": token, "context_id": context, "statement": "To web2.",
              "label": "positive"},
    )  # fmt: skip
    assert response.status_code == 200 and STATUS.search(response.text), response.text[-3000:]
    # The check is real: a made-up token is refused there.
    forged = site.request(
        "POST",
        f"{web2}/tasks/{TASK}/create",
        data={"csrfmiddlewaretoken": "x" * 64, "context_id": context, "statement": "Forged.",
              "label": "positive"},
    )  # fmt: skip
    assert forged.status_code == 403
    # Through the balancer, both hosts answer the same signed-in user.
    for _ in range(6):
        assert site.get(f"/tasks/{TASK}/create").status_code == 200
    assert {"web1", "web2"} <= set(site.served_by)


def pages_of_web2(site: Site, cluster, count: int = 8) -> list[str]:
    """The create page from web2, each on a new connection (so from each gunicorn worker)."""
    base = cluster.web_url("web2")
    pages = [
        site.get(f"/tasks/{TASK}/create", base, headers={"Connection": "close"})
        for _ in range(count)
    ]
    assert all(page.status_code == 200 for page in pages)
    return [page.text for page in pages]


def patch_task(owner: Site, cluster, **fields) -> None:
    response = owner.api("PATCH", f"/tasks/{TASK}/", fields, base=cluster.web_url("web1"))
    assert response.status_code == 200, response.text[:500]


def test_a_change_through_web1_is_used_by_web2s_next_request(cluster, owner, sites):
    site = sites[0]
    before = pages_of_web2(site, cluster)  # every cache of web2 is warm
    assert all("Write your statement..." in page for page in before)

    # A config edited in place (no example was written under this version yet).
    yaml_v2 = SENTIMENT_YAML.replace("Write your statement...", "Cluster placeholder two")
    patch_task(owner, cluster, config_yaml=yaml_v2)
    assert all("Cluster placeholder two" in page for page in pages_of_web2(site, cluster))

    # A task's settings.
    patch_task(owner, cluster, name="Cluster task renamed")
    assert all("Cluster task renamed" in page for page in pages_of_web2(site, cluster))

    # A round's loop models: none, then the model again.
    loop = f"/tasks/{TASK}/rounds/1/models/"
    web1, web2 = cluster.web_url("web1"), cluster.web_url("web2")
    assert owner.api("PUT", loop, {"models": []}, base=web1).status_code == 200
    _response, example_id = site.create(web2)
    assert example_status(cluster, example_id) == "no_model"
    assert owner.api("PUT", loop, {"models": [cluster.model_id]}, base=web1).status_code == 200
    _response, example_id = site.create(web2)
    assert example_status(cluster, example_id) in ("awaiting_model", "model_answered")

    # A new config version (examples exist under the current one).
    yaml_v3 = SENTIMENT_YAML.replace("Write your statement...", "Cluster placeholder three")
    patch_task(owner, cluster, config_yaml=yaml_v3)
    versions = cluster.sql(
        "SELECT count(*) FROM tasks_taskconfigversion v JOIN tasks_task t ON t.id = v.task_id "
        "WHERE t.code = %s",
        TASK,
    )
    assert versions[0][0] >= 2
    assert all("Cluster placeholder three" in page for page in pages_of_web2(site, cluster))


def stored_examples(cluster, prefix: str) -> set[int]:
    rows = cluster.sql(
        "SELECT id FROM annotation_example WHERE input->>'statement' LIKE %s", prefix + " %"
    )
    return {row[0] for row in rows}


def test_killing_a_web_host_under_load_loses_no_acknowledged_example(cluster, sites):
    with Load(sites[:4], prefix="Killweb") as load:
        time.sleep(2)
        killed_at = time.monotonic()
        cluster.kill_host("web1")
        time.sleep(4)
    try:
        stored = stored_examples(cluster, "Killweb")
        assert load.acknowledged and load.acknowledged <= stored
        # Only the requests in flight on web1 when it died may have failed (one per user at
        # most); one of them may have stored its example before it died.
        assert len(load.failures) <= len(load.sites)
        assert all(started < killed_at + 0.5 for started, _ in load.failures), load.failures
        assert len(stored - load.acknowledged) <= len(load.failures)
        # HAProxy saw it and sends everything to web2.
        after = [host for started, host in load.answers if started > killed_at + 1.0]
        assert after and set(after) == {"web2"}
        assert cluster.lb_servers()["web1"]["status"].startswith("DOWN")
    finally:
        cluster.start_web("web1", wait=False)  # back by the next test that needs it


def new_release(cluster) -> object:
    """This tree copied (tracked files), with one more migration: a nullable column on the
    examples, which the new code fills in and the old code does not know."""
    target = cluster.workdir / "new-release"
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, files):
        source = ROOT / name.decode()
        if source.is_file():
            (target / name.decode()).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name.decode())
    migrations = sorted(p.stem for p in (target / "annotation" / "migrations").glob("0*.py"))
    number = int(migrations[-1][:4]) + 1
    (target / "annotation" / "migrations" / f"{number:04d}_example_release_note.py").write_text(
        "from django.db import migrations, models\n\n\n"
        "class Migration(migrations.Migration):\n"
        f"    dependencies = [('annotation', '{migrations[-1]}')]\n"
        "    operations = [migrations.AddField('example', 'release_note',"
        " models.TextField(null=True, blank=True))]\n"
    )
    models_py = target / "annotation" / "models.py"
    text = models_py.read_text()
    anchor = text.index("class Example(models.Model):")
    meta = text.index("\n    class Meta:", anchor)
    field = '\n    release_note = models.TextField(null=True, blank=True, default="new")\n'
    models_py.write_text(text[:meta] + field + text[meta:])
    return target


def test_a_rolling_upgrade_fails_no_request(cluster, sites):
    release = new_release(cluster)
    cluster.wait_lb_up("web1", "web2", seconds=90)
    with Load(sites[:4], prefix="Upgrade") as load:
        time.sleep(1)
        cluster.migrate(cwd=release)  # the schema first: the old code keeps serving
        cluster.replace_web("web1", cwd=release)
        mixed_from = time.monotonic()
        time.sleep(2)  # the new web1 and the old web2 together
        mixed_to = time.monotonic()
        cluster.replace_web("web2", cwd=release)
        time.sleep(1)
    assert load.failures == []
    stored = stored_examples(cluster, "Upgrade")
    assert load.acknowledged == stored
    mixed = {host for started, host in load.answers if mixed_from < started < mixed_to}
    assert mixed == {"web1", "web2"}
    # Old hosts wrote rows without the new column, the new ones with it, in one table.
    notes = dict(
        cluster.sql(
            "SELECT coalesce(release_note, 'old'), count(*) FROM annotation_example "
            "WHERE input->>'statement' LIKE 'Upgrade %%' GROUP BY 1"
        )
    )
    assert notes.get("old") and notes.get("new"), notes
