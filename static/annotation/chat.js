// The conversation page: stream each reply over server-sent events, Enter to send.
(function () {
  "use strict";

  function refreshBox(box) {
    if (box.dataset.refreshing) return;
    box.dataset.refreshing = "1";
    htmx.ajax("GET", box.dataset.boxUrl, { target: box.dataset.target, swap: "outerHTML" });
  }

  function follow(box) {
    if (box.dataset.following) return;
    box.dataset.following = "1";
    var text = box.querySelector(".reply-text");
    var source = new EventSource(box.dataset.streamUrl);
    var received = "";
    box._source = source;
    source.addEventListener("text", function (event) {
      received += event.data;
      text.textContent = received;
      box.classList.add("has-text");
    });
    ["done", "error", "cancelled"].forEach(function (kind) {
      source.addEventListener(kind, function () {
        source.close();
        refreshBox(box);
      });
    });
    source.onerror = function () {
      // The server ended the stream without a last event (a restart): ask for the box.
      if (source.readyState !== EventSource.OPEN) {
        source.close();
        refreshBox(box);
      }
    };
  }

  function scan(root) {
    (root || document).querySelectorAll("[data-stream-url]").forEach(follow);
    var message = document.getElementById("chat-message");
    if (message && !message.disabled && document.activeElement === document.body) {
      message.focus();
    }
  }

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (target.id !== "chat-message" || event.key !== "Enter") return;
    if (event.shiftKey || event.isComposing) return; // Shift+Enter: a new line
    event.preventDefault();
    if (target.value.trim() && !target.disabled) {
      htmx.trigger(target.form, "submit");
    }
  });

  document.body.addEventListener("htmx:beforeSwap", function (event) {
    var old = event.detail.target;
    if (old && old.querySelectorAll) {
      old.querySelectorAll("[data-stream-url]").forEach(function (box) {
        if (box._source) box._source.close();
      });
    }
  });
  document.body.addEventListener("htmx:afterSettle", function () { scan(document); });
  document.body.addEventListener("htmx:afterRequest", function (event) {
    var form = event.detail.elt;
    if (form && form.id === "composer-form" && event.detail.successful) form.reset();
  });
  scan(document);
})();
