// The goal banner holds the goal field's label choice (annotation.forms.CreateForm): when the
// worker picks another target, the goal the banner states changes with it.
(function () {
  "use strict";
  document.addEventListener("change", function (event) {
    var input = event.target;
    var banner = input.closest ? input.closest("[data-goal-field]") : null;
    if (!banner || input.name !== banner.getAttribute("data-goal-field")) return;
    var label = banner.querySelector("[data-goal-label]");
    if (!label || !input.value) return;
    label.textContent = input.value;
    label.setAttribute("data-goal-label", input.value);
  });
})();
