// Show the value of every rating scale (input[data-scale]) beside it, as it moves. The
// scale itself is a native range input, so the arrow keys, Home and End move it; the
// server checks the value whatever the page shows.
(function () {
  "use strict";

  function show(scale) {
    var output = scale.parentElement && scale.parentElement.querySelector(".scale-value");
    if (output) output.textContent = scale.value;
    scale.setAttribute("aria-valuetext", scale.value);
  }

  document.addEventListener("input", function (event) {
    if (event.target.matches && event.target.matches("input[data-scale]")) show(event.target);
  });
  document.querySelectorAll("input[data-scale]").forEach(show);
})();
