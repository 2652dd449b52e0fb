// Keyboard shortcuts of the create, example and validate pages.
//
// - Number keys pick a choice of the first group of radio buttons marked with
//   data-shortcut-group (the create form's label, the validate page's verdict): 1 the first.
// - Elements with data-shortcut="k" (the example page's verdict buttons) are clicked by "k".
// - Ctrl+Enter (Cmd+Enter) submits the form being filled in; Esc leaves a text field.
// - "?" shows or hides the list of the page's shortcuts.
// A badge next to each choice shows its key. No shortcut fires while the worker types in a
// text field, a text area or a select.
(function () {
  "use strict";

  var TYPING_SELECTOR =
    "textarea, select, [contenteditable=''], [contenteditable=true], " +
    "input:not([type=radio]):not([type=checkbox]):not([type=button]):not([type=submit])" +
    ":not([type=reset]):not([type=hidden])";

  function isTyping(element) {
    return !!(element && element.matches && (element.matches(TYPING_SELECTOR) || element.isContentEditable));
  }

  function visible(element) {
    return !!(element && !element.disabled && element.getClientRects().length);
  }

  function labelOf(input) {
    return (input.id && document.querySelector('label[for="' + input.id + '"]')) || input.closest("label");
  }

  // The first marked radio group on the page (by its name), its choices in page order.
  function numberedChoices() {
    var inputs = Array.prototype.filter.call(
      document.querySelectorAll("input[type=radio][data-shortcut-group]"),
      visible
    );
    if (!inputs.length) return [];
    var name = inputs[0].name;
    return inputs.filter(function (input) { return input.name === name; }).slice(0, 9);
  }

  function keyedElements() {
    return Array.prototype.filter.call(document.querySelectorAll("[data-shortcut]"), visible);
  }

  function badge(key) {
    var element = document.createElement("kbd");
    element.className = "shortcut-badge";
    element.setAttribute("aria-hidden", "true");
    element.textContent = key;
    return element;
  }

  function addBadges() {
    numberedChoices().forEach(function (input, index) {
      var label = labelOf(input);
      if (label && !label.querySelector(".shortcut-badge")) label.prepend(badge(String(index + 1)));
      input.setAttribute("aria-keyshortcuts", String(index + 1));
    });
    keyedElements().forEach(function (element) {
      if (!element.querySelector(".shortcut-badge")) element.prepend(badge(element.dataset.shortcut));
      element.setAttribute("aria-keyshortcuts", element.dataset.shortcut);
    });
    toggleButton().hidden = !numberedChoices().length && !keyedElements().length;
  }

  function text(element) {
    var clone = element.cloneNode(true);
    clone.querySelectorAll(".shortcut-badge, input").forEach(function (child) { child.remove(); });
    return clone.textContent.replace(/\s+/g, " ").trim();
  }

  function helpPanel() {
    var panel = document.getElementById("shortcut-help");
    if (!panel) {
      panel = document.createElement("div");
      panel.id = "shortcut-help";
      panel.className = "card shadow shortcut-help";
      panel.setAttribute("role", "dialog");
      panel.setAttribute("aria-label", "Keyboard shortcuts");
      panel.hidden = true;
      document.body.appendChild(panel);
    }
    return panel;
  }

  function fillHelp(panel) {
    var rows = [];
    numberedChoices().forEach(function (input, index) {
      var label = labelOf(input);
      rows.push([String(index + 1), label ? text(label) : input.value]);
    });
    keyedElements().forEach(function (element) {
      rows.push([element.dataset.shortcut, element.title || text(element)]);
    });
    rows.push(["Ctrl+Enter", "submit the form"]);
    rows.push(["Esc", "leave the text field (then the keys work again)"]);
    rows.push(["?", "show or hide this list"]);
    panel.innerHTML = "";
    var body = document.createElement("div");
    body.className = "card-body";
    var title = document.createElement("h2");
    title.className = "h6";
    title.textContent = "Keyboard shortcuts";
    body.appendChild(title);
    var list = document.createElement("dl");
    list.className = "row mb-0 small";
    rows.forEach(function (row) {
      var key = document.createElement("dt");
      key.className = "col-4";
      key.appendChild(badge(row[0]));
      var what = document.createElement("dd");
      what.className = "col-8 mb-1";
      what.textContent = row[1];
      list.appendChild(key);
      list.appendChild(what);
    });
    body.appendChild(list);
    var hint = document.createElement("p");
    hint.className = "small text-muted mb-0 mt-2";
    hint.textContent = "The keys do nothing while you type in a text field.";
    body.appendChild(hint);
    panel.appendChild(body);
  }

  function toggleHelp(show) {
    var panel = helpPanel();
    var open = show === undefined ? panel.hidden : show;
    if (open) fillHelp(panel);
    panel.hidden = !open;
    toggleButton().setAttribute("aria-expanded", String(open));
  }

  function toggleButton() {
    var button = document.getElementById("shortcut-help-toggle");
    if (!button) {
      button = document.createElement("button");
      button.type = "button";
      button.id = "shortcut-help-toggle";
      button.className = "btn btn-light border shortcut-help-toggle";
      button.title = "Keyboard shortcuts (?)";
      button.setAttribute("aria-label", "Keyboard shortcuts");
      button.setAttribute("aria-expanded", "false");
      button.textContent = "?";
      button.addEventListener("click", function () { toggleHelp(); });
      document.body.appendChild(button);
    }
    return button;
  }

  function submitForm(from) {
    var form = from && from.closest ? from.closest("form") : null;
    if (!form) {
      form = ["create-form", "validate-form"]
        .map(function (id) { return document.getElementById(id); })
        .filter(visible)[0];
    }
    if (form && form.requestSubmit) form.requestSubmit();
    else if (form) form.submit();
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.isComposing) return;
    var target = event.target;
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      submitForm(target);
      return;
    }
    if (event.key === "Escape") {
      if (isTyping(target)) target.blur();
      toggleHelp(false);
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || isTyping(target)) return;
    if (event.key === "?") {
      event.preventDefault();
      toggleHelp();
      return;
    }
    var keyed = keyedElements().filter(function (element) {
      return element.dataset.shortcut === event.key;
    })[0];
    if (keyed) {
      event.preventDefault();
      keyed.click();
      return;
    }
    if (/^[1-9]$/.test(event.key)) {
      var choice = numberedChoices()[Number(event.key) - 1];
      if (choice) {
        event.preventDefault();
        choice.click();
        choice.focus();
      }
    }
  });

  document.addEventListener("DOMContentLoaded", addBadges);
  document.addEventListener("htmx:load", addBadges);
})();
