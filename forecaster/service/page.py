"""The inspection page: one HTML document with inline drawing code (no CDN, no framework).

What it shows, all from the JSON endpoints: a cluster overview (every pool's mode, prewarm,
error budget left, prewarm dollars today); per pool the demand with the forecast and the past
forecasts against what happened (misses marked), the error and waste budgets over the day with
hand-off episodes shaded and their reasons, the prewarm planned and held, the FinOps figures
(``core.finops``), the operating point chosen at the last retrain against the other quantiles
replayed (``core.operating_point``) and the plan's reasons - every number in the overview links
to them. Each chart sets ``data-points`` on its canvas once drawn (the headless-browser test
reads them).
"""

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>forecaster</title>
<style>
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1200px}
canvas{border:1px solid #ddd;width:100%}
.legend span{margin-right:1.2em}.mode{font-weight:600}
table{border-collapse:collapse;font-size:13px;margin:.3em 0}td,th{border:1px solid #ddd;padding:3px 6px;text-align:left}
#banner{display:none;background:#fde2e2;border:1px solid #d33;padding:.5em;margin:.5em 0;font-weight:600}
#loading{color:#777}h2{font-size:1.1em;margin:1.2em 0 .3em}a{color:#2255aa}
</style></head><body>
<h1>forecaster</h1>
<div id="banner"></div>
<p id="loading">loading: waiting for the daemon's first reconcile tick...</p>
<h2>Cluster overview</h2><div id="overview"></div>
<p>Pool <select id="pool"></select> <span id="mode" class="mode"></span> <span id="at"></span></p>
<h2>Demand, forecast and past forecasts</h2>
<canvas id="chart" width="1200" height="360"></canvas>
<p class="legend"><span style="color:#222">&#9632; actual GPUs requested</span>
<span style="color:#4477aa">&#9632; P50 forecast</span><span style="color:#ee7733" id="upper-legend">&#9632; upper forecast</span>
<span style="color:#aa7700">&#8943; upper as forecast then</span><span style="color:#cc0000">&#9679; missed (demand above it)</span>
<span style="color:#ee6677">&#9632; prewarm GPUs</span></p>
<h2>Error budget and waste budget</h2>
<canvas id="budget" width="1200" height="220"></canvas>
<p class="legend"><span style="color:#228833">&#9632; error budget left (% of the day's)</span>
<span style="color:#aa3377">&#9632; wasted prewarm, GPU-hours in the last 24 h (% of its budget)</span>
<span style="color:#999">&#9632; handed off to reactive scaling</span></p><div id="episodes"></div>
<h2>Prewarm planned and held</h2>
<canvas id="held" width="1200" height="200"></canvas>
<p class="legend"><span style="color:#ee6677">&#9632; planned prewarm GPUs</span><span style="color:#4477aa">&#9632; GPUs billed because of us (whole nodes)</span></p>
<h2 id="money">FinOps, last 24 h</h2><div id="finops"></div>
<h2 id="notice">Announced work</h2><div id="announced"></div>
<h2 id="point">Operating point</h2><div id="operating-point"></div>
<h2 id="reasons">Plan and its reasons</h2><div id="plan"></div>
<script>
const pools = "__POOLS__".split(",").filter(Boolean);
const select = document.getElementById("pool");
for (const p of pools) { const o = document.createElement("option"); o.value = o.textContent = p; select.appendChild(o); }
select.onchange = refresh;
const $ = id => document.getElementById(id);
const esc = s => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;");
const t = s => Date.parse(s);
const money = v => v === null || v === undefined ? "n/a" : "$" + Number(v).toFixed(2);
function timeLabel(ms, span) {
  const iso = new Date(ms).toISOString();
  return span > 2 * 86400e3 ? iso.slice(5, 16).replace("T", " ") : iso.slice(11, 16);
}
// value ticks from the 1-2-5 series: about four steps, the top one at or above the data
function niceStep(top) {
  const raw = Math.max(top, 1e-9) / 4, mag = Math.pow(10, Math.floor(Math.log10(raw)));
  return [1, 2, 5, 10].map(m => m * mag).find(s => s >= raw);
}
// one chart: axes with titles and units, time labels, shaded spans, lines, dots. Every text
// drawn is recorded with its box (data-labels), the value ticks (data-ticks) and the time range
// (data-xrange): the browser test checks that no two boxes overlap, the ticks are round and
// the pool's charts share one time axis.
function plot(id, o) {
  const c = $(id), g = c.getContext("2d"), boxes = [];
  g.clearRect(0, 0, c.width, c.height);
  const text = (s, x, y, align, px) => {
    g.font = px + "px sans-serif"; g.textAlign = align; g.fillText(s, x, y);
    const w = g.measureText(s).width, left = align === "right" ? x - w : align === "center" ? x - w / 2 : x;
    boxes.push([left, y - px, w, px + 2, s]);
  };
  const all = [].concat(...o.lines.map(l => l.pts), ...(o.dots || []).map(d => d.pts));
  if (!all.length) { c.dataset.points = 0; g.fillStyle = "#777"; text("no data yet", 60, 40, "left", 14); c.dataset.labels = JSON.stringify(boxes); return; }
  const x0 = o.xrange ? o.xrange[0] : Math.min(...all.map(p => p[0]));
  const x1 = o.xrange ? o.xrange[1] : Math.max(...all.map(p => p[0]));
  const top = o.ymax || Math.max(1, ...all.map(p => p[1]));
  const step = niceStep(top), y1 = Math.ceil(top / step - 1e-9) * step;
  const L = 66, R = 14, T = 12, B = 44, W = c.width - L - R, H = c.height - T - B;
  const X = x => L + (x - x0) / Math.max(1, x1 - x0) * W, Y = y => T + H - y / y1 * H;
  g.fillStyle = "rgba(150,150,150,0.25)";
  for (const s of o.spans || []) { const a = Math.max(x0, s[0]), b = Math.min(x1, s[1]); if (b > a) g.fillRect(X(a), T, X(b) - X(a), H); }
  g.strokeStyle = "#ccc"; g.fillStyle = "#555"; g.lineWidth = 1;
  const ticks = [];
  for (let y = 0; y <= y1 + step / 2; y += step) {
    const v = Math.round(y / step) * step; ticks.push(v);
    g.beginPath(); g.moveTo(L, Y(v)); g.lineTo(L + W, Y(v)); g.stroke();
    text(o.yfmt ? o.yfmt(v) : String(+v.toPrecision(6)), L - 6, Y(v) + 4, "right", 11);
  }
  // time ticks on round UTC times: the smallest of these intervals that leaves at most 6
  const every = [60e3, 300e3, 900e3, 1800e3, 3600e3, 7200e3, 10800e3, 21600e3, 43200e3, 86400e3, 604800e3]
    .find(v => (x1 - x0) / v <= 6) || 2592000e3;
  for (let x = Math.ceil(x0 / every) * every; x <= x1; x += every) {
    const at = X(x), edge = 30;
    text(timeLabel(x, x1 - x0), at, T + H + 15, at < L + edge ? "left" : at > L + W - edge ? "right" : "center", 11);
  }
  text("time (UTC)", L + W / 2, c.height - 6, "center", 12);
  g.save(); g.translate(16, T + H / 2); g.rotate(-Math.PI / 2); g.font = "12px sans-serif"; g.textAlign = "center"; g.fillText(o.ytitle, 0, 0); g.restore();
  const titleWidth = g.measureText(o.ytitle).width;
  boxes.push([4, T + H / 2 - titleWidth / 2, 14, titleWidth, o.ytitle]);  // rotated: tall and narrow
  g.textAlign = "left";
  for (const a of o.areas || []) { g.fillStyle = a.color; a.pts.forEach((p, i) => { if (i) { const q = a.pts[i - 1]; g.fillRect(X(q[0]), Y(q[1]), Math.max(1, X(p[0]) - X(q[0])), Y(0) - Y(q[1])); } }); }
  for (const l of o.lines) {
    if (!l.pts.length) continue;
    g.strokeStyle = l.color; g.lineWidth = l.width || 1.5; g.setLineDash(l.dash || []); g.beginPath();
    l.pts.forEach((p, i) => i ? g.lineTo(X(p[0]), Y(p[1])) : g.moveTo(X(p[0]), Y(p[1]))); g.stroke();
  }
  g.setLineDash([]);
  for (const d of o.dots || []) { g.fillStyle = d.color; for (const p of d.pts) { g.beginPath(); g.arc(X(p[0]), Y(p[1]), 3, 0, 2 * Math.PI); g.fill(); } }
  c.dataset.points = all.length;
  c.dataset.labels = JSON.stringify(boxes);
  c.dataset.ticks = JSON.stringify(ticks);
  c.dataset.xrange = JSON.stringify([x0, x1]);
}
// one time range for all of a pool's charts: the day's series to the forecast's last target
function timeRange(data, hist) {
  const times = [].concat(data.history.timestamps, hist.timestamps, data.forecast ? data.forecast.target_times : []).map(t).filter(x => !isNaN(x));
  return times.length ? [Math.min(...times), Math.max(...times)] : null;
}
function drawDemand(data, hist, xrange) {
  const pts = [];
  data.history.timestamps.forEach((s, i) => { if (data.history.gpus[i] !== null) pts.push([t(s), data.history.gpus[i]]); });
  const pre = data.prewarm.timestamps.map((s, i) => [t(s), data.prewarm.gpus[i]]);
  const f = data.forecast, last = pts.length ? [pts[pts.length - 1]] : [];
  const p50 = f ? last.concat(f.target_times.map((s, i) => [t(s), f.p50[i]])) : [];
  const up = f ? last.concat(f.target_times.map((s, i) => [t(s), f.upper[i]])) : [];
  if (f) $("upper-legend").textContent = "\\u25a0 P" + Math.round(f.upper_quantile * 100) + " forecast";
  const past = hist.forecasts.target_times.map((s, i) => [t(s), hist.forecasts.upper[i]]);
  const missed = hist.forecasts.target_times.map((s, i) => [t(s), hist.forecasts.actual[i], hist.forecasts.missed[i]]).filter(p => p[2]);
  plot("chart", {ytitle: "GPUs", xrange: xrange, areas: [{pts: pre, color: "rgba(238,102,119,0.35)"}],
    lines: [{pts: pts, color: "#222", width: 1.2}, {pts: past, color: "#aa7700", dash: [4, 3], width: 1.2},
            {pts: p50, color: "#4477aa", width: 2}, {pts: up, color: "#ee7733", width: 2}],
    dots: [{pts: missed, color: "#cc0000"}]});
  $("chart").dataset.forecastPoints = past.length;
}
function drawBudgets(hist, xrange) {
  const ts = hist.timestamps.map(t);
  const budget = ts.map((x, i) => [x, Math.max(0, hist.error_budget_remaining[i]) * 100]);
  const cap = hist.max_waste_gpu_hours_per_day || 1;
  const waste = ts.map((x, i) => [x, Math.min(100, 100 * (hist.waste_gpu_hours_24h[i] || 0) / cap)]);
  const spans = hist.episodes.map(e => [t(e.start), e.end ? t(e.end) : (ts.length ? ts[ts.length - 1] : t(e.start))]);
  plot("budget", {ytitle: "% of budget", ymax: 100, xrange: xrange, yfmt: y => Math.round(y) + "%", spans: spans,
    lines: [{pts: budget, color: "#228833", width: 2}, {pts: waste, color: "#aa3377", width: 2}]});
  $("episodes").innerHTML = hist.episodes.length ? "<table><tr><th>handed off</th><th>until</th><th>why</th></tr>"
    + hist.episodes.map(e => "<tr><td>" + e.start + "</td><td>" + (e.end || "now") + "</td><td>" + esc(e.reason) + "</td></tr>").join("") + "</table>"
    : "<p>No hand-off in the last 24 h.</p>";
}
function drawHeld(hist, xrange) {
  const ts = hist.timestamps.map(t);
  plot("held", {ytitle: "GPUs", xrange: xrange, lines: [
    {pts: ts.map((x, i) => [x, hist.prewarm_gpus[i]]), color: "#ee6677", width: 2},
    {pts: ts.map((x, i) => [x, hist.held_gpus[i]]).filter(p => p[1] !== null), color: "#4477aa", width: 2}]});
}
function overview(status) {
  const rows = Object.entries(status.pools).map(([name, p]) =>
    "<tr><td><a href='#reasons' onclick='select.value=\\"" + name + "\\";refresh()'>" + esc(name) + "</a></td><td>" + esc(p.mode) + "</td>"
    + "<td><a href='#reasons' title='why this number: the plan's reasons'>" + (p.mode === "forecast-only" ? "would prewarm " : "") + p.prewarm_gpus + " GPUs</a></td>"
    + "<td><a href='#budget'>" + (p.error_budget_remaining * 100).toFixed(0) + "%</a></td>"
    + "<td><a href='#money'>" + money(p.finops.prewarm_cost_24h) + "</a> (" + money(p.finops.prewarm_wasted_cost_24h) + " unused)</td>"
    + "<td><a href='#money'>" + money(p.finops.cost_per_used_gpu_hour) + "</a></td>"
    + "<td>" + leadText(p.lead) + "</td><td>" + demandText(p.plan_demand) + "</td></tr>").join("");
  $("overview").innerHTML = "<table><tr><th>pool</th><th>mode</th><th>prewarm</th><th>error budget left</th><th>prewarm cost today</th><th>cost per used GPU-hour</th><th>lead: configured / measured</th><th>plan covers</th></tr>" + rows + "</table>"
    + "<p>Cluster, last 24 h: nodes " + money(status.finops.node_cost_24h) + ", prewarm " + money(status.finops.prewarm_cost_24h)
    + " (" + money(status.finops.prewarm_wasted_cost_24h) + " unused), cost per used GPU-hour " + money(status.finops.cost_per_used_gpu_hour)
    + ", wait removed (estimate) " + status.finops.wait_removed_gpu_minutes_24h_estimate + " GPU-minutes.</p>";
}
function demandText(d) {
  if (!d) return "no forecast";
  const created = d.pods_created_gpus ? " (GPUs of pods created: " + Object.entries(d.pods_created_gpus).map(([w, g]) => g + " in " + w).join(", ") + ")" : "";
  return esc(d.upper_gpus.toFixed(1) + " GPUs, " + (d.peak_over_window ? "now + peak rise (" : "level (") + d.model + ")" + created);
}
function leadText(l) {
  if (!l || !l.measured) return (l ? l.configured_seconds : "?") + " s / not measured yet";
  const m = l.measured;
  return l.configured_seconds + " s / " + m.total_seconds.toFixed(0) + " s (node " + m.provisioning_seconds.toFixed(0)
    + " s" + (m.startup_seconds === null ? "" : " + pod start " + m.startup_seconds.toFixed(0) + " s") + ", " + m.launches + " launches)";
}
function finops(f) {
  const row = (k, v, why) => "<tr><th>" + k + "</th><td>" + v + "</td><td>" + why + "</td></tr>";
  $("finops").innerHTML = "<table>"
    + row("GPU-hours of the pool's nodes", f.gpu_hours_24h + " GPU-h (" + money(f.node_cost_24h) + ")", "what the cloud bills for the pool")
    + row("GPU-hours used by real pods", f.used_gpu_hours_24h + " GPU-h", "running pods' GPU requests")
    + row("cost per used GPU-hour", money(f.cost_per_used_gpu_hour), "node cost / GPU-hours used: idle GPUs and unused prewarm raise it")
    + row("prewarm", f.prewarm_gpu_hours_24h + " GPU-h (" + money(f.prewarm_cost_24h) + ")", "whole nodes held because of us")
    + row("prewarm used", money(f.prewarm_used_cost_24h) + ", " + f.prewarm_taken_gpus_24h + " GPUs taken by real pods", "placeholders real pods preempted")
    + row("prewarm expired unused", f.prewarm_wasted_gpu_hours_24h + " GPU-h (" + money(f.prewarm_wasted_cost_24h) + ")", "ended, withdrawn or renewed without a taker")
    + row("wait removed (estimate)", f.wait_removed_gpu_minutes_24h_estimate + " GPU-minutes", "GPUs taken x the lead time each was spared; replay measures the real counterfactual")
    + "</table>";
  document.body.dataset.finops = "1";
}
function operatingPoint(o) {
  if (!o) { $("operating-point").innerHTML = "<p>The configured quantile (no budget set: <code>operating_point.budget_percent</code>, <code>budget_dollars_per_day</code> or <code>p95_wait_seconds</code>).</p>"; return; }
  const label = (q, f) => "P" + Math.round(q * 100) + (f ? "+" + f : "");
  const chosen = c => c.quantile === o.quantile && (c.floor_gpus || 0) === (o.floor_gpus || 0);
  const row = c => "<tr" + (chosen(c) ? " style='font-weight:600'" : "") + "><td>" + label(c.quantile, c.floor_gpus) + (chosen(c) ? " (chosen)" : "") + "</td><td>"
    + ((c.gpu_hours / (o.reactive_gpu_hours_per_day * (o.window[1] - o.window[0]) / 86400) - 1) * 100).toFixed(1) + "%</td><td>" + c.mean_wait_s.toFixed(0) + " s</td><td>"
    + c.p95_wait_s.toFixed(0) + " s</td><td>" + (c.share_waiting_over_5min * 100).toFixed(1) + "%</td></tr>";
  $("operating-point").innerHTML = "<p>Budget " + esc(o.budget) + ": " + o.gpu_hours_per_day_budget.toFixed(0) + " GPU-hours a day (the GPU-hours cap; +"
    + o.budget_percent.toFixed(1) + "% over reactive). " + esc(o.reason) + "</p><table><tr><th>quantile+floor GPUs</th><th>GPU-hours vs reactive</th><th>mean wait</th><th>P95 wait</th><th>&gt; 5 min</th></tr>"
    + o.candidates.map(row).join("") + "</table><p>Replayed " + o.window.map(w => new Date(w * 1000).toISOString().slice(0, 16)).join(" to ") + " UTC at the last retrain.</p>";
}
function namespaces(top) {
  const row = n => "<tr><td>" + esc(n.namespace) + "</td><td>" + (n.precision_7d * 100).toFixed(0) + "% of " + n.resolved_7d + "</td><td>" + n.held_gpu_hours_7d.toFixed(1) + "</td><td>" + n.waste_gpu_hours_7d.toFixed(1) + "</td></tr>";
  return top.length ? "<table><tr><th>namespace (top by prewarm held, 7 days)</th><th>came</th><th>GPU-hours held for its announced work</th><th>of them for work that did not come</th></tr>" + top.map(row).join("") + "</table>"
    : "<p>No namespace's announced work held prewarm in 7 days.</p>";
}
function announced(sources, top, items, pool) {
  const mins = s => (s / 60).toFixed(0);
  const hours = n => n.gpu_hours.ahead.toFixed(1) + " / " + n.gpu_hours.short.toFixed(1) + " / " + n.gpu_hours.unmeasured.toFixed(1);
  const used = n => "<tr><td>" + esc(n.source) + "</td><td>" + hours(n) + " of " + n.pool_gpu_hours.toFixed(1) + "</td><td>" + (n.ahead_share === null ? "-" : (n.ahead_share * 100).toFixed(1) + "%")
    + "</td><td>" + (n.precision === null ? "-" : (n.precision * 100).toFixed(0) + "% of " + n.resolved) + "</td><td>" + (n.notice_seconds_p10_p50_p90 ? n.notice_seconds_p10_p50_p90.map(mins).join(" / ") + " min" : "-") + "</td></tr>";
  const src = s => "<tr><td>" + esc(s.source) + "</td><td>" + (s.installed ? (s.trusted ? "trusted" : "not trusted: its items are not planned") : "not installed")
    + (s.problem ? " (" + esc(s.problem) + ")" : "") + "</td><td>" + s.items + "</td><td>" + (s.precision_7d === null ? "-" : (s.precision_7d * 100).toFixed(0) + "% of " + s.resolved_7d)
    + "</td><td>" + s.waste_gpu_hours_7d.toFixed(1) + "</td><td>" + (s.came_gpus_7d ? s.ahead_gpus_7d + " of " + s.came_gpus_7d + " GPUs; median " + (s.median_notice_seconds_7d / 60).toFixed(0) + " min" : "-") + "</td></tr>";
  const item = i => "<tr><td>" + esc(i.key) + "</td><td>" + i.gpus + (i.gang ? " (gang)" : "") + "</td><td>" + i.earliest_start + " (in " + Math.max(0, i.starts_in_seconds) + " s)</td></tr>";
  $("announced").innerHTML = (sources.length ? "<table><tr><th>notice source</th><th>state</th><th>items now</th><th>came, 7 days</th><th>GPU-hours held for work that did not come</th><th>came with notice &ge; lead time, 7 days</th></tr>" + sources.map(src).join("") + "</table>" + namespaces(top) : "<p>No notice source read.</p>")
    + (pool.length ? "<table><tr><th>this pool, 7 days</th><th>GPU-hours announced: ahead / short / unmeasured notice, of the pool's</th><th>share of the pool's GPU-hours with notice &ge; lead time</th><th>came, on this pool</th><th>notice P10 / P50 / P90</th></tr>" + pool.map(used).join("") + "</table>" : "")
    + (items.length ? "<table><tr><th>announced for this pool</th><th>GPUs</th><th>earliest start</th></tr>" + items.slice(0, 10).map(item).join("") + "</table>" : "<p>Nothing announced for this pool now.</p>");
}
async function refresh() {
  const pool = select.value || pools[0];
  try {
    const q = "?pool=" + encodeURIComponent(pool);
    const [fr, hr, pr, st] = await Promise.all([fetch("api/v1/forecast" + q), fetch("api/v1/history" + q), fetch("api/v1/plan"), fetch("api/v1/status")]);
    if (!fr.ok) { $("loading").textContent = "waiting for the daemon's first reconcile tick..."; return; }
    const data = await fr.json(), hist = await hr.json(), plan = await pr.json(), status = await st.json();
    $("loading").style.display = "none";
    const xrange = timeRange(data, hist);
    drawDemand(data, hist, xrange); drawBudgets(hist, xrange); drawHeld(hist, xrange); overview(status); finops(status.pools[pool].finops); operatingPoint(status.pools[pool].operating_point);
    announced(status.notice_sources || [], status.notice_namespaces || [], status.pools[pool].announced || [], status.pools[pool].notice_7d || []);
    $("at").textContent = "as of " + data.generated_at + " - model " + data.model + " (" + data.model_version + ")";
    $("mode").textContent = status.pools[pool].mode;
    const b = $("banner");
    if (status.halted) { b.style.display = "block"; b.textContent = "Kill switch on: " + status.halted.reason + " (by " + status.halted.by + ", since " + status.halted.since + ") - every prewarm withdrawn; `forecaster resume` undoes it"; }
    else if (status.not_acting && status.not_acting !== "not the leader") { b.style.display = "block"; b.textContent = "This replica writes nothing: " + status.not_acting; }
    else b.style.display = "none";
    const p = plan.pools.find(x => x.pool === pool);
    const would = p.mode === "forecast-only";
    $("plan").innerHTML = "<table><tr><th>" + (would ? "would prewarm (forecast-only: nothing held)" : "prewarm target") + "</th><td>" + p.target_gpus + " GPUs (" + p.placeholders + (would ? " placeholders it would create" : " placeholders") + ")</td></tr>"
      + p.reasons.map(r => "<tr><td colspan=2>" + esc(r) + "</td></tr>").join("") + "</table>";
    document.body.dataset.points = $("chart").dataset.points;
  } catch (e) { $("loading").style.display = "block"; $("loading").textContent = "endpoint unreachable: " + e; }
}
refresh(); setInterval(refresh, 3000);
</script></body></html>
"""
