// A character counter under every field with a limit (data-max-length): it counts as the
// worker types or pastes and says when the text is over the limit. Nothing is cut: the server
// refuses an over-long entry with a form error, which the worker can fix.
// Characters are counted as the server counts them: code points, a line break as one, and
// the spaces before and after the text left out (the server strips them).
(function () {
  "use strict";

  function count(text) {
    return Array.from(text.replace(/\r\n/g, "\n").trim()).length;
  }

  function counterOf(field) {
    var id = (field.id || field.name) + "-counter";
    var counter = document.getElementById(id);
    if (!counter) {
      counter = document.createElement("div");
      counter.id = id;
      counter.className = "form-text char-counter";
      counter.setAttribute("aria-live", "polite");
      field.insertAdjacentElement("afterend", counter);
      var described = field.getAttribute("aria-describedby");
      field.setAttribute("aria-describedby", described ? described + " " + id : id);
    }
    return counter;
  }

  function update(field) {
    var limit = parseInt(field.getAttribute("data-max-length"), 10);
    if (!(limit > 0)) return;
    var used = count(field.value || "");
    var counter = counterOf(field);
    var over = used - limit;
    counter.textContent =
      used + " / " + limit + (over > 0 ? " \u2014 " + over + " over the limit, please shorten" : "");
    counter.classList.toggle("over-limit", over > 0);
    counter.classList.toggle("near-limit", over <= 0 && used >= limit * 0.9);
    field.classList.toggle("over-limit", over > 0);
    counter.dataset.count = String(used);
  }

  function setUp(root) {
    if (!root || !root.querySelectorAll) return;
    var fields = root.matches && root.matches("[data-max-length]") ? [root] : [];
    root.querySelectorAll("[data-max-length]").forEach(function (field) {
      fields.push(field);
    });
    fields.forEach(update);
  }

  document.addEventListener("input", function (event) {
    var field = event.target;
    if (field && field.matches && field.matches("[data-max-length]")) update(field);
  });
  document.addEventListener("DOMContentLoaded", function () {
    setUp(document);
  });
  // Parts swapped in by htmx (the example's status part with its forms).
  document.addEventListener("htmx:load", function (event) {
    setUp(event.target);
  });
})();
