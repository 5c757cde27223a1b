// kagent viewer: draws each <figure class="chart"> with uPlot from the JSON the server put in it
// ({x_label, y_label, time, integer_x, x: [...], series: [{label, values: [...]}]}). Without
// JavaScript the figure's data table stays readable.
"use strict";
(function () {
  const colors = ["#1f5fbf", "#b3261e", "#17753a", "#9a6700", "#6f42c1", "#0a7d8c", "#c2185b", "#555555"];
  const integerSteps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000];
  for (const fig of document.querySelectorAll("figure.chart")) {
    const data = JSON.parse(fig.querySelector("script.chart-data").textContent);
    const box = fig.querySelector(".plot");
    const xAxis = { label: data.x_label };
    if (data.integer_x) xAxis.incrs = integerSteps;
    const opts = {
      width: Math.max(320, box.clientWidth || 520),
      height: 260,
      scales: { x: { time: !!data.time } },
      axes: [xAxis, { label: data.y_label }],
      series: [{ label: data.x_label }].concat(data.series.map((s, i) => ({
        label: s.label, stroke: colors[i % colors.length], width: 2, spanGaps: true,
        points: { show: true, size: 6 },
      }))),
    };
    new uPlot(opts, [data.x].concat(data.series.map((s) => s.values)), box);
    box.dataset.rendered = "true";
  }
})();
