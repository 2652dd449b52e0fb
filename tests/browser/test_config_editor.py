"""The admin's config editor in Chromium: the gutter, the live check, the starters; and the
owner workflow pages around it (proposals, the form preview, the contexts upload)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks import services
from tasks.models import TaskProposal
from tasks.starter_configs import STARTERS
from tests.browser.e2e_helpers import signed_in_page
from tests.factories import TaskFactory, UserFactory, demo_config

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
# Two mistakes, on lines 5 and 9 of 12 (a misspelt type, an unknown top-level key).
BROKEN = """\
input:
  - name: statement
    type: string
  - name: label
    type: multiclas
    labels: [a, b, c]
output:
  - name: label
colour: red
perf_metric:
  type: accuracy
  reference_name: label
"""
BROKEN_LINES = (5, 9)


def screenshot(page, name: str, *, full_page: bool = True) -> None:
    """Save the page as ``test-artifacts/screenshots/<name>.png`` (role-page names)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=full_page)


def gutter(page) -> list[dict]:
    """Return each gutter cell's number, box and marker state, top to bottom."""
    return page.evaluate(
        """() => Array.from(document.querySelectorAll('.config-editor-line-number')).map(cell => {
            const box = cell.getBoundingClientRect();
            return {text: cell.textContent, top: box.top, height: box.height,
                    marked: cell.classList.contains('has-problem')};
        })"""
    )


def text_line_top(page, line: int) -> float:
    """Return where line ``line`` of the textarea's text starts on the screen."""
    return page.evaluate(
        """(line) => {
            const area = document.querySelector('textarea.config-editor');
            const style = getComputedStyle(area);
            return area.getBoundingClientRect().top + parseFloat(style.borderTopWidth)
                + parseFloat(style.paddingTop) + (line - 1) * parseFloat(style.lineHeight)
                - area.scrollTop;
        }""",
        line,
    )


def wait_for_check(page, count: int) -> None:
    """Wait until the editor has answered ``count`` live checks."""
    page.wait_for_function(
        "(count) => Number(document.querySelector('.config-editor-field').dataset.checked || 0)"
        " >= count",
        arg=count,
    )


@pytest.fixture
def admin_page(live_server, browser, login):
    admin = UserFactory(username="editor-admin", is_staff=True, is_superuser=True)
    context, page = signed_in_page(browser, login, admin)
    yield page
    assert not page.js_errors, page.js_errors
    context.close()


def test_typed_mistakes_are_marked_on_their_lines_after_the_debounce(live_server, admin_page):
    page = admin_page
    checks: list[str] = []
    page.on(
        "request",
        lambda request: checks.append(request.url) if "config/check" in request.url else 0,
    )
    page.goto(f"{live_server.url}/admin/tasks/task/add/")
    area = page.locator("textarea#id_config_yaml")
    area.click()
    page.keyboard.insert_text(BROKEN.replace("colour: red\n", ""))
    wait_for_check(page, 1)
    assert page.locator(".config-check-issue").count() == 1  # the misspelt type
    # Type the second mistake at the start of line 9, key by key, as a person would.
    page.evaluate(
        """() => {
            const area = document.querySelector('textarea.config-editor');
            const offset = area.value.split('\\n').slice(0, 8).join('\\n').length + 1;
            area.setSelectionRange(offset, offset);
        }"""
    )
    page.keyboard.type("colour: red\n")
    wait_for_check(page, 2)
    # One check for the whole word: the editor waits for a pause in the typing.
    assert len([url for url in checks if "config/check" in url]) < 1 + len("colour: red\n")

    issues = page.locator(".config-check-issue")
    assert [issues.nth(i).get_attribute("data-line") for i in range(2)] == ["5", "9"]
    assert issues.nth(0).get_attribute("data-code") == "config.E025"
    assert issues.nth(1).get_attribute("data-code") == "config.E011"
    cells = gutter(page)
    assert [cell["text"] for cell in cells] == [str(n) for n in range(1, 14)]
    assert [n for n, cell in enumerate(cells, start=1) if cell["marked"]] == list(BROKEN_LINES)
    # Every number, marked or not, sits on its own line of text: a marker shifts nothing.
    for number, cell in enumerate(cells, start=1):
        assert abs(cell["top"] - text_line_top(page, number)) < 1.5, (number, cell)
        assert abs(cell["height"] - cells[0]["height"]) < 0.5
    assert "multiclas" in page.locator(
        ".config-editor-line-number.has-problem"
    ).first.get_attribute("title")
    screenshot(page, "admin-config-editor")
    # The admin's dark theme: the editor takes the admin's colours, its text stays readable.
    page.emulate_media(color_scheme="dark")
    colours = page.evaluate(
        """() => {
            const area = document.querySelector('textarea.config-editor');
            const wrap = document.querySelector('.config-editor-wrap');
            return [getComputedStyle(area).color, getComputedStyle(wrap).backgroundColor];
        }"""
    )
    assert colours[0] != colours[1]
    assert colours[1] != "rgb(255, 255, 255)"
    screenshot(page, "admin-config-editor-dark")
    page.emulate_media(color_scheme="light")

    # "Line 9" moves the caret to the start of line 9.
    page.locator(".config-check-line[data-goto-line='9']").click()
    caret = page.evaluate("() => document.querySelector('textarea.config-editor').selectionStart")
    assert caret == len("\n".join(BROKEN.split("\n")[:8])) + 1


