// The YAML task-config editor (tasks/widgets/config_editor.html).
//
// - The gutter holds one block per line of the text, each exactly one line tall, so a
//   marked line never moves the numbers below it; it scrolls with the textarea.
// - Lines with problems (data-error-lines on the editor, refreshed by each check) are marked.
// - With htmx and a check URL, the text is posted as typed (the "yaml-body" extension sends
//   it raw, with the form's CSRF token) and the answer fragment replaces the problem list.
// - Starter buttons load a template; "Line N" buttons move the caret to line N.
(function () {
  "use strict";

  function editorOf(element) { return element.closest(".config-editor-field"); }
  function areaOf(editor) { return editor.querySelector("textarea"); }

  function problemsByLine(editor) {
    var byLine = {};
    var panel = document.getElementById(editor.dataset.panel);
    if (!panel) { return byLine; }
    panel.querySelectorAll(".config-check-issue[data-line]").forEach(function (item) {
      var line = item.dataset.line;
      if (!line) { return; }
      var message = item.querySelector(".config-check-message");
      var code = item.dataset.code;
      (byLine[line] = byLine[line] || []).push((message ? message.textContent : "") + " [" + code + "]");
    });
    return byLine;
  }

  function renderGutter(editor, force) {
    var area = areaOf(editor);
    var wrap = editor.querySelector(".config-editor-wrap");
    var lines = editor.querySelector(".config-editor-gutter-lines");
    var count = area.value.split("\n").length;
    var marked = wrap.dataset.errorLines || "";
    if (!force && lines.dataset.count === String(count) && lines.dataset.marked === marked) {
      return;
    }
    var errors = {};
    marked.split(",").filter(Boolean).forEach(function (line) { errors[line] = true; });
    var problems = problemsByLine(editor);
    var fragment = document.createDocumentFragment();
    for (var number = 1; number <= count; number++) {
      var cell = document.createElement("div");
      cell.className = "config-editor-line-number";
      cell.textContent = String(number);
      if (errors[number]) {
        cell.className += " has-problem";
        cell.title = (problems[number] || ["a problem on this line"]).join("\n");
      }
      fragment.appendChild(cell);
    }
    lines.replaceChildren(fragment);
    // Room for the widest number and the padding on both sides.
    editor.querySelector(".config-editor-gutter").style.width = (String(count).length + 2.5) + "ch";
    lines.dataset.count = String(count);
    lines.dataset.marked = marked;
    syncScroll(editor);
  }

  function syncScroll(editor) {
    var area = areaOf(editor);
    var lines = editor.querySelector(".config-editor-gutter-lines");
    lines.style.transform = "translateY(" + (-area.scrollTop) + "px)";
  }

  function replaceText(area, text) {
    // insertText keeps the browser's undo history (Ctrl+Z brings the old config back).
    area.focus();
    area.select();
    var inserted = false;
    try { inserted = document.execCommand("insertText", false, text); } catch (error) { inserted = false; }
    if (!inserted || area.value !== text) {
      area.value = text;
      area.dispatchEvent(new Event("input", { bubbles: true }));
    }
    area.setSelectionRange(0, 0);
    area.scrollTop = 0;
  }

  function loadStarter(editor, slug) {
    var area = areaOf(editor);
    var data = document.getElementById(editor.dataset.starters);
    var starters = data ? JSON.parse(data.textContent) : {};
    var text = starters[slug];
    if (text === undefined) { return; }
    var current = area.value.trim();
    var isStarter = Object.keys(starters).some(function (key) { return starters[key].trim() === current; });
    if (current && !isStarter && !window.confirm("Replace the config in the editor with this template? (Ctrl+Z undoes it.)")) {
      return;
    }
    replaceText(area, text);
    renderGutter(editor, false);
  }

  function goToLine(editor, line) {
    var area = areaOf(editor);
    var lines = area.value.split("\n");
    var offset = 0;
    for (var index = 0; index < line - 1 && index < lines.length; index++) { offset += lines[index].length + 1; }
    area.focus();
    area.setSelectionRange(offset, offset);
    var lineHeight = parseFloat(window.getComputedStyle(area).lineHeight) || 18;
    area.scrollTop = Math.max(0, (line - 1) * lineHeight - area.clientHeight / 3);
    syncScroll(editor);
  }

  function setup(editor) {
    if (editor.dataset.ready) { return; }
    editor.dataset.ready = "1";
    var area = areaOf(editor);
    area.addEventListener("input", function () { renderGutter(editor, false); });
    area.addEventListener("scroll", function () { syncScroll(editor); });
    area.addEventListener("keydown", function (event) {
      if (event.key === "Tab" && !event.shiftKey && !event.ctrlKey && !event.altKey && !event.metaKey) {
        event.preventDefault();  // YAML wants spaces, never tab characters.
        if (!document.execCommand("insertText", false, "  ")) {
          area.setRangeText("  ", area.selectionStart, area.selectionEnd, "end");
          area.dispatchEvent(new Event("input", { bubbles: true }));
        }
      }
    });
    editor.addEventListener("click", function (event) {
      var starter = event.target.closest(".config-editor-starter");
      if (starter) { event.preventDefault(); loadStarter(editor, starter.dataset.starter); return; }
      var line = event.target.closest("[data-goto-line]");
      if (line) { event.preventDefault(); goToLine(editor, Number(line.dataset.gotoLine)); }
    });
    if (window.ResizeObserver) { new ResizeObserver(function () { syncScroll(editor); }).observe(area); }
    renderGutter(editor, true);
  }

  function csrfToken(element) {
    var form = element.closest("form");
    var input = form && form.querySelector("input[name=csrfmiddlewaretoken]");
    if (input) { return input.value; }
    var match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  if (window.htmx) {
    // Post the textarea's text as the raw request body: no form encoding, and the server can
    // refuse an oversized body from its length before reading it.
    window.htmx.defineExtension("yaml-body", {
      onEvent: function (name, event) {
        if (name === "htmx:configRequest") {
          event.detail.headers["Content-Type"] = "application/yaml; charset=utf-8";
          event.detail.headers["X-CSRFToken"] = csrfToken(event.detail.elt);
        }
        return true;
      },
      encodeParameters: function (xhr, parameters, element) {
        return element.value;
      }
    });
    document.addEventListener("htmx:beforeSwap", function (event) {
      // A refused check (too large, not UTF-8, no permission) still shows its explanation.
      var status = event.detail.xhr.status;
      if (editorOf(event.detail.elt) && (status === 400 || status === 403 || status === 413)) {
        event.detail.shouldSwap = true;
        event.detail.isError = false;
      }
    });
    document.addEventListener("htmx:afterSwap", function (event) {
      var editor = editorOf(event.detail.elt);
      if (!editor) { return; }
      var result = document.getElementById(editor.dataset.panel).querySelector(".config-check");
      editor.querySelector(".config-editor-wrap").dataset.errorLines = result ? (result.dataset.errorLines || "") : "";
      editor.dataset.checked = String(Number(editor.dataset.checked || 0) + 1);
      // The error of the last save is superseded by the live check.
      var row = editor.closest(".form-row");
      var stale = row && row.querySelector(".errorlist");
      if (stale) { stale.hidden = true; }
      renderGutter(editor, true);
    });
  }

  function setupAll() { document.querySelectorAll(".config-editor-field").forEach(setup); }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setupAll);
  } else {
    setupAll();
  }
})();
