"""Querysets compiled once: the same instances as the ORM's, one query each, bad values refused."""

from __future__ import annotations

import pytest
from django.db import DataError, NotSupportedError, connection, transaction
from django.db.models import F, IntegerField, Max, Min, Prefetch, Value
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from annotation.models import Example
from annotation.selectors import _TASK_WITH_OWNERSHIP
from dynatask_site.precompiled import (
    ChainedWrite,
    PrecompiledInsert,
    PrecompiledQuery,
    PrecompiledRows,
    PrecompiledUpdate,
    _inline_constants,
    _literal,
    chains_writes,
    first_together,
)
from tasks.models import Context, Task
from tests.factories import (
    ContextFactory,
    ExampleFactory,
    ModelFactory,
    TaskFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

RELATED = ("model", "model__task", "model__task__current_config", "config_version", "context")


def _example_query(pk):
    return Example.objects.select_related(*RELATED).filter(pk=pk).order_by()[:1]


EXAMPLE = PrecompiledQuery(_example_query, pk=int)
# The create page's task lookup, with the viewer's ownership annotated.
TASK_WITH_OWNERSHIP = _TASK_WITH_OWNERSHIP


def _state(instance, related=()):
    """Every concrete field's value of ``instance`` and of its ``related`` rows."""
    values = {field.attname: getattr(instance, field.attname) for field in instance._meta.fields}
    for path in related:
        target = instance
        for name in path.split("__"):
            assert name in target._state.fields_cache, f"{path} was not loaded with the row"
            target = getattr(target, name)
        values[path] = {
            field.attname: getattr(target, field.attname) for field in target._meta.fields
        }
    return values


def test_instances_equal_the_querysets_with_related_rows_and_json():
    task = TaskFactory()
    model = ModelFactory(task=task, options={"threshold": 0.5, "labels": ["a", "é"]})
    example = ExampleFactory(task=task, model=model, input={"statement": "<b>hé</b>"})
    ExampleFactory(task=task)  # another row: not returned

    (expected,) = list(_example_query(example.pk))
    got = EXAMPLE.first(pk=example.pk)
    assert type(got) is Example and got.pk == example.pk
    assert _state(got, RELATED) == _state(expected, RELATED)
    assert got.input == {"statement": "<b>hé</b>"}  # JSON decoded by the field's converter
    assert got.model.options == {"threshold": 0.5, "labels": ["a", "é"]}
    assert got._state.adding is False and got._state.db == "default"
    # The instance saves like any other.
    got.goal_label = "negative"
    got.save(update_fields=["goal_label"])
    assert Example.objects.get(pk=example.pk).goal_label == "negative"


def test_annotations_are_set_from_the_real_values():
    owner, other = UserFactory(), UserFactory()
    task = TaskFactory(owners=[owner])
    mine = TASK_WITH_OWNERSHIP.first(code=task.code, user_id=owner.pk)
    theirs = TASK_WITH_OWNERSHIP.first(code=task.code, user_id=other.pk)
    assert (mine.viewer_owns, theirs.viewer_owns) == (True, False)
    assert mine.current_config.pk == task.current_config_id
    assert TASK_WITH_OWNERSHIP.first(code="no-such-task", user_id=owner.pk) is None


def test_one_query_per_call_and_none_for_values_that_cannot_match(django_assert_num_queries):
    example = ExampleFactory()
    EXAMPLE.first(pk=example.pk)  # compiled on first use
    with django_assert_num_queries(1):
        assert EXAMPLE.first(pk=str(example.pk)).pk == example.pk
    with django_assert_num_queries(0):
        for hostile in ("1 OR 1=1", "x", "", None, True, 1.5, 2**63, "-" + "9" * 30):
            assert EXAMPLE.fetch(pk=hostile) == []


def test_a_parameter_in_the_select_list_gets_the_real_value():
    """On PostgreSQL Django wraps such a value in a database type (``Int4``)."""
    task = TaskFactory()
    numbered = PrecompiledQuery(
        lambda number: Task.objects.annotate(
            number=Value(number, output_field=IntegerField())
        ).filter(pk=number)[:1],
        number=int,
    )
    found = numbered.first(number=task.pk)
    assert (found.pk, found.number) == (task.pk, task.pk)


def test_parameters_must_reach_the_sql_unchanged():
    written = PrecompiledQuery(
        lambda number: Task.objects.extra(select={"twice": f"{number} * 2"}).filter(pk=number),
        number=int,
    )
    with pytest.raises(TypeError, match="written into the SQL"):
        written.first(number=1)
    by_prefix = PrecompiledQuery(
        lambda code: Task.objects.filter(code__startswith=code)[:1], code=str
    )
    with pytest.raises(TypeError, match="did not reach the SQL unchanged"):
        by_prefix.first(code="ta")
    with pytest.raises(TypeError, match="expected the parameters"):
        EXAMPLE.fetch(id=1)
    with pytest.raises(TypeError, match="only int and str"):
        PrecompiledQuery(lambda when: Task.objects.filter(created_at=when), when=float)


def test_word_and_integer_constants_are_literals_and_the_rest_stay_parameters():
    """A generic plan (made without the parameters' values) can then match a partial index's
    condition and read the constants' statistics. Only words and integers are written in."""
    task = TaskFactory()
    hostile = "it's 100% -- not a word"
    wanted = [
        ExampleFactory(task=task, goal_label=hostile, time_spent_ms=0),
        ExampleFactory(task=task, goal_label="pos-1.0:x", time_spent_ms=3),
    ]
    ExampleFactory(task=task, goal_label="other", time_spent_ms=0)
    ExampleFactory(goal_label=hostile, time_spent_ms=0)  # another task

    def build(task_id):
        return Example.objects.filter(
            task_id=task_id,
            validation_state="pending",
            goal_label__in=[hostile, "pos-1.0:x"],
            validation_count__gte=0,
        ).order_by("id")

    query = PrecompiledQuery(build, task_id=int)
    assert [example.pk for example in query.fetch(task_id=task.pk)] == [
        example.pk for example in wanted
    ]
    assert [example.pk for example in build(task.pk)] == [example.pk for example in wanted]
    plan = query._plan("default")
    assert "= 'pending'" in plan.sql and "'pos-1.0:x')" in plan.sql and ">= 0" in plan.sql
    assert hostile not in plan.sql
    # Left as parameters: the call's task_id and the string that is not a word.
    assert plan.sql.count("%s") == len(plan.slots) == 2
    assert sorted(plan.slots, key=str) == sorted([("task_id", None), (None, hostile)], key=str)


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        ("pending", "'pending'"),
        ("", "''"),
        (7, "7"),
        (-5, "(-5)"),  # never "--5", a comment
        ("it's", None),
        ("100%", None),
        ("two words", None),
        (True, None),
        (1.5, None),
        (None, None),
    ],
)
def test_only_words_and_integers_become_literals(value, literal):
    assert _literal(value) == literal


