"""Querysets of a fixed shape, compiled to SQL once per process and database.

Django compiles a queryset to SQL every time it is evaluated. On the hot paths of the create
page and the live job the compiling cost more than the database: the live job's example with
its model, task, configs and context took 0.65 ms to compile, 0.3 ms to run in PostgreSQL and
to read back. A ``PrecompiledQuery`` builds its queryset once per database alias, with
placeholder values for its parameters, and keeps the SQL. Each later call runs that SQL with
the real values and turns the rows into model instances exactly as the queryset does
(``select_related`` rows and annotations included, through Django's own row converters and
related populators).

Only exact-match parameters are supported (``pk=``, ``code=``, ``round_id=``): their values go
to the database unchanged, so each one fills the place of its placeholder. A parameter whose
placeholder does not come through unchanged is refused when the query is first compiled, which
the tests of each caller exercise. The queryset's own constants that are words or integers (a
state, a kind) are written into the SQL as literals, so that PostgreSQL's generic plan of the
prepared statement sees them (``_inline_constants``); ``explain`` shows that plan.

``PrecompiledUpdate`` and ``ColumnUpdate`` do the same for hot UPDATEs, and
``PrecompiledInsert`` for a hot ``create()`` (the create and validate POSTs' rows). An insert
or a ``ColumnUpdate`` can have writes chained to it in the same statement (``create_chained``,
``run_chained``). ``first_together`` reads the first rows of several ``PrecompiledQuery``
lookups in one statement (a request's user with its task, say).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import DEFAULT_DB_ALIAS, NotSupportedError, connections, transaction
from django.db.models import QuerySet, signals
from django.db.models.query import get_related_populators
from django.db.models.sql import InsertQuery, UpdateQuery
from django.db.transaction import TransactionManagementError

# Placeholder values: integers near the top of every integer column's range (Django compiles
# an out-of-range value to "no rows", without its parameter), strings with control characters
# that no code, slug or name holds. They are only compiled, never sent to the database.
_INT_PLACEHOLDER_BASE = 2_147_483_000
_KINDS = (int, str)
# A parameter's place in Django's SQL, or an escaped percent sign.
_PARAMETER = re.compile(r"%%|%s")


def _placeholder(kind: type, position: int) -> int | str:
    if kind is int:
        return _INT_PLACEHOLDER_BASE + position
    return f"\x1fprecompiled-parameter-{position}\x1f"


@dataclass(frozen=True)
class _Plan:
    sql: str
    # Per query parameter: (None, a constant value), or (the name of a call parameter, None
    # or the type to wrap its value in).
    slots: tuple[tuple[str | None, Any], ...]
    converters: tuple[tuple[int, tuple[Callable, ...], Any], ...]
    model: type
    model_start: int
    model_end: int
    init_list: tuple[str, ...]
    populators: tuple[Any, ...]
    annotations: tuple[tuple[str, int], ...]
    # SELECT ... FOR UPDATE: runs only inside a transaction, as the ORM's does.
    for_update: bool = False
    # The columns of a row, and whether the query returns one row at most (``[:1]``).
    width: int = 0
    single: bool = False


@dataclass(frozen=True)
class _RowsPlan:
    sql: str
    slots: tuple[tuple[str | None, Any], ...]
    converters: tuple[tuple[int, tuple[Callable, ...], Any], ...]


@dataclass(frozen=True)
class _UpdatePlan:
    sql: str
    slots: tuple[tuple[str | None, Any], ...]


class _Precompiled:
    """What both kinds share: the parameters, their values, one plan per database alias."""

    def __init__(self, build: Callable, **parameters: type):
        for name, kind in parameters.items():
            if kind not in _KINDS:
                raise TypeError(f"parameter {name!r}: only int and str are supported")
        self._build = build
        self._parameters = parameters
        self._plans: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _values(self, values: dict[str, Any]) -> dict[str, int | str] | None:
        """Return ``values`` as their parameters' types, None if one is not of its type."""
        if set(values) != set(self._parameters):
            raise TypeError(f"expected the parameters {sorted(self._parameters)}")
        clean = {}
        for name, kind in self._parameters.items():
            value = _as_kind(values[name], kind)
            if value is None:
                return None
            clean[name] = value
        return clean

    def _plan(self, using: str):
        plan = self._plans.get(using)
        if plan is None:
            with self._lock:
                plan = self._plans.get(using)
                if plan is None:
                    placeholders = {
                        name: _placeholder(kind, position)
                        for position, (name, kind) in enumerate(self._parameters.items())
                    }
                    plan = self._compile(self._build(**placeholders), placeholders, using)
                    self._plans[using] = plan
        return plan

    def _compile(self, built, placeholders: dict[str, int | str], using: str):
        raise NotImplementedError

    def _check(self, plan, connection) -> None:
        """Refuse to run ``plan`` on ``connection`` in its present state (by default, never)."""

    def explain(self, using: str = DEFAULT_DB_ALIAS, *, generic: bool = False, **values: Any):
        """Return PostgreSQL's plan of the statement for ``values``, as ``QuerySet.explain``.

        ``generic``: the generic plan, made without the values, which a prepared statement
        (``server_side_binding``) may keep for every later call.
        """
        connection = connections[using]
        if connection.vendor != "postgresql":
            raise NotSupportedError("explain() reads PostgreSQL's plans only")
        clean = self._values(values)
        if clean is None:
            raise ValueError(f"the values {values!r} are not of the types {self._parameters}")
        plan = self._plan(using)
        params = _params(plan.slots, clean)
        with connection.cursor() as cursor:
            if not generic:
                cursor.execute(f"EXPLAIN {plan.sql}", params)
                return "\n".join(row[0] for row in cursor.fetchall())
            numbered = iter(range(1, len(params) + 1))
            prepared = _PARAMETER.sub(
                lambda match: "%" if match.group() == "%%" else f"${next(numbered)}", plan.sql
            )
            execute = f"EXPLAIN EXECUTE precompiled_explain({', '.join(['%s'] * len(params))})"
            cursor.execute("SET plan_cache_mode = force_generic_plan")
            try:
                cursor.execute(f"PREPARE precompiled_explain AS {prepared}")
                try:
                    cursor.execute(connection.ops.compose_sql(execute, params))
                    return "\n".join(row[0] for row in cursor.fetchall())
                finally:
                    cursor.execute("DEALLOCATE precompiled_explain")
            finally:
                cursor.execute("RESET plan_cache_mode")

    def _run(self, using: str, values: dict[str, Any]):
        """Run the statement for ``values``; return (plan, connection, rows), or None when a
        value is not of its parameter's type (it can match nothing: no query)."""
        clean = self._values(values)
        if clean is None:
            return None
        plan = self._plan(using)
        connection = connections[using]
        self._check(plan, connection)
        with connection.cursor() as cursor:
            cursor.execute(plan.sql, _params(plan.slots, clean))
            return plan, connection, cursor.fetchall()


