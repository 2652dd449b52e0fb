"""The create and validate pages in Chromium, on a live server with real demo model servers.

1. A worker writes a sentiment example, sees the model's verdict and saves an explanation.
2. A second worker validates it.
3. A QA example is created with its answer span selected by mouse in the passage.
4. The model server stops: the worker reads the failure message; the example stays stored.
"""

from __future__ import annotations

import pytest

from annotation.models import Example, ExampleStatus, Validation
from models_hub.demo.qa import QAHandler
from models_hub.demo.sentiment import SentimentHandler
from tests.annotation.conftest import ServerHandle, put_in_loop
from tests.factories import ContextFactory, TaskFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSAGE = (
    "The lighthouse at Carrow Point was built in 1872 from granite quarried two miles inland. "
    "Its lamp was first lit by a keeper named Elias Brandt, who lived in the tower."
)
SECOND_ANSWER = "granite quarried two miles inland"


@pytest.fixture
def servers():
    handles = {"sentiment": ServerHandle(SentimentHandler), "qa": ServerHandle(QAHandler)}
    yield handles
    for handle in handles.values():
        handle.stop()


@pytest.fixture
def world(db, servers, settings):
    settings.ANNOTATION_SYNC_WAIT_SECONDS = 3
    settings.ANNOTATION_POLL_WAIT_SECONDS = 1
    owner = UserFactory(username="owner", is_staff=True)
    sentiment = TaskFactory(code="sentiment", config_name="sentiment", owners=[owner])
    ContextFactory(task=sentiment, data={"context": "Describe a meal you ate at a new restaurant."})
    qa = TaskFactory(code="qa", config_name="qa", owners=[owner])
    ContextFactory(task=qa, data={"context": PASSAGE})
    put_in_loop(sentiment, owner, servers["sentiment"].url, name="vader")
    put_in_loop(qa, owner, servers["qa"].url, name="window-qa")
    return {
        "writer": UserFactory(username="writer"),
        "validator": UserFactory(username="validator"),
    }


def select_text_with_mouse(page, container_selector: str, text: str) -> None:
    """Drag the mouse over ``text`` inside the container, as a person would."""
    page.locator(container_selector).scroll_into_view_if_needed()
    box = page.evaluate(
        """([selector, text]) => {
            const element = document.querySelector(selector);
            const node = element.firstChild;
            const start = node.textContent.indexOf(text);
            const range = document.createRange();
            range.setStart(node, start);
            range.setEnd(node, start + text.length);
            const rects = range.getClientRects();
            const first = rects[0], last = rects[rects.length - 1];
            return {x1: first.left, y1: (first.top + first.bottom) / 2,
                    x2: last.right, y2: (last.top + last.bottom) / 2};
        }""",
        [container_selector, text],
    )
    page.mouse.move(box["x1"] + 1, box["y1"])
    page.mouse.down()
    page.mouse.move((box["x1"] + box["x2"]) / 2, box["y2"], steps=5)
    page.mouse.move(box["x2"] - 1, box["y2"], steps=5)
    page.mouse.up()


def test_create_validate_select_and_fail(
    live_server, browser, login, shot, live_worker, world, servers
):
    base = live_server.url

    # 1. The writer writes a sentiment example and sees the verdict.
    writer_context = browser.new_context(viewport={"width": 1280, "height": 1000})
    login(writer_context, world["writer"])
    page = writer_context.new_page()
    page.goto(f"{base}/tasks/sentiment/create")
    page.wait_for_selector("#goal-banner")
    shot(page, "create-page")
    page.fill("#id_statement", "What a wonderful, delicious and lovely dinner!")
    page.check("input[name=label][value=negative]")
    page.click("#submit-example")
    page.wait_for_selector("#verdict-fooled, #verdict-not-fooled")
    assert page.is_visible(".prob-bar")
    shot(page, "verdict")
    page.fill("#id_metadata-example_explanation", "Sarcasm: the dinner was awful.")
    page.click("#save-metadata")
    page.wait_for_selector("#metadata-saved")
    shot(page, "explanation-saved")
    example = Example.objects.get(task__code="sentiment")
    assert example.status == ExampleStatus.MODEL_ANSWERED
    assert example.model_wrong is True
    assert example.metadata["example_explanation"] == "Sarcasm: the dinner was awful."

    # 2. A second worker validates it.
    validator_context = browser.new_context(viewport={"width": 1280, "height": 1000})
    login(validator_context, world["validator"])
    other = validator_context.new_page()
    other.goto(f"{base}/tasks/sentiment/validate")
    other.wait_for_selector(f'#validate-example[data-example-id="{example.pk}"]')
    shot(other, "validate-page")
    other.check("input[name=label][value=correct]")
    other.click("#submit-validation")
    other.wait_for_selector("#nothing-to-validate")
    shot(other, "validated")
    validation = Validation.objects.get(example=example)
    assert (validation.user_id, validation.label) == (world["validator"].pk, "correct")
    validator_context.close()

    # 3. A QA example with the answer selected by mouse.
    page.goto(f"{base}/tasks/qa/create")
    page.fill("#id_question", "Who first lit the lamp?")
    select_text_with_mouse(page, '[data-context-field="context"]', "Elias Brandt")
    assert page.input_value("#id_answer_0") == "Elias Brandt"
    assert page.input_value("#id_answer_1") == str(PASSAGE.index("Elias Brandt"))
    shot(page, "span-selected")
    page.click("#submit-example")
    page.wait_for_selector("#verdict-fooled, #verdict-not-fooled")
    shot(page, "qa-verdict")
    qa_example = Example.objects.get(task__code="qa")
    assert qa_example.input["answer"] == {
        "text": "Elias Brandt",
        "start": PASSAGE.index("Elias Brandt"),
    }
    # The verdict page carries the next example's form: the span is selected there too.
    page.fill("#write-another #id_question", "What was the lighthouse built from?")
    select_text_with_mouse(page, "#context [data-context-field=context]", SECOND_ANSWER)
    assert page.input_value("#write-another #id_answer_0") == SECOND_ANSWER
    page.click("#write-another #submit-example")
    page.wait_for_selector("#verdict-fooled, #verdict-not-fooled")
    shot(page, "qa-second-example-from-the-verdict-page")
    second = Example.objects.filter(task__code="qa").order_by("-id").first()
    assert second.pk != qa_example.pk and second.context_id == qa_example.context_id
    assert second.input["answer"] == {
        "text": SECOND_ANSWER,
        "start": PASSAGE.index(SECOND_ANSWER),
    }

    # 4. The model server stops: a plain message, and the example is kept.
    servers["sentiment"].stop()
    page.goto(f"{base}/tasks/sentiment/create")
    page.fill("#id_statement", "The soup was cold and the waiter was rude.")
    page.check("input[name=label][value=negative]")
    page.click("#submit-example")
    page.wait_for_selector("#model-failed")
    assert page.is_visible("#retry-model") and page.is_visible("#go-on")
    assert "Traceback" not in page.content()
    shot(page, "model-failed")
    failed = Example.objects.filter(task__code="sentiment").order_by("-id").first()
    assert failed.status == ExampleStatus.MODEL_FAILED
    assert failed.input["statement"] == "The soup was cold and the waiter was rude."
    writer_context.close()
