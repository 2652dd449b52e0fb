"""The model client: one call from a batch of examples to checked model outputs.

Contract: ``predict(endpoint, config, task_code, inputs)`` projects the inputs onto the config's
model input fields (targets are never sent), splits them into batches of
``endpoint.batch_size``, lets the endpoint's protocol adapter build the requests, sends them
through the hardened ``transport`` (at most ``endpoint.max_concurrency`` requests in flight per
endpoint URL in this process, across all callers), parses and checks every answer, and returns
the outputs in input order. Any failure raises the first ``ModelCallError`` met; the other
in-flight requests are finished or cancelled, never retried past their own policy.

``health(endpoint)`` probes an endpoint and never raises a ``ModelCallError``.

No DB and no settings: the caller passes ``EndpointSpec.allowed_hosts`` (from
``settings.MODELS_HUB_ALLOWED_HOSTS``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from models_hub.errors import (
    ModelBadResponse,
    ModelCallError,
    ModelConfigurationError,
    safe_excerpt,
    scrub,
)
from models_hub.protocols import EndpointSettings, RequestSpec, get_protocol, model_inputs
from models_hub.protocols.base import body_excerpt, rebase_output_error
from models_hub.ssrf import AddressPolicy, Resolver
from models_hub.transport import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_RETRY,
    RetryPolicy,
    request_json,
)
from tasks.config.types import TaskConfig
from tasks.metrics.jobs import job_value_problem

RAW_EXCERPT_CHARS = 2000
# The job metric whose figure the endpoint reports on /health (``tasks.metrics.jobs``).
MEMORY_METRIC = "memory_utilization"


@dataclass(frozen=True)
class EndpointSpec:
    """Everything needed to call one registered model; ``token`` never shows in ``repr``."""

    url: str
    protocol: str = "dynatask"
    token: str | None = field(default=None, repr=False)
    connect_timeout: float = 3.0
    read_timeout: float = 30.0
    batch_size: int = 32
    max_concurrency: int = 4
    # label_map, prompt_template, model, temperature, max_tokens, system_prompt, text_field...
    options: Mapping[str, Any] = field(default_factory=dict)
    allowed_hosts: tuple[str, ...] = ()
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    # True, or the path of a CA bundle for endpoints behind a private CA; never False.
    verify: bool | str = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))
        object.__setattr__(self, "allowed_hosts", tuple(self.allowed_hosts))
        if self.batch_size < 1 or self.max_concurrency < 1:
            raise ValueError("batch_size and max_concurrency must be at least 1")
        if self.verify is False:
            raise ValueError("TLS verification of model endpoints cannot be disabled")


@dataclass(frozen=True)
class PredictionResult:
    """Checked outputs (one per input, in order) and how the call went."""

    outputs: list[dict[str, Any]]
    model_version: str | None
    latency_ms: float
    raw_excerpt: str
    request_latencies_ms: tuple[float, ...] = ()
    requests_sent: int = 0


@dataclass(frozen=True)
class HealthResult:
    """The outcome of a health probe; ``error`` is a safe message when ``ok`` is False."""

    ok: bool
    latency_ms: float | None = None
    model_version: str | None = None
    memory_gb: float | None = None
    error: str | None = None
    error_code: str | None = None


# -- per-endpoint concurrency cap ------------------------------------------------------------
_semaphores: dict[tuple[str, int], threading.BoundedSemaphore] = {}
_semaphores_lock = threading.Lock()


def endpoint_semaphore(url: str, max_concurrency: int) -> threading.BoundedSemaphore:
    """Return the process-wide semaphore capping requests in flight to ``url``."""
    key = (url, max_concurrency)
    with _semaphores_lock:
        semaphore = _semaphores.get(key)
        if semaphore is None:
            semaphore = _semaphores[key] = threading.BoundedSemaphore(max_concurrency)
        return semaphore


def scrub_value(value: Any, secrets: tuple[str, ...]) -> Any:
    """Scrub secrets from every string inside a JSON-like value."""
    if not secrets:
        return value
    if isinstance(value, str):
        return scrub(value, secrets)
    if isinstance(value, list):
        return [scrub_value(item, secrets) for item in value]
    if isinstance(value, dict):
        return {
            scrub_value(key, secrets): scrub_value(item, secrets) for key, item in value.items()
        }
    return value


@dataclass
class _Job:
    """One request of a call, and where its outputs go."""

    spec: RequestSpec
    batch_inputs: list[dict[str, Any]]
    global_indexes: tuple[int, ...]
    outputs: list[dict[str, Any]] | None = None
    model_version: str | None = None
    latency_ms: float = 0.0
    raw_excerpt: str = ""


class ModelClient:
    """Calls model endpoints; holds only the (injectable) resolver and retry policy."""

    def __init__(self, *, resolver: Resolver | None = None, retry: RetryPolicy = DEFAULT_RETRY):
        self.resolver = resolver
        self.retry = retry

    def policy(self, endpoint: EndpointSpec) -> AddressPolicy:
        """Return the SSRF policy for ``endpoint``'s allowlist."""
        return AddressPolicy.build(endpoint.allowed_hosts, self.resolver)

    def predict(
        self,
        endpoint: EndpointSpec,
        config: TaskConfig,
        task_code: str,
        inputs: Sequence[Mapping[str, Any]],
        *,
        retry: RetryPolicy | None = None,
    ) -> PredictionResult:
        """Return the checked outputs of ``endpoint`` for ``inputs`` (see the module doc)."""
        started = time.perf_counter()
        if not inputs:
            return PredictionResult([], None, 0.0, "")
        protocol = get_protocol(endpoint.protocol)
        settings = EndpointSettings(endpoint.url, task_code, endpoint.options)
        policy = self.policy(endpoint)
        policy.check_url_static(endpoint.url)
        projected = model_inputs(config, inputs)

        jobs: list[_Job] = []
        for first in range(0, len(projected), endpoint.batch_size):
            batch = projected[first : first + endpoint.batch_size]
            try:
                specs = protocol.build_requests(batch, settings)
            except ModelCallError:
                raise
            except (KeyError, ValueError, TypeError) as error:
                raise ModelConfigurationError(f"cannot build the request: {error}")
            for spec in specs:
                jobs.append(
                    _Job(
                        spec,
                        [batch[index] for index in spec.example_indexes],
                        tuple(first + index for index in spec.example_indexes),
                    )
                )
        covered = sorted(index for job in jobs for index in job.global_indexes)
        if covered != list(range(len(projected))):
            raise AssertionError(f"protocol {protocol.name} does not cover every input once")

        call = _Call(self, endpoint, config, protocol, settings, policy, retry or self.retry)
        call.run(jobs)

        outputs: list[dict[str, Any]] = [{} for _ in projected]
        for job in jobs:
            assert job.outputs is not None
            for index, output in zip(job.global_indexes, job.outputs, strict=True):
                outputs[index] = output
        versions = [job.model_version for job in jobs if job.model_version]
        return PredictionResult(
            outputs=outputs,
            model_version=versions[0] if versions else None,
            latency_ms=(time.perf_counter() - started) * 1000,
            raw_excerpt=jobs[0].raw_excerpt,
            request_latencies_ms=tuple(job.latency_ms for job in jobs),
            requests_sent=len(jobs),
        )

    def health(self, endpoint: EndpointSpec) -> HealthResult:
        """Probe ``endpoint``: ``GET <url>/health`` (dynatask) or ``GET <url>`` (others)."""
        url = endpoint.url
        if endpoint.protocol == "dynatask":
            url = url.rstrip("/") + "/health"
        expect_json = endpoint.protocol == "dynatask"
        try:
            result = request_json(
                "GET",
                url,
                policy=self.policy(endpoint),
                token=endpoint.token,
                connect_timeout=endpoint.connect_timeout,
                read_timeout=min(endpoint.read_timeout, 10.0),
                max_response_bytes=min(endpoint.max_response_bytes, 100_000),
                retry=RetryPolicy(max_attempts=1),
                verify=endpoint.verify,
                expect_json=expect_json,
            )
        except ModelCallError as error:
            return HealthResult(ok=False, error=str(error), error_code=error.code)
        body = result.body if isinstance(result.body, dict) else {}
        status = body.get("status", "ok")
        memory = body.get("memory_gb")
        version = body.get("model_version")
        version = str(version)[:200] if version is not None else None
        problem = job_value_problem(MEMORY_METRIC, memory)
        if problem is not None:
            # A figure that is no measurement is refused whole: it would be stored, averaged
            # and exchanged through an AMRS on every leaderboard of the task.
            return HealthResult(
                ok=False,
                latency_ms=result.latency_ms,
                model_version=version,
                error=f"/health memory_gb {problem}",
                error_code=ModelBadResponse.code,
            )
        return HealthResult(
            ok=status == "ok",
            latency_ms=result.latency_ms,
            model_version=version,
            memory_gb=None if memory is None else float(memory),
            error=None if status == "ok" else f"the model reports status {str(status)[:100]!r}",
        )