def test_inlining_skips_escaped_percent_signs_and_counts_the_placeholders():
    sql = "SELECT 1 WHERE a LIKE '%%x' AND b = %s AND c = %s"
    assert _inline_constants(sql, ((None, "x"), ("pk", None))) == (
        "SELECT 1 WHERE a LIKE '%%x' AND b = 'x' AND c = %s",
        (("pk", None),),
    )
    with pytest.raises(TypeError, match="more placeholders"):
        _inline_constants(sql, ((None, "x"),))
    with pytest.raises(TypeError, match="fewer placeholders"):
        _inline_constants(sql, ((None, "x"), ("pk", None), (None, 3)))


@pytest.mark.skipif(connection.vendor != "postgresql", reason="reads PostgreSQL's plans")
def test_explain_reads_the_plans_and_leaves_the_session_as_it_was():
    example = ExampleFactory()
    assert "annotation_example" in EXAMPLE.explain(pk=example.pk)
    generic = EXAMPLE.explain(generic=True, pk=example.pk)
    assert "$1" in generic  # made without the value
    with connection.cursor() as cursor:
        cursor.execute("SHOW plan_cache_mode")
        assert cursor.fetchone()[0] == "auto"
    assert EXAMPLE.first(pk=example.pk).pk == example.pk
    with pytest.raises(ValueError, match="not of the types"):
        EXAMPLE.explain(pk="1 OR 1=1")