class PrecompiledQuery(_Precompiled):
    """A queryset shape, compiled once per database; ``fetch`` and ``first`` run it.

    ``build`` takes the parameters by name and returns the queryset; ``parameters`` names
    each one's type (``int`` or ``str``). For example::

        EXAMPLE_FOR_JOB = PrecompiledQuery(
            lambda pk: Example.objects.select_related("model").filter(pk=pk)[:1], pk=int
        )
        example = EXAMPLE_FOR_JOB.first(pk=example_id)

    A value that is not of the parameter's type (a primary key that is not a number, say)
    matches nothing, as no row can hold it: ``fetch`` returns ``[]`` without a query.
    """

    def fetch(self, using: str = DEFAULT_DB_ALIAS, **values: Any) -> list:
        """Return the queryset's model instances for ``values``."""
        ran = self._run(using, values)
        if ran is None:
            return []
        plan, connection, rows = ran
        return [_instance(plan, row, connection, using) for row in rows]

    def first(self, using: str = DEFAULT_DB_ALIAS, **values: Any):
        """Return the first instance, or None (slice the queryset ``[:1]`` in ``build``)."""
        found = self.fetch(using, **values)
        return found[0] if found else None

    def _compile(self, built, placeholders, using) -> _Plan:
        return _compile_query(built, placeholders, self._parameters, using)

    def _check(self, plan, connection) -> None:
        if plan.for_update and connection.get_autocommit():
            raise TransactionManagementError(
                "select_for_update cannot be used outside of a transaction."
            )