def test_marker_stays_on_its_line_when_the_editor_scrolls(live_server, admin_page):
    page = admin_page
    page.goto(f"{live_server.url}/admin/tasks/task/add/")
    long_config = demo_config("sentiment").replace("type: macro_f1", "type: macro_f2")
    bad_line = long_config.split("\n").index("  type: macro_f2") + 1
    page.locator("textarea#id_config_yaml").fill(long_config)
    wait_for_check(page, 1)
    scrolled = page.evaluate(
        "() => { const area = document.querySelector('textarea.config-editor');"
        " area.scrollTop = 400; return area.scrollTop; }"
    )
    assert scrolled > 100
    page.wait_for_function(
        "(scrolled) => document.querySelector('.config-editor-gutter-lines').style.transform"
        " === `translateY(-${scrolled}px)`",
        arg=scrolled,
    )
    cells = gutter(page)
    marked = [n for n, cell in enumerate(cells, start=1) if cell["marked"]]
    assert marked == [bad_line]
    assert abs(cells[bad_line - 1]["top"] - text_line_top(page, bad_line)) < 1.5
    assert abs(cells[bad_line]["top"] - text_line_top(page, bad_line + 1)) < 1.5


def test_a_starter_loads_with_one_click_and_has_no_problems(live_server, admin_page):
    page = admin_page
    page.goto(f"{live_server.url}/admin/tasks/task/add/")
    buttons = page.locator(".config-editor-starter")
    assert buttons.all_inner_texts() == [starter.title for starter in STARTERS]
    for index, starter in enumerate(STARTERS, start=1):
        # Switching from one untouched starter to another asks nothing.
        page.locator(f".config-editor-starter[data-starter='{starter.slug}']").click()
        wait_for_check(page, index)
        assert page.locator("textarea#id_config_yaml").input_value() == starter.text
        assert page.locator(".config-check-ok").is_visible()
        assert page.locator(".config-check-issue").count() == 0
        assert page.locator(".config-editor-line-number.has-problem").count() == 0
        assert page.locator(".config-editor-line-number").count() == starter.text.count("\n") + 1
    screenshot(page, "admin-config-editor-starter")

    # The reference opens from the editor, served by the site.
    reference = page.locator("a.config-editor-reference")
    assert reference.get_attribute("href") == "/docs/task-config/"
    with page.context.expect_page() as opened:
        reference.click()
    docs = opened.value
    docs.wait_for_load_state()
    assert docs.locator("h1").first.inner_text() == "Task configs: the reference"
    screenshot(docs, "admin-config-reference", full_page=False)
    docs.close()


def test_a_starter_over_own_text_asks_first_and_undo_brings_the_text_back(live_server, admin_page):
    page = admin_page
    page.goto(f"{live_server.url}/admin/tasks/task/add/")
    area = page.locator("textarea#id_config_yaml")
    area.click()
    page.keyboard.insert_text("input: []\n")
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.locator(".config-editor-starter[data-starter='qa']").click()
    assert area.input_value() == "input: []\n"
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator(".config-editor-starter[data-starter='qa']").click()
    assert area.input_value() == STARTERS[2].text
    page.keyboard.press("Control+z")
    assert area.input_value() == "input: []\n"


def test_the_proposal_page_lists_the_proposers_mistakes_with_their_lines(
    live_server, browser, login
):
    worker = UserFactory(username="proposing-worker")
    context, page = signed_in_page(browser, login, worker)
    try:
        page.goto(f"{live_server.url}/propose/")
        page.fill("#id_code", "stance")
        page.fill("#id_name", "Stance")
        page.fill("#id_description", "Does a reply agree with the headline?")
        page.locator("textarea#id_config_yaml").fill(BROKEN)
        page.click("text=Send proposal")
        page.wait_for_selector(".config-check-issue")
        issues = page.locator(".config-check-issue")
        assert issues.count() == 2
        assert issues.nth(0).is_visible() and issues.nth(1).is_visible()
        assert "Line 5, column 11" in issues.nth(0).inner_text()
        assert "Line 9" in issues.nth(1).inner_text()
        assert page.locator(".config-errors").is_visible()
        marked = [n for n, cell in enumerate(gutter(page), start=1) if cell["marked"]]
        assert marked == list(BROKEN_LINES)
        assert not TaskProposal.objects.exists()
        screenshot(page, "worker-propose-errors")
        assert not page.js_errors, page.js_errors
    finally:
        context.close()


