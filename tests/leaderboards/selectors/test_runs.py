"""A run's progress from its counters: done/total, rate, ETA, state (no database)."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from leaderboards.models import EvaluationRun, RunStatus, RunTrigger
from leaderboards.selectors.runs import run_progress

NOW = timezone.now()


def _run(**fields) -> EvaluationRun:
    defaults = {"total": 200, "done": 0, "status": RunStatus.QUEUED, "trigger": RunTrigger.RERUN}
    defaults.update(fields)
    return EvaluationRun(**defaults)


# -- the selector (no database) ----------------------------------------------------------------
def test_progress_of_a_running_run():
    progress = run_progress(
        _run(done=50, status=RunStatus.RUNNING, started_at=NOW - timedelta(seconds=10)), NOW
    )
    assert (progress.done, progress.total, progress.percent) == (50, 200, 25.0)
    assert progress.rate == 5.0  # 50 examples in 10 s
    assert progress.eta_seconds == 30.0  # 150 left at 5/s
    assert (progress.state, progress.state_label) == ("running", "Running")
    assert not progress.finished and not progress.failed


def test_progress_of_a_queued_run_has_no_rate_or_eta():
    progress = run_progress(_run(), NOW)
    assert (progress.done, progress.percent, progress.rate, progress.eta_seconds) == (
        0,
        0.0,
        None,
        None,
    )
    assert progress.state_label == "Queued" and not progress.finished


def test_progress_of_a_done_run_uses_its_finish_time():
    run = _run(
        done=200,
        status=RunStatus.DONE,
        started_at=NOW - timedelta(seconds=100),
        finished_at=NOW - timedelta(seconds=60),
    )
    progress = run_progress(run, NOW)
    assert (progress.percent, progress.rate, progress.eta_seconds) == (100.0, 5.0, 0.0)
    assert progress.finished and not progress.failed


def test_percent_is_never_100_while_examples_are_missing():
    for done, total in [(399, 400), (9_999, 10_000), (999_999, 1_000_000), (2, 3)]:
        for status in (RunStatus.RUNNING, RunStatus.FINALIZING, RunStatus.DONE):
            progress = run_progress(_run(done=done, total=total, status=status), NOW)
            assert progress.percent < 100.0, (done, total, status)
    assert run_progress(_run(done=2, total=3, status=RunStatus.RUNNING), NOW).percent == 66.6
    done = run_progress(_run(done=400, total=400, status=RunStatus.DONE), NOW)
    assert (done.percent, done.partial, done.counts) == (100.0, False, "400 / 400 examples")


def test_a_done_run_with_fewer_predictions_than_examples_is_partial():
    progress = run_progress(_run(done=300, total=400, status=RunStatus.DONE), NOW)
    assert (progress.percent, progress.partial) == (75.0, True)
    assert progress.counts == "300 of 400 examples (partial)"
    # Still running: not partial, just not done yet.
    running = run_progress(_run(done=300, total=400, status=RunStatus.RUNNING), NOW)
    assert not running.partial and running.counts == "300 / 400 examples"


def test_progress_of_a_failed_run_keeps_its_counts():
    run = _run(
        done=80,
        status=RunStatus.FAILED,
        started_at=NOW - timedelta(seconds=40),
        finished_at=NOW - timedelta(seconds=20),
    )
    progress = run_progress(run, NOW)
    assert (progress.done, progress.percent, progress.rate) == (80, 40.0, 4.0)
    assert progress.eta_seconds is None  # a failed run is not going anywhere
    assert progress.finished and progress.failed and progress.state_label == "Failed"


def test_progress_never_shows_more_than_the_total_or_divides_by_zero():
    over = run_progress(_run(done=250, status=RunStatus.FINALIZING, started_at=NOW), NOW)
    assert (over.done, over.percent, over.rate) == (200, 100.0, None)  # no elapsed time yet
    empty = run_progress(_run(total=0, status=RunStatus.DONE), NOW)
    assert (empty.done, empty.percent) == (0, 100.0)
