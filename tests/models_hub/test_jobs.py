"""RQ jobs against the real Redis (REDIS_URL) and real model servers on loopback."""

from __future__ import annotations

import django_rq
import pytest
from rq.worker import SimpleWorker

from models_hub import jobs, queues, services
from models_hub.models import ModelStatus, RegisteredModel
from tests.factories import demo_config
from tests.models_hub.hub_helpers import SECRET_TOKEN, dead_url, model_server

# transaction=True: the worker runs in this process but the on_commit enqueues must fire.
pytestmark = pytest.mark.django_db(transaction=True)

INPUT = {"uid": "1", "context": "c", "statement": "I love it"}


def work(queue_name: str) -> None:
    """Run every queued job of ``queue_name`` in this process, then return."""
    queue = django_rq.get_queue(queue_name)
    SimpleWorker([queue], connection=queue.connection).work(burst=True)


@pytest.fixture
def model(task, user):
    return services.model_register(
        task=task, owner=user, name="m", endpoint_url="http://127.0.0.1:9/"
    )


def test_health_job_records_healthy_with_latency(redis_connection, model):
    with model_server() as server:
        RegisteredModel.objects.filter(pk=model.pk).update(endpoint_url=server.url)
        result = jobs.health_check_job(model.pk)
    assert result["ok"] is True
    model.refresh_from_db()
    assert model.status == ModelStatus.HEALTHY
    assert model.last_health_latency_ms is not None and model.last_health_latency_ms > 0
    assert model.last_health_at is not None
    assert model.model_version == "const-1"
    assert model.memory_gb is not None


def test_health_job_records_unhealthy_for_dead_port(redis_connection, model):
    RegisteredModel.objects.filter(pk=model.pk).update(
        endpoint_url=dead_url(), auth_token=SECRET_TOKEN
    )
    result = jobs.health_check_job(model.pk)
    assert result["ok"] is False
    model.refresh_from_db()
    assert model.status == ModelStatus.UNHEALTHY
    assert model.last_health_error
    assert SECRET_TOKEN not in model.last_health_error


def test_health_job_leaves_disabled_models_alone(redis_connection, model):
    RegisteredModel.objects.filter(pk=model.pk).update(status=ModelStatus.DISABLED)
    assert jobs.health_check_job(model.pk)["error_code"] == "model.disabled"
    model.refresh_from_db()
    assert model.status == ModelStatus.DISABLED and model.last_health_at is None


def test_health_job_of_deleted_model_is_a_no_op(redis_connection):
    assert jobs.health_check_job(123456)["error_code"] == "not_found"


def test_registration_enqueues_a_health_check_run_by_a_worker(redis_connection, task, user):
    with model_server() as server:
        model = services.model_register(task=task, owner=user, name="r", endpoint_url=server.url)
        assert django_rq.get_queue("health").count == 1
        work("health")
    model.refresh_from_db()
    assert model.status == ModelStatus.HEALTHY


def test_health_check_all_fans_out(redis_connection, task, user):
    with model_server() as server:
        for name in ("a", "b"):
            services.model_register(task=task, owner=user, name=name, endpoint_url=server.url)
        services.model_register(task=task, owner=user, name="file", protocol="none")
        django_rq.get_queue("health").empty()  # drop the registration checks
        job = queues.enqueue_health_check_all()
        assert job.timeout == queues.HEALTH_ALL_JOB_TIMEOUT
        assert job.failure_ttl == queues.HEALTH_FAILURE_TTL
        work("health")  # runs the fan-out job and then the two checks it enqueued
    assert job.latest_result().return_value == {"enqueued": 2}
    statuses = dict(RegisteredModel.objects.values_list("name", "status"))
    assert statuses == {"a": "healthy", "b": "healthy", "file": "unknown"}


def test_predict_through_live_queue_with_simple_worker(redis_connection, model):
    with model_server() as server:
        RegisteredModel.objects.filter(pk=model.pk).update(endpoint_url=server.url)
        model.refresh_from_db()
        job_id = queues.enqueue_predict(model, [INPUT])
        assert queues.predict_result(job_id) is None  # pending
        queued = django_rq.get_queue("live").fetch_job(job_id)
        assert queued.ttl == queues.LIVE_QUEUED_TTL and queued.result_ttl == queues.LIVE_RESULT_TTL
        assert queued.args == (model.pk, [INPUT])  # ids, never the instance or the token
        work("live")
    result = queues.predict_result(job_id, wait_seconds=1)
    assert result["outputs"][0]["label"] == "positive"
    assert result["model_version"] == "const-1"
    assert result["latency_ms"] > 0


def test_predict_job_errors_have_codes(redis_connection, model):
    RegisteredModel.objects.filter(pk=model.pk).update(endpoint_url=dead_url())
    result = jobs.predict_job(model.pk, [INPUT])
    assert result["error"]["code"] == "model.unreachable"
    assert result["error"]["retryable"] is True
    assert jobs.predict_job(987654, [INPUT])["error"]["code"] == "not_found"


def test_predict_result_of_unknown_job(redis_connection):
    assert queues.predict_result("nope")["error"]["code"] == "not_found"


def test_predict_endpoint_job_needs_no_db_and_refuses_tokens(redis_connection):
    with model_server() as server:
        result = jobs.predict_endpoint_job(
            {"url": server.url}, "sentiment", demo_config("sentiment"), [INPUT]
        )
        refused = jobs.predict_endpoint_job(
            {"url": server.url, "token": "x"}, "sentiment", demo_config("sentiment"), [INPUT]
        )
    assert result["outputs"][0]["label"] == "positive"
    assert refused["error"]["code"] == "model.configuration"


def test_entering_an_unreadable_token_again_queues_a_check_that_heals_it(redis_connection, model):
    from cryptography.fernet import Fernet
    from django.test import override_settings

    lost_key, new_key = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    with model_server() as server:
        with override_settings(DYNATASK_SECRET_KEYS=[lost_key]):
            RegisteredModel.objects.filter(pk=model.pk).update(
                endpoint_url=server.url, auth_token=SECRET_TOKEN
            )
        with override_settings(DYNATASK_SECRET_KEYS=[new_key]):
            assert jobs.health_check_job(model.pk)["error_code"] == "model.token_unreadable"
            model.refresh_from_db()
            assert model.status == ModelStatus.UNHEALTHY
            django_rq.get_queue("health").empty()  # the registration's own check
            services.model_update_card(model, model.owner, auth_token=SECRET_TOKEN)
            assert django_rq.get_queue("health").count == 1
            work("health")
    model.refresh_from_db()
    assert model.status == ModelStatus.HEALTHY and model.last_health_error == ""