def test_the_admin_reads_a_proposed_config_with_its_lines_and_indentation(live_server, admin_page):
    page = admin_page
    proposer = UserFactory(username="proposer")
    yaml_text = demo_config("nli") + "# a <b>bold</b> claim\n"
    proposal = services.proposal_submit(
        proposer=proposer, code="nli-2", name="NLI again", description="NLI.", config_yaml=yaml_text
    )
    page.goto(f"{live_server.url}/admin/tasks/taskproposal/{proposal.pk}/change/")
    code = page.locator(".config-listing-code")
    assert code.inner_text() == yaml_text.rstrip("\n")  # indentation kept, tags escaped
    numbers = page.locator(".config-listing-number").all_inner_texts()
    assert numbers == [str(n) for n in range(1, yaml_text.count("\n") + 1)]
    # The numbers line up with the lines of the text.
    tops = page.evaluate(
        """() => Array.from(document.querySelectorAll('.config-listing-number'))
                .map(cell => cell.getBoundingClientRect().top)"""
    )
    gaps = {round(below - above, 1) for above, below in zip(tops, tops[1:], strict=False)}
    assert gaps == {20.0}
    assert page.locator(".config-check-ok").is_visible()
    screenshot(page, "admin-proposal")


def test_the_form_preview_lives_under_the_task_and_keeps_the_admin_layout(
    live_server, browser, login
):
    owner = UserFactory(username="preview-owner", is_staff=True)
    task = TaskFactory(code="previewed", name="Previewed", owners=[owner], config_name="nli")
    context, page = signed_in_page(browser, login, owner)
    try:
        page.goto(f"{live_server.url}/admin/tasks/task/{task.pk}/change/")
        sidebar = page.locator("#nav-sidebar").bounding_box()
        page.click("text=Preview forms")
        page.wait_for_url(f"**/admin/tasks/task/{task.pk}/preview/")
        frame = page.frame_locator("#form-preview-frame")
        frame.locator("#preview-create").wait_for()
        assert frame.locator("#preview-validate").is_visible()
        # The site's styles stay in the frame: the admin's sidebar is as on any admin page.
        assert page.locator("#nav-sidebar").bounding_box() == sidebar
        assert page.evaluate("() => !document.querySelector('link[href*=\"bootstrap\"]')"), (
            "bootstrap leaks into the admin page"
        )
        page.wait_for_function(
            "() => document.getElementById('form-preview-frame').offsetHeight > 400"
        )
        screenshot(page, "admin-form-preview")

        # The preview's old address redirects here.
        page.goto(f"{live_server.url}/admin/annotation/example/{task.pk}/preview/")
        assert page.url.endswith(f"/admin/tasks/task/{task.pk}/preview/")
        assert not page.js_errors, page.js_errors
    finally:
        context.close()


def test_the_contexts_upload_error_table_lines_up(live_server, browser, login):
    owner = UserFactory(username="upload-owner", is_staff=True)
    task = TaskFactory(code="uploaded", name="Uploaded", owners=[owner], config_name="nli")
    context, page = signed_in_page(browser, login, owner)
    try:
        page.goto(f"{live_server.url}/admin/tasks/task/{task.pk}/upload-contexts/")
        lines = [{"context": "A fine flat line."}, {"context": 5}, {"passage": "x"}, "[1]"]
        body = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines)
        page.set_input_files(
            "input[type=file]",
            {"name": "c.jsonl", "mimeType": "application/jsonl", "buffer": body.encode()},
        )
        page.click("input[type=submit]")
        page.wait_for_selector("#upload-errors")
        columns = page.evaluate(
            """() => {
                const table = document.getElementById('upload-errors');
                const edges = row => Array.from(row.cells).map(cell => {
                    const box = cell.getBoundingClientRect();
                    return [Math.round(box.left), Math.round(box.right)];
                });
                return {head: edges(table.tHead.rows[0]),
                        rows: Array.from(table.tBodies[0].rows).map(edges)};
            }"""
        )
        assert len(columns["rows"]) >= 3
        for row in columns["rows"]:
            assert row == columns["head"]
        assert page.locator("#upload-errors tbody tr").first.locator("td").first.inner_text() == "2"
        screenshot(page, "admin-upload-contexts")
        assert not page.js_errors, page.js_errors
    finally:
        context.close()
