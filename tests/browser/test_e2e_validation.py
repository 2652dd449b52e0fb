"""End to end: two validators judge an example on the validate page; the second verdict
reaches the task's number of matching validations and settles it."""

from __future__ import annotations

import pytest

from annotation.models import Example, Validation, ValidationState
from tests.browser.e2e_helpers import signed_in_page
from tests.factories import ContextFactory, ExampleFactory, TaskFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_validators_settle_an_example(live_server, browser, login, shot):
    owner = UserFactory(username="validation-owner", is_staff=True)
    task = TaskFactory(code="judged-sentiment", config_name="sentiment", owners=[owner])
    task.num_matching_validations = 2
    task.save(update_fields=["num_matching_validations"])
    context_row = ContextFactory(task=task, data={"context": "Describe your commute."})
    example = ExampleFactory(
        task=task,
        context=context_row,
        user=UserFactory(username="example-writer"),
        input={"statement": "The bus was late again, how delightful.", "label": "negative"},
        goal_label="negative",
        model_output={
            "label": "positive",
            "prob": {"negative": 0.2, "positive": 0.7, "neutral": 0.1},
        },
        model_wrong=True,
    )
    validators = [UserFactory(username="validator-a"), UserFactory(username="validator-b")]

    for number, validator in enumerate(validators, start=1):
        context, page = signed_in_page(browser, login, validator)
        try:
            page.goto(f"{live_server.url}/tasks/{task.code}/validate")
            page.wait_for_selector(f'#validate-example[data-example-id="{example.pk}"]')
            assert "The bus was late again" in page.locator("#validate-example").inner_text()
            shot(page, f"validator-{number}-sees-example")
            page.check("input[name=label][value=correct]")
            shot(page, f"validator-{number}-verdict-chosen")
            page.click("#submit-validation")
            page.wait_for_selector("#nothing-to-validate")
            shot(page, f"validator-{number}-done")
            assert not page.js_errors, page.js_errors
        finally:
            context.close()
        example.refresh_from_db()
        expected = ValidationState.PENDING if number == 1 else ValidationState.CORRECT
        assert example.validation_state == expected, number

    assert example.settled_at is not None and not example.settled_by_owner
    assert Validation.objects.filter(example=example, label="correct").count() == 2
    assert Example.objects.get(pk=example.pk).validation_state == ValidationState.CORRECT
