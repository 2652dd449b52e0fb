"""What a model reports about itself on /health cannot break a board (issue 30, point 6).

A real loopback server answers the hostile figures; the probe refuses every one that is not
a plausible measurement with a health error naming the field and the reason, and stores
nothing of it.
"""

from __future__ import annotations

import pytest

from models_hub import calls as hub_calls
from models_hub import services
from models_hub.client import EndpointSpec, ModelClient
from models_hub.models import ModelStatus, RegisteredModel
from models_hub.transport import RetryPolicy
from tests.models_hub.servers import RecordingServer, ReportingHandler, running

ONE_TRY = RetryPolicy(max_attempts=1)

HOSTILE = [
    # (the /health body, what the error must say)
    (b'{"status": "ok", "memory_gb": 1e400}', "1e400"),  # Python's json reads infinity
    (b'{"status": "ok", "memory_gb": -1e400}', "-1e400"),
    (b'{"status": "ok", "memory_gb": NaN}', "NaN"),
    (b'{"status": "ok", "memory_gb": Infinity}', "Infinity"),
    (b'{"status": "ok", "memory_gb": 1e308}', "memory_gb"),
    (b'{"status": "ok", "memory_gb": 5000}', "memory_gb"),
    (b'{"status": "ok", "memory_gb": -1}', "memory_gb"),
    (b'{"status": "ok", "memory_gb": -0.001}', "memory_gb"),
    (b'{"status": "ok", "memory_gb": true}', "memory_gb"),
    (b'{"status": "ok", "memory_gb": "3"}', "memory_gb"),
    (b'{"status": "ok", "memory_gb": [1]}', "memory_gb"),
]


def probe(body: bytes):
    with running(RecordingServer(ReportingHandler, health_body=body)) as server:
        spec = EndpointSpec(url=server.url, protocol="dynatask", allowed_hosts=("127.0.0.1",))
        return ModelClient(retry=ONE_TRY).health(spec)


@pytest.mark.parametrize(("body", "named"), HOSTILE)
def test_the_probe_refuses_a_figure_that_is_no_plausible_measurement(body, named):
    result = probe(body)
    assert result.ok is False
    assert result.memory_gb is None
    assert named in result.error
    assert result.error_code == "model.bad_response"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"status": "ok", "memory_gb": 1e308}', "at most 1024"),
        (b'{"status": "ok", "memory_gb": -1}', "negative"),
        (b'{"status": "ok", "memory_gb": true}', "not a number"),
        (b'{"status": "ok", "memory_gb": "3"}', "not a number"),
    ],
)
def test_the_health_error_says_why(body, reason):
    error = probe(body).error
    assert error.startswith("/health memory_gb ")
    assert reason in error


@pytest.mark.parametrize("figure", [b"0", b"0.0", b"0.5", b"16", b"1024", b"null"])
def test_plausible_figures_are_accepted(figure):
    result = probe(b'{"status": "ok", "memory_gb": ' + figure + b"}")
    assert result.ok is True, result.error
    expected = None if figure == b"null" else float(figure)
    assert result.memory_gb == expected
    assert type(result.memory_gb) in (float, type(None))


@pytest.mark.django_db
@pytest.mark.parametrize(("body", "named"), HOSTILE[:2] + HOSTILE[4:5] + HOSTILE[8:9])
def test_a_health_check_keeps_no_bad_figure(task, user, body, named):
    model = services.model_register(
        task=task, owner=user, name="m", endpoint_url="http://127.0.0.1:9/"
    )
    RegisteredModel.objects.filter(pk=model.pk).update(memory_gb=2.0)
    with running(RecordingServer(ReportingHandler, health_body=body)) as server:
        RegisteredModel.objects.filter(pk=model.pk).update(endpoint_url=server.url)
        hub_calls.model_record_health(model.pk)
    model.refresh_from_db()
    assert model.status == ModelStatus.UNHEALTHY
    assert named in model.last_health_error
    assert model.memory_gb == 2.0  # the last plausible figure stays