@pytest.mark.parametrize(
    "build",
    [
        lambda pk: Task.objects.filter(pk=pk).prefetch_related(Prefetch("owners")),
        lambda pk: Task.objects.filter(pk=pk).values("code"),
    ],
    ids=["prefetch", "values"],
)
def test_unsupported_shapes_are_refused(build):
    task = TaskFactory()
    with pytest.raises(TypeError):
        PrecompiledQuery(build, pk=int).fetch(pk=task.pk)


LOCKED = PrecompiledQuery(
    lambda pk: Example.objects.select_for_update(of=("self",))
    .select_related("config_version")
    .filter(pk=pk)
    .order_by()[:1],
    pk=int,
)


@pytest.mark.django_db(transaction=True)
def test_a_locking_query_runs_only_inside_a_transaction():
    example = ExampleFactory()
    with pytest.raises(TransactionManagementError):  # refused before it is compiled
        LOCKED.first(pk=example.pk)
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        locked = LOCKED.first(pk=example.pk)
    assert locked.pk == example.pk and locked.config_version.pk == example.config_version_id
    if connection.features.has_select_for_update:
        assert "FOR UPDATE" in queries[-1]["sql"]
    with pytest.raises(TransactionManagementError):  # and after, from the compiled plan
        LOCKED.first(pk=example.pk)


def _bounds_by_tag(round_id, tag):
    # Aggregates grouped by one column, named out of their SQL order, and a JSON column.
    return (
        Context.objects.filter(round_id=round_id, tag=tag)
        .order_by()
        .values("tag")
        .annotate(low=Min("id"), high=Max("id"), served=Max("times_served"))
        .values_list("served", "tag", "high", "low")
    )


def test_rows_equal_the_querysets_values_lists(django_assert_num_queries):
    task = TaskFactory()
    contexts = [ContextFactory(task=task, tag=tag) for tag in ("a", "a", "b")]
    Context.objects.filter(pk=contexts[1].pk).update(times_served=4)
    round_id = contexts[0].round_id
    bounds = PrecompiledRows(_bounds_by_tag, round_id=int, tag=str)
    data = PrecompiledRows(
        lambda pk: Context.objects.filter(pk=pk).values_list("data", "tag", "created_at"),
        pk=int,
    )
    for tag in ("a", "b", "none"):
        assert bounds.rows(round_id=round_id, tag=tag) == list(_bounds_by_tag(round_id, tag))
    assert bounds.rows(round_id=round_id, tag="a") == [(4, "a", contexts[1].pk, contexts[0].pk)]
    (row,) = data.rows(pk=contexts[2].pk)
    assert row == next(
        iter(Context.objects.filter(pk=contexts[2].pk).values_list("data", "tag", "created_at"))
    )
    assert isinstance(row[0], dict) and row[2].tzinfo is not None  # through the converters
    with django_assert_num_queries(1):
        bounds.rows(round_id=round_id, tag="a")
    with django_assert_num_queries(0):
        assert bounds.rows(round_id="1 OR 1=1", tag="a") == []
        assert bounds.rows(round_id=round_id, tag=7) == []


@pytest.mark.parametrize(
    "build",
    [
        lambda pk: Task.objects.filter(pk=pk),
        lambda pk: Task.objects.filter(pk=pk).values("code"),
        lambda pk: Task.objects.filter(pk=pk).values_list("code", flat=True),
        lambda pk: Task.objects.filter(pk=pk).values_list("code", named=True),
    ],
    ids=["instances", "values", "flat", "named"],
)
def test_rows_take_only_plain_values_lists(build):
    task = TaskFactory()
    with pytest.raises(TypeError, match="values_list"):
        PrecompiledRows(build, pk=int).rows(pk=task.pk)


