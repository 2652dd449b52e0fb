/* Span selection for context_string_selection fields: select text in a context with the
   mouse; the field keeps the selected text and its character offset in the context string.
   Each .span-selection widget names its context field in data-reference; the context is the
   element with data-context-field of that name. No dependencies. */
(function () {
  "use strict";

  function offsetWithin(container, node, offset) {
    var range = document.createRange();
    range.selectNodeContents(container);
    range.setEnd(node, offset);
    return range.toString().length;
  }

  function widgetsFor(reference) {
    return document.querySelectorAll('.span-selection[data-reference="' + reference + '"]');
  }

  function activeWidget(reference) {
    var widgets = widgetsFor(reference);
    for (var i = 0; i < widgets.length; i++) {
      if (widgets[i].offsetParent !== null) { return widgets[i]; }
    }
    return widgets[0] || null;
  }

  function fill(widget, text, start) {
    var textInput = widget.querySelector("[data-span-text]");
    var startInput = widget.querySelector("[data-span-start]");
    if (textInput) {
      textInput.value = text;
      textInput.dispatchEvent(new Event("change", { bubbles: true }));
    }
    if (startInput) { startInput.value = start === null ? "" : String(start); }
  }

  function onMouseUp(event) {
    var container = event.currentTarget;
    var reference = container.getAttribute("data-context-field");
    var widget = activeWidget(reference);
    if (!widget) { return; }
    var selection = window.getSelection();
    if (!selection || selection.rangeCount === 0 || selection.isCollapsed) { return; }
    var range = selection.getRangeAt(0);
    if (!container.contains(range.startContainer) || !container.contains(range.endContainer)) {
      return;
    }
    var source = container.textContent;
    var start = offsetWithin(container, range.startContainer, range.startOffset);
    var end = offsetWithin(container, range.endContainer, range.endOffset);
    // Trim surrounding whitespace but keep the offset exact.
    while (start < end && /\s/.test(source.charAt(start))) { start++; }
    while (end > start && /\s/.test(source.charAt(end - 1))) { end--; }
    if (end <= start) { return; }
    fill(widget, source.slice(start, end), start);
  }

  function init(root) {
    var contexts = (root || document).querySelectorAll("[data-context-field]");
    contexts.forEach(function (container) {
      if (!widgetsFor(container.getAttribute("data-context-field")).length) { return; }
      if (container.dataset.spanReady) { return; }
      container.dataset.spanReady = "1";
      container.classList.add("selectable-context");
      container.addEventListener("mouseup", onMouseUp);
    });
    (root || document).querySelectorAll("[data-span-clear]").forEach(function (button) {
      button.addEventListener("click", function () {
        fill(button.closest(".span-selection"), "", null);
      });
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { init(document); });
  } else {
    init(document);
  }
  document.addEventListener("htmx:afterSwap", function (event) { init(event.target); });
})();