def first_together(
    *lookups: tuple[PrecompiledQuery, Mapping[str, Any]], using: str = DEFAULT_DB_ALIAS
) -> list:
    """``query.first(**values)`` of each ``(query, values)``, from one statement.

    Each query (one row at most: sliced ``[:1]``) is ``LEFT JOIN``ed to a one-row relation,
    so the statement returns one row: each query's columns in turn, NULL where it found
    nothing. A request that needs several unrelated rows (its user, its task) reads them in
    one round trip instead of one each. A lookup whose values are not of their types finds
    nothing, without a part in the statement.
    """
    connection = connections[using]
    parts = []
    params: list = []
    for query, values in lookups:
        clean = query._values(dict(values))
        if clean is None:
            parts.append(None)
            continue
        plan = query._plan(using)
        if plan.for_update or not plan.single:
            raise NotSupportedError("first_together reads queries of one row, without locks")
        parts.append(plan)
        params.extend(_params(plan.slots, clean))
    planned = [(index, plan) for index, plan in enumerate(parts) if plan is not None]
    found: list = [None] * len(parts)
    if not planned:
        return found
    joins = " ".join(f"LEFT JOIN ({plan.sql}) AS part_{index} ON 1 = 1" for index, plan in planned)
    columns = ", ".join(f"part_{index}.*" for index, _ in planned)
    # Our own names around SQL that Django compiled; every value is a parameter.
    statement = f"SELECT {columns} FROM (SELECT 1 AS one) AS one_row {joins}"  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        row = cursor.fetchone()
    if len(row) != sum(plan.width for _, plan in planned):
        raise NotSupportedError("the statement's columns are not the ones its parts compiled")
    start = 0
    for index, plan in planned:
        part = row[start : start + plan.width]
        start += plan.width
        if part[plan.model_start + plan.init_list.index(plan.model._meta.pk.attname)] is not None:
            found[index] = _instance(plan, part, connection, using)
    return found


class PrecompiledRows(_Precompiled):
    """A ``values_list`` queryset of a fixed shape, compiled once per database; ``rows``
    returns its rows as tuples, through the same converters as the queryset.

    For the statements that return values rather than instances (aggregates grouped by a
    column, say); the same parameters as ``PrecompiledQuery``, and a value that is not of
    its parameter's type matches nothing (``[]`` without a query).
    """

    def rows(self, using: str = DEFAULT_DB_ALIAS, **values: Any) -> list[tuple]:
        ran = self._run(using, values)
        if ran is None:
            return []
        plan, connection, rows = ran
        if not plan.converters:
            return [tuple(row) for row in rows]
        return [_converted(plan.converters, row, connection) for row in rows]

    def _compile(self, built, placeholders, using) -> _RowsPlan:
        if built._iterable_class.__name__ != "ValuesListIterable":
            raise TypeError("only values_list querysets (not flat or named) are supported")
        if built._prefetch_related_lookups:
            raise TypeError("prefetch_related is not supported")
        # As ``ValuesListIterable``: the compiler selects the columns in the order
        # ``values_list`` names them; the rows go through its converters.
        compiler = built.query.get_compiler(using=using)
        sql, params = compiler.as_sql()
        fields = [column[0] for column in compiler.select[: compiler.col_count]]
        sql, slots = _inline_constants(sql, _slots(sql, params, placeholders, self._parameters))
        return _RowsPlan(
            sql=sql,
            slots=slots,
            converters=_converter_plan(compiler.get_converters(fields)),
        )


class PrecompiledUpdate(_Precompiled):
    """``queryset.update(**changes)`` of a fixed shape, compiled once per database.

    ``build`` takes the parameters by name and returns ``(queryset, changes)``, the
    queryset and the arguments of its ``update``; ``run`` returns the number of rows
    changed. The same parameters as ``PrecompiledQuery``. For example, a counter moved by
    a varying amount::

        SERVED = PrecompiledUpdate(
            lambda pk, by: (
                Context.objects.filter(pk=pk),
                {"times_served": F("times_served") + by},
            ),
            pk=int,
            by=int,
        )
        SERVED.run(pk=context.pk, by=1)

    A value that is not of its parameter's type raises ``ValueError``.
    """

    def run(self, using: str = DEFAULT_DB_ALIAS, **values: Any) -> int:
        clean = self._values(values)
        if clean is None:
            raise ValueError(f"the values {values!r} are not of the types {self._parameters}")
        plan = self._plan(using)
        with connections[using].cursor() as cursor:
            cursor.execute(plan.sql, _params(plan.slots, clean))
            return cursor.rowcount

    def _compile(self, built, placeholders, using) -> _UpdatePlan:
        queryset, changes = built
        query = queryset.query.chain(UpdateQuery)
        query.add_update_values(changes)
        query.annotations = {}
        if query.related_updates:
            raise TypeError("updates of related models are not supported")
        sql, params = query.get_compiler(using).as_sql()
        if not sql:
            raise TypeError("nothing to update")
        sql, slots = _inline_constants(sql, _slots(sql, params, placeholders, self._parameters))
        return _UpdatePlan(sql=sql, slots=slots)


