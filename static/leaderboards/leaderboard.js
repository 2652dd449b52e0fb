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

  document.addEventListener("DOMContentLoaded", drawTrends);
  // The chart lives in the table partial, so redraw it after every htmx swap.
  document.addEventListener("htmx:afterSettle", drawTrends);
})();
