"""The crowdworker's comforts in Chromium, and the demo's leaderboard.

1. The character counter counts as the worker types and pastes; a paste over the limit is
   kept whole and refused with a form error on submit.
2. Number keys pick a label (create) and a verdict (validate), "w"/"r" the writer's own
   verdict; nothing fires inside a text field; "?" lists the keys.
3. The progress line counts the day's examples and the fooling ones.
4. Flag with a reason, then undo.
5. Sign-up while open; closed, the page says so and the login page hides the link.
6. The seeded demo leaderboard ranks three models or more.

Each test saves its screenshot under ``test-artifacts/screenshots/``.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command

from annotation.models import Example, Validation
from models_hub.demo.sentiment import SentimentHandler
from tasks.accounts import site_settings_get
from tests.annotation.conftest import ServerHandle, put_in_loop
from tests.browser.e2e_helpers import signed_in_page
from tests.factories import ContextFactory, ExampleFactory, TaskFactory, UserFactory, demo_config
from tests.leaderboards.evalkit import run_worker

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
SARCASTIC = "What a wonderful, delicious and lovely dinner!"


def screenshot(page, name: str) -> None:
    """Save the page as ``test-artifacts/screenshots/<name>.png`` (role-page names)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


@pytest.fixture
def sentiment(db, settings):
    settings.ANNOTATION_SYNC_WAIT_SECONDS = 3
    settings.ANNOTATION_POLL_WAIT_SECONDS = 1
    owner = UserFactory(username="owner", is_staff=True)
    task = TaskFactory(code="sentiment", config_name="sentiment", owners=[owner])
    ContextFactory(task=task, data={"context": "Describe a meal you ate at a new restaurant."})
    handle = ServerHandle(SentimentHandler)
    put_in_loop(task, owner, handle.url, name="vader")
    yield task
    handle.stop()


def checked(page, name: str) -> str | None:
    return page.evaluate(
        "name => (document.querySelector(`input[name=${name}]:checked`) || {}).value || null",
        name,
    )


def test_the_counter_counts_typing_and_a_paste_is_never_cut(
    live_server, browser, login, shot, sentiment
):
    context, page = signed_in_page(browser, login, UserFactory(username="writer"))
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page.goto(f"{live_server.url}/tasks/sentiment/create")
    statement = page.locator("#id_statement")
    counter = page.locator("#id_statement-counter")
    assert counter.inner_text() == "0 / 500"
    statement.press_sequentially("Great")
    assert counter.inner_text() == "5 / 500"
    statement.press("Enter")
    statement.press_sequentially("food")
    assert counter.inner_text() == "10 / 500"  # a line break is one character
    shot(page, "typing")

    pasted = "This is far too long for the field. " * 17 + "Really."  # 619 characters
    page.evaluate("text => navigator.clipboard.writeText(text)", pasted)
    statement.fill("")
    statement.focus()
    page.keyboard.press("Control+V")
    assert statement.input_value() == pasted  # no maxlength: the browser cut nothing
    assert counter.inner_text().startswith("619 / 500")
    assert "119 over the limit" in counter.inner_text()
    assert "over-limit" in counter.get_attribute("class")
    page.check("input[name=label][value=negative]")
    screenshot(page, "worker-create-counter")

    page.click("#submit-example")
    page.wait_for_selector("text=This is 619 characters long; the limit is 500.")
    assert page.locator("#id_statement").input_value() == pasted
    assert not Example.objects.exists()
    shot(page, "refused")
    context.close()


def test_keys_pick_labels_and_verdicts_but_not_inside_a_text_field(
    live_server, browser, login, shot, sentiment
):
    # The create page: 1-3 pick the label.
    context, page = signed_in_page(browser, login, UserFactory(username="writer"))
    page.goto(f"{live_server.url}/tasks/sentiment/create")
    assert page.locator("label[for=id_label_0] .shortcut-badge").inner_text() == "1"
    page.keyboard.press("1")
    assert checked(page, "label") == "negative"
    page.click("#id_statement")
    page.keyboard.type("2 stars, 3 courses")
    assert checked(page, "label") == "negative"  # typing is typing
    assert page.locator("#id_statement").input_value() == "2 stars, 3 courses"
    page.keyboard.press("Escape")
    page.keyboard.press("3")
    assert checked(page, "label") == "neutral"
    shot(page, "create-keys")
    context.close()

    # The validate page: 1 correct, 2 incorrect, 3 flag.
    example = ExampleFactory(task=sentiment, user=UserFactory(username="author"))
    validator = UserFactory(username="validator")
    context, page = signed_in_page(browser, login, validator)
    page.goto(f"{live_server.url}/tasks/sentiment/validate")
    page.wait_for_selector(f'#validate-example[data-example-id="{example.pk}"]')
    page.keyboard.press("2")
    assert checked(page, "label") == "incorrect"
    assert page.is_visible(".verdict-incorrect")
    page.keyboard.press("3")
    assert checked(page, "label") == "flagged"
    page.click("#id_flag_reason")
    page.keyboard.type("1 2 3 ?")
    assert checked(page, "label") == "flagged"
    assert not page.is_visible("#shortcut-help")
    assert page.locator("#id_flag_reason").input_value() == "1 2 3 ?"
    page.keyboard.press("Escape")
    page.keyboard.press("?")
    page.wait_for_selector("#shortcut-help")
    help_text = page.locator("#shortcut-help").inner_text()
    for line in ("Correct", "Incorrect", "Flagged", "Ctrl+Enter"):
        assert line in help_text
    screenshot(page, "worker-validate-shortcuts")
    page.keyboard.press("?")
    assert not page.is_visible("#shortcut-help")
    page.keyboard.press("1")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("text=Thank you, your verdict is recorded.")
    assert Validation.objects.get(example=example, user=validator).label == "correct"
    assert page.js_errors == []
    context.close()