# The widest integer column (bigint): a value outside cannot match and some databases
# refuse to bind it (SQLite raises OverflowError).
_INT_RANGE = range(-(2**63), 2**63)


def _as_kind(value: Any, kind: type) -> int | str | None:
    if kind is int:
        if isinstance(value, bool):
            return None
        if not isinstance(value, int):
            try:
                value = int(str(value).strip())
            except ValueError:
                return None
        return value if value in _INT_RANGE else None
    return value if isinstance(value, str) else None


def _placeholder_name(value: Any, placeholders: dict[str, int | str]) -> str | None:
    if isinstance(value, bool) or not isinstance(value, _KINDS):
        return None
    for name, placeholder in placeholders.items():
        if isinstance(value, type(placeholder)) and value == placeholder:
            return name
    return None


def _params(slots, clean: dict[str, Any]) -> list:
    return [
        value if name is None else clean[name] if value is None else value(clean[name])
        for name, value in slots
    ]


def _slots(sql: str, params, placeholders: dict[str, int | str], parameters) -> tuple:
    """Map each query parameter to a call parameter (or a constant); refuse what is lost."""
    slots = []
    seen = set()
    for value in params:
        name = _placeholder_name(value, placeholders)
        if name is None:
            slots.append((None, value))
            continue
        seen.add(name)
        # Django may wrap a value in a database type (psycopg's ``Int4`` for a ``Value`` with
        # server-side binding): the real value gets the same wrapper.
        wrapper = None if type(value) in _KINDS else type(value)
        slots.append((name, wrapper))
    inlined = sorted(name for name, value in placeholders.items() if str(value) in sql)
    if inlined:
        raise TypeError(f"the parameters {inlined} are written into the SQL, not passed")
    missing = set(parameters) - seen
    if missing:
        raise TypeError(f"the parameters {sorted(missing)} did not reach the SQL unchanged")
    return tuple(slots)


# A constant written into the SQL as a literal: a word (states, kinds, codes) needs no
# quoting beyond its two quotes and holds no percent sign.
_WORD = re.compile(r"[A-Za-z0-9_.:-]*\Z")