def test_updates_move_by_the_values_given_and_return_the_rows_changed(
    django_assert_num_queries,
):
    """Through the stats hooks' counter moves (``annotation.stats._move_counters``): an
    UPDATE compiled once per shape, the amounts as parameters, never below zero."""
    from annotation.stats import _move_counters

    first, second = ContextFactory(), ContextFactory()

    def move(pk, by):
        return _move_counters(Context, {"pk": pk}, {"times_served": by})

    assert move(first.pk, 5) == 1
    with django_assert_num_queries(1):
        assert move(first.pk, 2) == 1
    assert move(first.pk, -3) == 1
    assert move(0, 1) == 0
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.times_served, second.times_served) == (4, 0)
    assert move(first.pk, -10) == 1  # never below zero
    first.refresh_from_db()
    assert first.times_served == 0
    with pytest.raises(ValueError):
        move("x", 1)
    # The bare mechanism, a value not of its type: refused before any query.
    served = PrecompiledUpdate(
        lambda pk: (Context.objects.filter(pk=pk), {"times_served": F("times_served") + 1}),
        pk=int,
    )
    with pytest.raises(ValueError):
        served.run(pk="x")


def test_column_updates_take_values_of_any_type_and_match_exactly(django_assert_num_queries):
    from django.utils import timezone

    from dynatask_site.precompiled import ColumnUpdate

    example = ExampleFactory(status="awaiting_model", model_wrong=None, retracted=False)
    other = ExampleFactory(status="awaiting_model", model_wrong=None)
    answer = ColumnUpdate(
        Example,
        set_fields=("status", "model_output", "model_wrong", "model_latency_ms", "updated_at"),
        where_fields=("id", "status", "retracted"),
    )
    when = timezone.now()
    changes = {
        "status": "model_answered",
        "model_output": {"label": "négatif", "prob": [0.5, 0.5]},
        "model_wrong": None,
        "model_latency_ms": None,
        "updated_at": when,
    }
    match = {"id": example.pk, "status": "awaiting_model", "retracted": False}
    with django_assert_num_queries(1):
        assert answer.run(changes, match) == 1
    assert answer.run(changes, match) == 0  # no longer awaiting: nothing matches
    assert answer.run(changes, {**match, "id": other.pk, "retracted": True}) == 0
    example.refresh_from_db()
    other.refresh_from_db()
    assert (example.status, example.model_output, example.model_wrong) == (
        "model_answered",
        {"label": "négatif", "prob": [0.5, 0.5]},
        None,
    )
    assert example.updated_at == when and other.status == "awaiting_model"
    with pytest.raises(ValueError):
        answer.run(changes, {**match, "status": None})
    with pytest.raises(TypeError):
        answer.run({"status": "x"}, match)


EXAMPLE_INSERT = PrecompiledInsert(Example)


def _new_example_values(task, user, **extra):
    return {
        "task": task,
        "round": task.rounds.get(number=1),
        "context": ContextFactory(task=task),
        "config_version": task.current_config,
        "user": user,
        "input": {"statement": "It's <b>fine</b> \u2713", "label": "positive"},
        "goal_label": "positive",
        "time_spent_ms": 1200,
        **extra,
    }


def test_an_insert_writes_the_row_the_orm_writes(django_assert_num_queries):
    from django.db.models.signals import post_save, pre_save

    task, user = TaskFactory(), UserFactory()
    seen = []

    def record(signal):
        def receiver(sender, instance, **kwargs):
            seen.append((signal, instance.pk, kwargs.get("created"), kwargs["using"]))

        return receiver

    on_pre, on_post = record("pre"), record("post")
    pre_save.connect(on_pre, sender=Example)
    post_save.connect(on_post, sender=Example)
    try:
        values = _new_example_values(task, user)
        with django_assert_num_queries(1):  # the INSERT, nothing compiled or read back
            fast = EXAMPLE_INSERT.create(**values)
        orm = Example.objects.create(**values)
    finally:
        pre_save.disconnect(on_pre, sender=Example)
        post_save.disconnect(on_post, sender=Example)
    assert seen == [
        ("pre", None, None, "default"),
        ("post", fast.pk, True, "default"),
        ("pre", None, None, "default"),
        ("post", orm.pk, True, "default"),
    ]
    assert fast.pk and not fast._state.adding and fast._state.db == "default"
    assert fast.created_at is not None and fast.updated_at is not None

    def row(pk):
        stored = Example.objects.filter(pk=pk).values().get()
        return {k: v for k, v in stored.items() if k not in ("id", "created_at", "updated_at")}

    assert row(fast.pk) == row(orm.pk)
    stored = Example.objects.get(pk=fast.pk)
    assert stored.created_at == fast.created_at and stored.updated_at == fast.updated_at
    assert stored.input == values["input"] and stored.status == "awaiting_model"