class _Call:
    """The requests of one ``predict`` call, sent under the endpoint's concurrency cap."""

    def __init__(self, client, endpoint, config, protocol, settings, policy, retry):
        self.client = client
        self.endpoint: EndpointSpec = endpoint
        self.config: TaskConfig = config
        self.protocol = protocol
        self.settings: EndpointSettings = settings
        self.policy: AddressPolicy = policy
        self.retry: RetryPolicy = retry
        self.secrets = tuple(secret for secret in (endpoint.token,) if secret)
        self.failed = threading.Event()

    def run(self, jobs: list[_Job]) -> None:
        """Run every job; raise the first error (in input order among those that failed)."""
        if len(jobs) == 1:
            self.run_job(jobs[0])
            return
        workers = min(self.endpoint.max_concurrency, len(jobs))
        with ThreadPoolExecutor(workers, thread_name_prefix="model-call") as executor:
            futures = [executor.submit(self.run_job, job) for job in jobs]
            _done, pending = wait(futures, return_when=FIRST_EXCEPTION)
            if pending:
                self.failed.set()
                for future in pending:
                    future.cancel()
        # Leaving the executor waited for the running requests; report in input order.
        for future in futures:
            if future.cancelled():
                continue
            error = future.exception()
            if error is not None and not isinstance(error, _Skipped):
                raise error

    def run_job(self, job: _Job) -> None:
        """Send one request and parse its answer into ``job``."""
        semaphore = endpoint_semaphore(self.endpoint.url, self.endpoint.max_concurrency)
        with semaphore:
            if self.failed.is_set():
                # Another request of this call failed: the call fails anyway, send no more.
                raise _Skipped()
            try:
                result = request_json(
                    job.spec.method,
                    job.spec.url,
                    policy=self.policy,
                    json_body=job.spec.json_body,
                    token=self.endpoint.token,
                    connect_timeout=self.endpoint.connect_timeout,
                    read_timeout=self.endpoint.read_timeout,
                    max_response_bytes=self.endpoint.max_response_bytes,
                    retry=self.retry,
                    verify=self.endpoint.verify,
                )
            except ModelCallError:
                self.failed.set()
                raise
        # Everything below derives from the scrubbed body: an endpoint echoing the token back
        # cannot get it into an output, an error message or a stored excerpt.
        body = scrub_value(result.body, self.secrets)
        try:
            outputs = self.protocol.parse_response(
                body, job.batch_inputs, self.config, self.settings
            )
        except ModelBadResponse as error:
            self.failed.set()
            index = getattr(error, "example_index", None)
            if index is not None and 0 <= index < len(job.global_indexes):
                raise rebase_output_error(
                    error, job.global_indexes[index], job.batch_inputs[index].get("uid")
                )
            raise
        except ModelCallError:
            self.failed.set()
            raise
        job.outputs = outputs
        job.model_version = self.protocol.model_version(body)
        job.latency_ms = result.latency_ms
        job.raw_excerpt = safe_excerpt(body_excerpt(body), limit=RAW_EXCERPT_CHARS)


class _Skipped(Exception):
    """A request not sent because another request of the same call already failed."""


_default_client = ModelClient()


def predict(
    endpoint: EndpointSpec,
    config: TaskConfig,
    task_code: str,
    inputs: Sequence[Mapping[str, Any]],
    *,
    retry: RetryPolicy | None = None,
) -> PredictionResult:
    """Call ``endpoint`` with the default client (the system resolver)."""
    return _default_client.predict(endpoint, config, task_code, inputs, retry=retry)


def health(endpoint: EndpointSpec) -> HealthResult:
    """Probe ``endpoint`` with the default client."""
    return _default_client.health(endpoint)