def _literal(value: Any) -> str | None:
    """Return ``value`` as an SQL literal if it is a plain word or an integer, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(int(value)) if value >= 0 else f"({int(value)})"
    if isinstance(value, str) and _WORD.match(value):
        return f"'{value}'"
    return None


def _inline_constants(sql: str, slots: tuple) -> tuple[str, tuple]:
    """Write the constant parameters that are words or integers into ``sql`` as literals.

    A prepared statement's generic plan is made without its parameters' values: a state
    passed as a parameter (``validation_state = $4``) cannot prove the condition of a partial
    index (``WHERE validation_state = 'pending'``), nor be looked up in the column's
    statistics. Written as a literal it can. The call parameters stay parameters.
    """
    pieces: list[str] = []
    kept = []
    position = 0
    start = 0
    for match in _PARAMETER.finditer(sql):
        if match.group() == "%%":
            continue
        if position == len(slots):
            raise TypeError("the SQL has more placeholders than parameters")
        slot = slots[position]
        position += 1
        literal = _literal(slot[1]) if slot[0] is None else None
        if literal is None:
            kept.append(slot)
            continue
        pieces.append(sql[start : match.start()])
        pieces.append(literal)
        start = match.end()
    if position != len(slots):
        raise TypeError("the SQL has fewer placeholders than parameters")
    pieces.append(sql[start:])
    return "".join(pieces), tuple(kept)


def _compile_query(queryset: QuerySet, placeholders, parameters, using: str) -> _Plan:
    if queryset._prefetch_related_lookups or queryset._known_related_objects:
        raise TypeError("prefetch_related and related managers are not supported")
    if queryset._iterable_class.__name__ != "ModelIterable":
        raise TypeError("only querysets of model instances are supported")
    query = queryset.query
    # A locking query compiles only inside a transaction (Django refuses it otherwise).
    compiler = query.get_compiler(using=using)
    sql, params = compiler.as_sql()
    sql, slots = _inline_constants(sql, _slots(sql, params, placeholders, parameters))

    select = compiler.select
    klass_info = compiler.klass_info
    fields = [column[0] for column in select[: compiler.col_count]]
    converters = compiler.get_converters(fields)
    select_fields = klass_info["select_fields"]
    start, end = select_fields[0], select_fields[-1] + 1
    return _Plan(
        sql=sql,
        slots=slots,
        converters=_converter_plan(converters),
        model=klass_info["model"],
        model_start=start,
        model_end=end,
        init_list=tuple(column[0].target.attname for column in select[start:end]),
        populators=tuple(get_related_populators(klass_info, select, using)),
        annotations=tuple(compiler.annotation_col_map.items()),
        for_update=query.select_for_update,
        width=compiler.col_count,
        single=query.high_mark is not None and query.high_mark - query.low_mark == 1,
    )


def _converter_plan(converters: dict) -> tuple:
    return tuple(
        (position, tuple(functions), expression)
        for position, (functions, expression) in converters.items()
    )


def _converted(converters: tuple, row: tuple, connection) -> tuple:
    """``row`` through the database's and the fields' converters, as Django's iterables."""
    row = list(row)
    for position, functions, expression in converters:
        value = row[position]
        for function in functions:
            value = function(value, expression, connection)
        row[position] = value
    return tuple(row)


def _instance(plan: _Plan, row: tuple, connection, using: str):
    # As ``django.db.models.query.ModelIterable``: converters, the model, its related rows,
    # then the annotations.
    if plan.converters:
        row = _converted(plan.converters, row, connection)
    instance = plan.model.from_db(
        using, list(plan.init_list), row[plan.model_start : plan.model_end]
    )
    for populator in plan.populators:
        populator.populate(row, instance)
    for name, position in plan.annotations:
        setattr(instance, name, row[position])
    return instance


class ColumnUpdate:
    """``UPDATE table SET <fields> = %s ... WHERE <match fields> = %s AND ...``, written once.

    For a hot write whose values are of any type (JSON, dates, NULLs) that
    ``PrecompiledUpdate`` cannot take as parameters: the statement is built once per
    database from the fields' columns, and each call converts its values as ``update()``
    would (``get_db_prep_save`` for the new values, ``get_db_prep_value`` for the matched
    ones). A matched value may not be None (``= NULL`` matches nothing): that raises.
    """

    def __init__(self, model: type, set_fields: Sequence[str], where_fields: Sequence[str]):
        meta = model._meta
        self._table = meta.db_table
        self._set = tuple(meta.get_field(name) for name in set_fields)
        self._where = tuple(meta.get_field(name) for name in where_fields)
        self._sql: dict[str, str] = {}

    def run(
        self, changes: Mapping[str, Any], where: Mapping[str, Any], using: str = DEFAULT_DB_ALIAS
    ) -> int:
        """Set the fields of ``changes`` to their values in the rows where the fields of
        ``where`` have theirs; return the number of rows changed."""
        sql, params = self._statement(changes, where, using)
        with connections[using].cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.rowcount

    def run_chained(
        self,
        changes: Mapping[str, Any],
        where: Mapping[str, Any],
        writes: Sequence[ChainedWrite],
        using: str = DEFAULT_DB_ALIAS,
    ) -> tuple[int, tuple[int, ...]]:
        """``run(changes, where)`` and, only when it changed a row, ``writes``, in one
        statement (PostgreSQL only: ``chains_writes``); return the rows changed and how many
        rows each write touched.

        As in ``PrecompiledInsert.create_chained``, the writes run in the order of the list,
        each after the UPDATE and every earlier write; and each joins a relation that is
        empty when the UPDATE matched nothing, so a write whose condition failed moves no
        counter.
        """
        if not chains_writes(using):
            raise NotSupportedError("chained writes need PostgreSQL")
        sql, params = self._statement(changes, where, using)
        steps, counts = _chain("updated", f"{sql} RETURNING 1", writes, params, guarded=True)
        statement = f"{steps} SELECT (SELECT count(*) FROM updated){counts}"  # noqa: S608
        with transaction.mark_for_rollback_on_error(using), connections[using].cursor() as cursor:
            cursor.execute(statement, params)
            changed, *moved = cursor.fetchone()
        return changed, tuple(moved)

    def _statement(self, changes: Mapping[str, Any], where: Mapping[str, Any], using: str):
        """The UPDATE and its parameters."""
        if set(changes) != {field.name for field in self._set} or set(where) != {
            field.name for field in self._where
        }:
            raise TypeError("the changes and matches must name the fields given at creation")
        connection = connections[using]
        params = [field.get_db_prep_save(changes[field.name], connection) for field in self._set]
        for field in self._where:
            if where[field.name] is None:
                raise ValueError(f"{field.name}: matching NULL needs IS NULL, not =")
            params.append(field.get_db_prep_value(where[field.name], connection))
        sql = self._sql.get(using)
        if sql is None:
            quote = connection.ops.quote_name
            sets = ", ".join(f"{quote(field.column)} = %s" for field in self._set)
            matches = " AND ".join(f"{quote(field.column)} = %s" for field in self._where)
            # Quoted column and table names from the model; every value is a parameter.
            table = quote(self._table)
            sql = self._sql[using] = f"UPDATE {table} SET {sets} WHERE {matches}"  # noqa: S608
        return sql, params