def test_an_insert_with_an_expression_goes_through_the_orm():
    task, user = TaskFactory(), UserFactory()
    example = EXAMPLE_INSERT.create(
        **_new_example_values(task, user, time_spent_ms=Value(5) + Value(2))
    )
    assert Example.objects.get(pk=example.pk).time_spent_ms == 7


def test_an_insert_refuses_an_unsaved_related_row():
    task, user = TaskFactory(), UserFactory()
    values = _new_example_values(task, user)
    values["context"] = Context(task=task, round=values["round"], data={})
    with pytest.raises(ValueError, match="unsaved related object"):
        EXAMPLE_INSERT.create(**values)


def test_an_insert_refuses_a_model_with_a_parent_table():
    from types import SimpleNamespace

    from django.db import NotSupportedError

    class Child:  # what PrecompiledInsert reads of a multi-table child's options
        _meta = SimpleNamespace(parents={Example: None}, proxy=False, label="tests.Child")

    with pytest.raises(NotSupportedError, match="parent table"):
        PrecompiledInsert(Child)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="chained writes: PostgreSQL")
def test_chained_writes_run_in_one_statement_in_their_order(django_assert_num_queries):
    """The INSERT and its chained writes are one statement, atomic by itself; each write
    sees the one before it finished (here: the second write counts the first one's rows)."""
    task, user = TaskFactory(), UserFactory()
    values = _new_example_values(task, user)
    context, other = values["context"], ContextFactory(task=task)
    seen = []

    def writes_for(instance):
        seen.append((instance.pk, instance.context_id))
        return [
            ChainedWrite(
                'UPDATE "tasks_context" SET "times_served" = "tasks_context"."times_served" + %s '
                'FROM {after} WHERE "tasks_context"."id" = %s RETURNING 1',
                (5, instance.context_id),
            ),
            # The row count of the write before, as this one runs: 1 only if it finished.
            ChainedWrite(
                'UPDATE "tasks_context" SET "example_count" = after_write_0.count '
                'FROM {after} WHERE "tasks_context"."id" = %s RETURNING 1',
                (other.pk,),
            ),
            ChainedWrite("SELECT 1 FROM {after} WHERE false"),  # touches no row
        ]

    with django_assert_num_queries(1) as captured:
        example, moved = EXAMPLE_INSERT.create_chained(writes_for, **values)
    assert captured.captured_queries[0]["sql"].startswith("WITH inserted AS (INSERT INTO")
    assert seen == [(None, context.pk)]  # the writes are built before the statement runs
    assert moved == (1, 1, 0)
    assert example.pk and not example._state.adding
    assert Example.objects.filter(pk=example.pk).exists()
    context.refresh_from_db()
    other.refresh_from_db()
    assert (context.times_served, other.example_count) == (5, 1)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="chained writes: PostgreSQL")
