// Line numbers for the YAML config editor, with the lines that have errors marked.
(function () {
  function render(wrap) {
    var area = wrap.querySelector("textarea");
    var gutter = wrap.querySelector(".config-editor-gutter");
    var errors = (wrap.dataset.errorLines || "").split(",").filter(Boolean).map(Number);
    var count = area.value.split("\n").length;
    gutter.textContent = "";
    for (var i = 1; i <= count; i++) {
      var span = document.createElement("span");
      span.textContent = i + "\n";
      if (errors.indexOf(i) !== -1) { span.className = "error-line"; span.title = "error on this line"; }
      gutter.appendChild(span);
    }
    gutter.scrollTop = area.scrollTop;
  }
  function setup(wrap) {
    var area = wrap.querySelector("textarea");
    area.addEventListener("input", function () { render(wrap); });
    area.addEventListener("scroll", function () { wrap.querySelector(".config-editor-gutter").scrollTop = area.scrollTop; });
    area.addEventListener("keydown", function (event) {
      if (event.key === "Tab") {  // YAML wants spaces, never tab characters.
        event.preventDefault();
        var start = area.selectionStart;
        area.setRangeText("  ", start, area.selectionEnd, "end");
        render(wrap);
      }
    });
    render(wrap);
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll(".config-editor-wrap").forEach(setup);
  });
})();