def _has_expression(values: Mapping[str, Any]) -> bool:
    """Whether a value is an expression (``F()``, ``Now()``), which only the ORM can write."""
    return any(hasattr(value, "resolve_expression") for value in values.values())


def chains_writes(using: str = DEFAULT_DB_ALIAS) -> bool:
    """Whether chained writes (``PrecompiledInsert.create_chained``,
    ``ColumnUpdate.run_chained``) run on this database: PostgreSQL, whose ``WITH`` takes
    INSERTs and UPDATEs (data-modifying common table expressions)."""
    return connections[using].vendor == "postgresql"


@dataclass(frozen=True)
class ChainedWrite:
    """An UPDATE or an ``INSERT ... SELECT`` run after the write it is chained to
    (``create_chained``'s INSERT, ``run_chained``'s UPDATE).

    ``sql`` holds ``{after}`` where a one-row relation goes (``... FROM {after} ...``) and
    returns a row per row it writes (``RETURNING 1``); ``params`` fill its ``%s``.
    """

    sql: str
    params: tuple = ()


def _chain(
    head: str, head_sql: str, writes: Sequence[ChainedWrite], params: list, *, guarded: bool
) -> tuple[str, str]:
    """The ``WITH`` clause of a write (``head_sql``, named ``head``) and the writes chained
    to it, and the columns that count each write's rows; the writes' parameters are added to
    ``params``, which holds the head's.

    Each write joins a one-row relation that counts the rows of the write before it
    (``{after}``), so PostgreSQL finishes every earlier write before it starts a later one.
    ``guarded``: the relation has no row when the head wrote none, and then no write does.
    Either way its ``count`` column is that count.
    """
    steps, previous = [f"{head} AS ({head_sql})"], head
    for index, write in enumerate(writes):
        counted = f"(SELECT count(*) FROM {previous})"  # noqa: S608 - our own names
        if guarded:
            counted = f"(SELECT {previous}_rows.count FROM {head}, {counted} AS {previous}_rows)"  # noqa: S608
        name = f"write_{index}"
        steps.append(
            f"{name} AS ({write.sql.replace('{after}', f'{counted} AS after_{previous}')})"
        )
        params.extend(write.params)
        previous = name
    counts = "".join(
        f", (SELECT count(*) FROM write_{i})"  # noqa: S608 - our own names
        for i in range(len(steps) - 1)
    )
    return f"WITH {', '.join(steps)}", counts