def test_writes_chained_to_an_update_run_in_order_and_only_when_it_matched(
    django_assert_num_queries,
):
    """One statement; each write sees the one before it finished; when the UPDATE matches
    no row, no write moves one."""
    from dynatask_site.precompiled import ColumnUpdate

    task = TaskFactory()
    example = ExampleFactory(task=task, status="awaiting_model", retracted=False)
    context, other = ContextFactory(task=task), ContextFactory(task=task)
    answer = ColumnUpdate(Example, set_fields=("status",), where_fields=("id", "status"))
    writes = [
        ChainedWrite(
            'UPDATE "tasks_context" SET "times_served" = "tasks_context"."times_served" + %s '
            'FROM {after} WHERE "tasks_context"."id" = %s RETURNING 1',
            (5, context.pk),
        ),
        ChainedWrite(
            'UPDATE "tasks_context" SET "example_count" = after_write_0.count '
            'FROM {after} WHERE "tasks_context"."id" = %s RETURNING 1',
            (other.pk,),
        ),
    ]
    match = {"id": example.pk, "status": "awaiting_model"}
    with django_assert_num_queries(1) as captured:
        assert answer.run_chained({"status": "model_answered"}, match, writes) == (1, (1, 1))
    assert captured.captured_queries[0]["sql"].startswith('WITH updated AS (UPDATE "annotation')
    # No longer awaiting: the UPDATE matches nothing, and neither write moves a row.
    assert answer.run_chained({"status": "model_failed"}, match, writes) == (0, (0, 0))
    example.refresh_from_db()
    context.refresh_from_db()
    other.refresh_from_db()
    assert example.status == "model_answered"
    assert (context.times_served, other.example_count) == (5, 1)
    with pytest.raises(TypeError):
        answer.run_chained({"model_wrong": True}, match, writes)


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="chained writes: PostgreSQL")
def test_a_chained_write_that_fails_leaves_no_row():
    """In autocommit, with no transaction or savepoint around it: the statement is atomic."""
    task, user = TaskFactory(), UserFactory()
    values = _new_example_values(task, user)
    before = Example.objects.count()

    def failing(instance):
        return [ChainedWrite("SELECT 1 FROM {after} WHERE 1 / (after_inserted.count - 1) > 0")]

    assert connection.get_autocommit() and not connection.in_atomic_block
    with pytest.raises(DataError):
        EXAMPLE_INSERT.create_chained(failing, **values)
    assert Example.objects.count() == before


def test_chained_writes_refuse_expressions_and_databases_other_than_postgresql():
    task, user = TaskFactory(), UserFactory()
    values = _new_example_values(task, user, time_spent_ms=Value(5))
    with pytest.raises(NotSupportedError):
        EXAMPLE_INSERT.create_chained(lambda instance: [], **values)
    assert chains_writes() is (connection.vendor == "postgresql")
    if not chains_writes():
        from dynatask_site.precompiled import ColumnUpdate

        with pytest.raises(NotSupportedError):
            EXAMPLE_INSERT.create_chained(lambda instance: [], **_new_example_values(task, user))
        update = ColumnUpdate(Example, set_fields=("status",), where_fields=("id",))
        with pytest.raises(NotSupportedError):
            update.run_chained({"status": "model_answered"}, {"id": 1}, [])


def test_first_together_reads_each_lookups_first_row_in_one_statement(django_assert_num_queries):
    owner = UserFactory()
    task = TaskFactory(owners=[owner])
    model = ModelFactory(task=task)
    example = ExampleFactory(task=task, model=model, input={"statement": "<b>hé</b>"})
    lookups = [
        (EXAMPLE, {"pk": example.pk}),
        (TASK_WITH_OWNERSHIP, {"code": task.code, "user_id": owner.pk}),
        (TASK_WITH_OWNERSHIP, {"code": "no-such-task", "user_id": owner.pk}),
        (EXAMPLE, {"pk": "1 OR 1=1"}),  # cannot match: no part in the statement
    ]
    alone = [query.first(**values) for query, values in lookups]
    with django_assert_num_queries(1):
        together = first_together(*lookups)
    assert together[2:] == [None, None] == alone[2:]
    assert _state(together[0], RELATED) == _state(alone[0], RELATED)
    assert together[0].input == {"statement": "<b>hé</b>"}
    assert _state(together[1], ["current_config"]) == _state(alone[1], ["current_config"])
    assert together[1].viewer_owns is True
    # A row found after one that was not: each part is read from its own columns.
    missing_first = first_together(lookups[2], lookups[1])
    assert missing_first[0] is None and missing_first[1].pk == task.pk
    with django_assert_num_queries(1):
        assert first_together(lookups[2], (EXAMPLE, {"pk": 2**40})) == [None, None]
    with django_assert_num_queries(0):
        assert first_together(lookups[3]) == [None]


def test_first_together_refuses_queries_of_many_rows_or_with_locks():
    many = PrecompiledQuery(lambda pk: Example.objects.filter(pk__gte=pk), pk=int)
    locked = PrecompiledQuery(
        lambda pk: Example.objects.select_for_update().filter(pk=pk)[:1], pk=int
    )
    for query in (many, locked):
        with pytest.raises(NotSupportedError), transaction.atomic():
            first_together((EXAMPLE, {"pk": 1}), (query, {"pk": 1}))
