// Show only the metadata fields of the chosen verdict (without JavaScript all stay visible;
// the server checks and stores only the chosen verdict's fields either way).
(function () {
  function update(form) {
    var checked = form.querySelector("input[name=label]:checked");
    form.querySelectorAll(".verdict-fields").forEach(function (group) {
      var show = checked && group.classList.contains("verdict-" + checked.value);
      group.hidden = !show;
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("validate-form") || document.getElementById("review-form");
    if (!form) return;
    form.addEventListener("change", function (event) {
      if (event.target.name === "label") update(form);
    });
    update(form);
  });
})();
