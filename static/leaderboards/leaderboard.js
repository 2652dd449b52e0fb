// Leaderboard page: slider read-outs and the trends chart. htmx does the table refresh.
(function () {
  "use strict";

  // Show each slider's value next to its label while it moves (the form submits on change).
  document.addEventListener("input", function (event) {
    var slider = event.target;
    if (!slider.classList || !slider.classList.contains("leaderboard-slider")) return;
    var output = document.querySelector('output[data-for="' + slider.id + '"]');
    if (output) output.textContent = slider.value;
  });

  var chart = null;

  function drawTrends() {
    var canvas = document.getElementById("leaderboard-trends");
    var data = document.getElementById("leaderboard-trends-data");
    if (chart) { chart.destroy(); chart = null; }
    if (!canvas || !data || typeof Chart === "undefined") return;
    // A canvas holds one chart. After Back, the chart drawn on this canvas need not be the
    // one kept above (the swap and the history restore can redraw in either order), and
    // Chart.js refuses a second one ("Canvas is already in use").
    var previous = Chart.getChart(canvas);
    if (previous) previous.destroy();
    var trends = JSON.parse(data.textContent);
    var bars = trends.kind === "bar";
    chart = new Chart(canvas, {
      type: bars ? "bar" : "line",
      data: {
        labels: trends.labels,
        datasets: trends.series.map(function (series) {
          return { label: series.model, data: series.values, spanGaps: true, tension: 0.2 };
        }),
      },
      options: { responsive: true, animation: false, scales: { y: { beginAtZero: bars } } },
    });
  }

  // After browser Back (htmx restores an older page from its history, or the browser from
  // its back-forward cache), the sliders must say what the URL and the table say: a slider
  // left at a later weight would silently replace the restored one on the next move. A
  // weight the URL leaves out is the one the page was first rendered with.
  function syncSlidersWithUrl() {
    var params = new URLSearchParams(window.location.search);
    document.querySelectorAll(".leaderboard-slider").forEach(function (slider) {
      var value = params.has(slider.name) ? params.get(slider.name) : slider.defaultValue;
      slider.value = value;
      var output = document.querySelector('output[data-for="' + slider.id + '"]');
      if (output) output.textContent = String(parseFloat(slider.value));
    });
  }

  // A hint, and a shadow on the right edge, when the table has more columns than room.
  function markOverflow() {
    document.querySelectorAll(".leaderboard-scroll").forEach(function (box) {
      var overflowing = box.scrollWidth > box.clientWidth + 1;
      box.classList.toggle("is-overflowing", overflowing);
      var hint = box.previousElementSibling;
      if (hint && hint.classList.contains("lb-scroll-hint")) hint.hidden = !overflowing;
    });
  }

  function refresh() {
    drawTrends();
    markOverflow();
  }

  document.addEventListener("DOMContentLoaded", refresh);
  // The chart lives in the table partial, so redraw it after every htmx swap.
  document.addEventListener("htmx:afterSettle", refresh);
  document.addEventListener("htmx:historyRestore", function () {
    syncSlidersWithUrl();
    refresh();
  });
  window.addEventListener("popstate", function () {
    setTimeout(syncSlidersWithUrl, 0);
  });
  window.addEventListener("pageshow", function () {
    syncSlidersWithUrl();
    markOverflow();
  });
  window.addEventListener("resize", markOverflow);
})();
