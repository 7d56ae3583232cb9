// The report views' script: the values under the pointer, and series shown or hidden. faultCharts(report)
// wires the charts on the page to the report's figures (each chart's plot frame is its data-frame); it
// fetches nothing.
function faultCharts(report) {
  "use strict";
  const tip = document.getElementById("tip");
  const ms = (v) => (v === null || v === undefined ? "-" : `${v} ms`);
  const pct = (v) => `${(v * 100).toFixed(1)}%`;

  function nearest(points, key, value) {
    let best = null;
    for (const p of points) {
      if (best === null || Math.abs(p[key] - value) < Math.abs(best[key] - value)) best = p;
    }
    return best;
  }

  function second(run, s) {
    return run && run.per_second ? run.per_second.find((r) => r.second === s) : undefined;
  }

  // The phase (before, during, after a fault's window) the middle of second s is in, as a line of text.
  function phase(s) {
    const p = (report.phases || []).find((q) => q.from_s <= s + 0.5 && s + 0.5 < q.until_s);
    if (!p) return "";
    const upstream = (report.upstream && report.upstream.per_second[s]) || {};
    const ratio = upstream.requests_per_client_request;
    return `\n${p.name} phase${ratio === null || ratio === undefined ? "" : `, ${ratio} upstream requests per request`}`;
  }

  // What a chart shows at x (its value) and row fraction y (0 at the top, 1 at the bottom).
  const readers = {
    latency(x) {
      const s = Math.floor(x);
      const f = second(report.run, s);
      if (!f) return null;
      let text = `second ${s}: p50 ${ms(f.p50_ms)}, p95 ${ms(f.p95_ms)}, p99 ${ms(f.p99_ms)}\n${f.requests} requests, ${f.errors} errors${phase(s)}`;
      const b = second(report.baseline, s);
      if (b) text += `\nbaseline: p50 ${ms(b.p50_ms)}, p99 ${ms(b.p99_ms)}`;
      return text;
    },
    errors(x) {
      const s = Math.floor(x);
      const f = second(report.run, s);
      if (!f) return null;
      let text = `second ${s}: ${f.errors} errors, ${f.timeouts || 0} timeouts of ${f.requests} requests${phase(s)}`;
      const b = second(report.baseline, s);
      if (b) text += `\nbaseline: ${b.errors} errors`;
      return text;
    },
    rate(x) {
      const s = Math.floor(x);
      const f = second(report.run, s);
      if (!f) return null;
      const offered = f.offered === null || f.offered === undefined ? "" : `${f.offered} offered, `;
      return `second ${s}: ${offered}${f.achieved === null || f.achieved === undefined ? "-" : f.achieved} achieved (requests per second)${phase(s)}`;
    },
    requests(x) {
      const r = (report.requests || [])[Math.floor(x)];
      if (!r) return null;
      let text = `${r.name}: ${r.method} ${r.url}\n${r.requests} requests (${r.share_percent}% of the traffic), ${r.errors} errors\np50 ${ms(r.p50_ms)}, p95 ${ms(r.p95_ms)}, p99 ${ms(r.p99_ms)}, max ${ms(r.max_ms)}`;
      for (const slo of r.slos) text += `\nSLO ${slo.name}: ${slo.passed ? "met" : "missed"}`;
      return text;
    },
    distribution(x) {
      const percentile = x >= 4.55 ? 100 : 100 * (1 - Math.pow(10, -x));
      const at = (run) => (run && run.latency_curve.length ? nearest(run.latency_curve, "percentile", percentile) : null);
      const f = at(report.run);
      if (!f) return null;
      const name = (p) => (p >= 100 ? "max" : `p${+p.toFixed(2)}`);
      let text = `${name(f.percentile)}: ${ms(f.latency_ms)} with the fault`;
      const b = at(report.baseline);
      if (b) text += `\n${name(b.percentile)}: ${ms(b.latency_ms)} baseline`;
      return text;
    },
    timeline(x, y) {
      const t = report.run.timeline;
      const row = Math.floor(y * t.tools.length);
      const marks = t.marks.filter((m) => m.tool === row);
      const m = marks.length ? nearest(marks, "start_ms", x * 1000) : null;
      if (!m) return null;
      const group = m.calls > 1 ? ` (the worst of ${m.calls} calls here)` : "";
      return `${t.tools[row]} at ${(m.start_ms / 1000).toFixed(2)} s: ${m.kind.replace(/_/g, " ")}, ${m.latency_ms} ms${group}`;
    },
    traffic(x) {
      const f = report.per_second && report.per_second[Math.floor(x)];
      if (!f || f.connections_opened === undefined) return null;
      return `second ${f.second}: ${f.connections_opened} connections opened, ${f.fault_applications} fault applications`;
    },
    bytes(x) {
      const f = report.per_second && report.per_second[Math.floor(x)];
      if (!f || f.bytes_to_upstream === undefined) return null;
      return `second ${f.second}: ${f.bytes_to_upstream} bytes to upstream, ${f.bytes_to_client} bytes to clients`;
    },
    capacity(x) {
      const lines = [];
      for (const side of [report.without_fault, report.with_fault]) {
        if (!side || !side.steps.length) continue;
        const s = nearest(side.steps, "offered_rps", x);
        const verdict = s.breaks.length ? "broke" : "held";
        lines.push(`${side.name}, ${s.offered_rps} req/s offered (${s.achieved_rps} achieved): p50 ${ms(s.p50_ms)}, p99 ${ms(s.p99_ms)}, ${s.errors} errors, ${verdict}`);
      }
      return lines.length ? lines.join("\n") : null;
    },
    availability(x, y) {
      const tools = report.run.tools;
      const t = tools[Math.floor(y * tools.length)];
      if (!t) return null;
      return `${t.tool}: ${t.calls} calls\nA ${pct(t.availability)}, C ${pct(t.correctness)}, A×C ${pct(t.effective_availability)}`;
    },
  };

  for (const figure of document.querySelectorAll("figure.chart")) {
    const frame = JSON.parse(figure.dataset.frame || "null");
    const plot = figure.querySelector(".plot");
    const svg = plot.querySelector("svg");
    for (const box of figure.querySelectorAll(".toggles input")) {
      box.addEventListener("change", () => {
        const colour = box.dataset.colour;
        for (const el of svg.querySelectorAll(`[stroke="${colour}" i], [fill="${colour}" i]`)) {
          el.style.display = box.checked ? "" : "none";
        }
      });
    }
    if (!frame || !readers[frame.chart]) continue;
    plot.addEventListener("mousemove", (event) => {
      const box = svg.getBoundingClientRect();
      const scale = svg.viewBox.baseVal && svg.viewBox.baseVal.width ? svg.viewBox.baseVal.width / box.width : 800 / box.width;
      const px = (event.clientX - box.left) * scale;
      const py = (event.clientY - box.top) * scale;
      const inside = px >= frame.left && px <= frame.right && py >= frame.top && py <= frame.bottom;
      const text = inside
        ? readers[frame.chart](
            frame.x_from + ((px - frame.left) / (frame.right - frame.left)) * (frame.x_to - frame.x_from),
            (py - frame.top) / (frame.bottom - frame.top)
          )
        : null;
      if (!text) {
        tip.hidden = true;
        return;
      }
      tip.textContent = text;
      tip.hidden = false;
      tip.style.left = `${Math.min(event.clientX + 14, window.innerWidth - 370)}px`;
      tip.style.top = `${event.clientY + 14}px`;
    });
    plot.addEventListener("mouseleave", () => {
      tip.hidden = true;
    });
  }
}
