"""Score columns read every metric as score records do (property test)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from leaderboards.tables.records import ScoreColumns, ScoreRecord
from tests.leaderboards.boardkit import MAIN

json_values = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.booleans(),
    st.sampled_from(["1.5", "text", ""]),
    st.just([1.0]),
)


score_records = st.builds(
    ScoreRecord,
    model_id=st.integers(min_value=1, max_value=5),
    dataset_slug=st.sampled_from(["alpha", "beta"]),
    metrics=st.one_of(
        st.dictionaries(
            st.sampled_from([MAIN, "latency_p95_ms", "memory_utilization", "fairness"]),
            json_values,
        ),
        st.sampled_from([[], "not a dict"]),
    ),
    per_tag=st.just({}),
    main_value=st.one_of(st.none(), st.floats(allow_nan=True)),
    ci_low=st.none(),
    ci_high=st.none(),
    columns=st.fixed_dictionaries(
        {"latency_p95_ms": st.one_of(st.none(), st.floats()), "memory_gb": st.none()}
    ),
)


NAMES = (MAIN, "latency_p95_ms", "memory_utilization", "fairness")


# Every metric present and a number: the one-pass path of ``ScoreColumns.metric_matrix``.
complete_score_records = score_records.map(
    lambda record: ScoreRecord(
        record.model_id,
        record.dataset_slug,
        {name: float(index) + 0.5 for index, name in enumerate(NAMES)},
        record.per_tag,
        record.main_value,
        None,
        None,
        record.columns,
    )
)


number_metrics = st.fixed_dictionaries(
    dict.fromkeys(NAMES, st.one_of(st.floats(), st.integers(-(10**6), 10**6)))
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(score_records, max_size=8),
    st.lists(st.tuples(complete_score_records, number_metrics), max_size=8),
)
def test_score_columns_extract_metrics_as_score_records_do(records, complete):
    for batch in (records, [replace(record, metrics=metrics) for record, metrics in complete]):
        columns = ScoreColumns.from_records(batch)
        matrix = columns.metric_matrix(NAMES, MAIN)
        assert matrix.shape == (len(batch), len(NAMES))
        for index, name in enumerate(NAMES):
            want = [record.metric(name, MAIN) for record in batch]
            for got in (columns.metric(name, MAIN).tolist(), matrix[:, index].tolist()):
                assert [None if value != value else value for value in got] == want