class PrecompiledInsert:
    """``Model.objects.create(**values)`` for a hot insert, its statement compiled once.

    Django compiles the INSERT of every ``create``; on the create page that took more of the
    request than any other statement. Here Django's insert compiler writes the statement once
    per database (every local concrete field but the primary key, ``RETURNING`` the primary
    key), and each call does the rest of what ``save()`` does for a new row: the model's
    defaults, each field's ``pre_save`` (``auto_now``) and ``get_db_prep_save``, the
    related-field checks, and the ``pre_save`` and ``post_save`` signals. Values that are
    expressions, and databases that cannot return the new key, go through the ORM.
    """

    def __init__(self, model: type):
        self.model = model
        meta = model._meta
        if meta.parents or meta.proxy:
            # ``save()`` writes a parent's row first: one INSERT cannot.
            raise NotSupportedError(f"{meta.label}: a model with a parent table is not supported")
        self._fields = tuple(
            field
            for field in meta.local_concrete_fields
            if field not in meta.pk_fields and not field.generated
        )
        self._sql: dict[str, str] = {}

    def create(self, using: str = DEFAULT_DB_ALIAS, **values: Any):
        connection = connections[using]
        if not connection.features.can_return_columns_from_insert or _has_expression(values):
            return self.model._default_manager.db_manager(using).create(**values)
        instance, sql, params = self._prepared(connection, using, values)
        with transaction.mark_for_rollback_on_error(using), connection.cursor() as cursor:
            cursor.execute(sql, params)
            (key,) = cursor.fetchone()
        self._saved(instance, key, using)
        return instance

    def create_chained(
        self,
        writes_for: Callable[[Any], Sequence[ChainedWrite]],
        using: str = DEFAULT_DB_ALIAS,
        **values: Any,
    ) -> tuple[Any, tuple[int, ...]]:
        """``create(**values)`` and the writes that ``writes_for(instance)`` returns, in one
        statement (PostgreSQL only: ``chains_writes``); return the saved instance and how many
        rows each write touched.

        One statement is atomic by itself: it needs no BEGIN and COMMIT, and its row locks
        are held for one round trip instead of one per write. Each write joins a one-row
        relation that counts the rows of the write before it (``{after}``), so PostgreSQL
        finishes the INSERT and every earlier write before it starts a later one: the rows are
        locked in the order of the list, as with one statement per write.
        """
        connection = connections[using]
        if not chains_writes(using) or _has_expression(values):
            raise NotSupportedError("chained writes need PostgreSQL and plain values")
        instance, sql, params = self._prepared(connection, using, values)
        steps, counts = _chain("inserted", sql, writes_for(instance), params, guarded=False)
        key = connection.ops.quote_name(self.model._meta.pk.column)
        statement = f"{steps} SELECT (SELECT {key} FROM inserted){counts}"  # noqa: S608
        with transaction.mark_for_rollback_on_error(using), connection.cursor() as cursor:
            cursor.execute(statement, params)
            key, *moved = cursor.fetchone()
        self._saved(instance, key, using)
        return instance, tuple(moved)

    def _prepared(self, connection, using: str, values: dict[str, Any]):
        """The unsaved instance, the INSERT and its parameters; ``pre_save`` sent."""
        instance = self.model(**values)
        instance._prepare_related_fields_for_save(operation_name="save")
        sql = self._sql.get(using) or self._compile(instance, using)
        signals.pre_save.send(
            sender=self.model, instance=instance, raw=False, using=using, update_fields=None
        )
        params = [
            field.get_db_prep_save(field.pre_save(instance, True), connection=connection)
            for field in self._fields
        ]
        return instance, sql, params

    def _saved(self, instance, key, using: str) -> None:
        setattr(instance, self.model._meta.pk.attname, key)
        instance._state.adding = False
        instance._state.db = using
        signals.post_save.send(
            sender=self.model,
            instance=instance,
            created=True,
            update_fields=None,
            raw=False,
            using=using,
        )

    def _compile(self, instance, using: str) -> str:
        connection = connections[using]
        meta = self.model._meta
        returning = meta.db_returning_fields
        if returning != [meta.pk] or meta.pk.get_db_converters(connection):
            raise NotSupportedError(f"{meta.label}: only a plain primary key can be returned")
        query = InsertQuery(self.model)
        query.insert_values(self._fields, [instance])
        compiler = query.get_compiler(using=using)
        compiler.returning_fields = returning
        [(sql, params)] = compiler.as_sql()
        if sql.count("%s") != len(self._fields) or len(params) != len(self._fields):
            raise NotSupportedError(f"{meta.label}: a field's placeholder is not one parameter")
        self._sql[using] = sql  # two threads may both compile it: the same text
        return sql