def test_the_writers_own_verdict_has_keys(live_server, browser, login, shot, live_worker):
    owner = UserFactory(username="asker", is_staff=True)
    yaml_text = demo_config("sentiment").replace(
        "model_wrong_metric:\n  type: exact_match\n  reference_names: [label]",
        "model_wrong_metric:\n  type: ask_user",
    )
    task = TaskFactory(code="asked", yaml_text=yaml_text, owners=[owner])
    ContextFactory(task=task)
    handle = ServerHandle(SentimentHandler)
    put_in_loop(task, owner, handle.url, name="vader")
    try:
        context, page = signed_in_page(browser, login, UserFactory(username="writer"))
        page.goto(f"{live_server.url}/tasks/asked/create")
        page.fill("#id_statement", SARCASTIC)
        page.check("input[name=label][value=negative]")
        page.click("#submit-example")
        page.wait_for_selector("#verdict-wrong")
        assert page.locator("#verdict-wrong .shortcut-badge").inner_text() == "w"
        shot(page, "ask-user")
        page.keyboard.press("w")
        page.wait_for_selector("#verdict-fooled")
        assert Example.objects.get(task=task).model_wrong is True
        context.close()
    finally:
        handle.stop()


def test_the_progress_line_counts_the_days_examples(
    live_server, browser, login, shot, live_worker, sentiment
):
    writer = UserFactory(username="writer")
    context, page = signed_in_page(browser, login, writer)
    page.goto(f"{live_server.url}/tasks/sentiment/create")
    line = page.locator("#progress-line")
    assert "0</strong> examples written" in line.inner_html()
    page.fill("#id_statement", SARCASTIC)
    page.check("input[name=label][value=negative]")
    page.click("#submit-example")
    page.wait_for_selector("#verdict-fooled")
    page.goto(f"{live_server.url}/tasks/sentiment/create")
    assert page.locator("#progress-line").get_attribute("data-written") == "1"
    assert page.locator("#progress-line").get_attribute("data-fooled") == "1"
    page.fill("#id_statement", "The soup was cold and the waiter was rude.")
    page.check("input[name=label][value=negative]")
    page.click("#submit-example")
    page.wait_for_selector("#verdict-fooled, #verdict-not-fooled")
    page.goto(f"{live_server.url}/tasks/sentiment/create")
    text = page.locator("#progress-line").inner_text()
    assert "Today: 2 examples written, 1 fooled the model" in " ".join(text.split())
    screenshot(page, "worker-progress")
    context.close()


def test_flag_with_a_reason_then_undo(live_server, browser, login, shot, sentiment):
    writer = UserFactory(username="writer")
    example = ExampleFactory(task=sentiment, user=writer)
    context, page = signed_in_page(browser, login, writer)
    page.goto(f"{live_server.url}/tasks/sentiment/examples/{example.pk}/")
    assert not page.is_visible("#flag-form")
    page.click("#flag")
    page.wait_for_selector("#flag-form", state="visible")
    page.fill("#id_flag_reason", "I picked the wrong label")
    assert page.locator("#id_flag_reason-counter").inner_text() == "24 / 500"
    shot(page, "reason")
    page.click("#flag-submit")
    page.wait_for_selector("#flagged-note")
    assert "I picked the wrong label" in page.locator("#flagged-note").inner_text()
    example.refresh_from_db()
    assert (example.creator_flagged, example.flag_count) == (True, 1)
    screenshot(page, "worker-flag-undo")
    page.click("#unflag")
    page.wait_for_selector("#flag")
    example.refresh_from_db()
    assert (example.creator_flagged, example.flag_count) == (False, 0)
    shot(page, "undone")
    assert page.js_errors == []
    context.close()


def test_sign_up_while_open_and_the_notice_once_closed(live_server, browser, shot):
    context, page = signed_in_page(browser, lambda *args: None, None)
    page.goto(f"{live_server.url}/accounts/login/?next=/profile/")
    page.click("#signup-link a")
    page.wait_for_selector("#signup-form")
    page.fill("#id_username", "newcomer")
    page.fill("#id_email", "newcomer@example.org")
    page.fill("#id_password1", "plum-harbour-lantern-42")
    page.fill("#id_password2", "plum-harbour-lantern-42")
    screenshot(page, "worker-signup")
    page.click("#signup-submit")
    page.wait_for_url("**/profile/")
    assert "newcomer" in page.locator("nav").inner_text()
    shot(page, "signed-in")
    context.close()

    row = site_settings_get()
    row.signup_open = False
    row.save()
    context, page = signed_in_page(browser, lambda *args: None, None)
    page.goto(f"{live_server.url}/accounts/signup/")
    assert page.is_visible("#signup-closed") and not page.is_visible("#signup-form")
    shot(page, "closed")
    page.goto(f"{live_server.url}/accounts/login/")
    assert page.locator("#signup-link").count() == 0
    context.close()


def test_the_demo_leaderboard_ranks_several_models(
    live_server, browser, shot, demo_servers, redis_connection
):
    arguments = [f"--model-url={key}={url}" for key, url in demo_servers.items()]
    call_command("seed_demo", *arguments, stdout=io.StringIO())
    run_worker()
    context, page = signed_in_page(browser, lambda *args: None, None)
    page.goto(f"{live_server.url}/tasks/sentiment/leaderboard/")
    rows = page.locator("[data-testid=leaderboard] tbody tr")
    names = rows.all_inner_texts()
    assert len(names) >= 4, names
    for name in ("VADER sentiment (demo)", "VADER, narrow neutral band (demo)", "Majority class"):
        assert any(name in row for row in names), names
    screenshot(page, "researcher-demo-leaderboard")
    context.close()
