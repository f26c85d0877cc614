"""The inspection page: one HTML document with inline drawing code (no CDN, no framework)."""

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>forecaster</title>
<style>
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1200px}
#chart{border:1px solid #ddd;width:100%;height:380px}
.legend span{margin-right:1.2em}.mode{font-weight:600}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ddd;padding:3px 6px;text-align:left}
</style></head><body>
<h1>forecaster</h1>
<p>Pool <select id="pool"></select> <span id="mode" class="mode"></span> <span id="at"></span></p>
<canvas id="chart" width="1200" height="380"></canvas>
<p class="legend"><span style="color:#222">&#9632; actual GPUs requested</span>
<span style="color:#4477aa">&#9632; P50 forecast</span><span style="color:#ee7733" id="upper-legend">&#9632; upper forecast</span>
<span style="color:#ee6677">&#9632; prewarm GPUs</span></p>
<h2>Plan</h2><div id="plan"></div>
<script>
const pools = "__POOLS__".split(",").filter(Boolean);
const select = document.getElementById("pool");
for (const p of pools) { const o = document.createElement("option"); o.value = o.textContent = p; select.appendChild(o); }
select.onchange = refresh;
function t(s) { return Date.parse(s); }
function draw(data) {
  const c = document.getElementById("chart"), g = c.getContext("2d");
  g.clearRect(0, 0, c.width, c.height);
  const pts = [];
  data.history.timestamps.forEach((s, i) => { if (data.history.gpus[i] !== null) pts.push([t(s), data.history.gpus[i]]); });
  const pre = data.prewarm.timestamps.map((s, i) => [t(s), data.prewarm.gpus[i]]);
  const f = data.forecast;
  const p50 = f ? f.target_times.map((s, i) => [t(s), f.p50[i]]) : [];
  const p95 = f ? f.target_times.map((s, i) => [t(s), f.upper[i]]) : [];
  if (f) document.getElementById("upper-legend").textContent = "\u25a0 P" + Math.round(f.upper_quantile * 100) + " forecast";
  const all = pts.concat(pre, p50, p95);
  if (!all.length) { document.body.dataset.points = 0; return; }
  const x0 = Math.min(...all.map(p => p[0])), x1 = Math.max(...all.map(p => p[0]));
  const y1 = Math.max(1, ...all.map(p => p[1])) * 1.05;
  const L = 50, R = 10, T = 10, B = 30, W = c.width - L - R, H = c.height - T - B;
  const X = x => L + (x - x0) / Math.max(1, x1 - x0) * W, Y = y => T + H - y / y1 * H;
  g.strokeStyle = "#bbb"; g.fillStyle = "#555"; g.font = "11px sans-serif";
  for (let k = 0; k <= 4; k++) { const y = y1 * k / 4; g.beginPath(); g.moveTo(L, Y(y)); g.lineTo(L + W, Y(y)); g.stroke(); g.fillText(Math.round(y), 5, Y(y) + 4); }
  for (let k = 0; k <= 4; k++) { const x = x0 + (x1 - x0) * k / 4; g.fillText(new Date(x).toISOString().slice(5, 16).replace("T", " "), X(x) - 35, c.height - 10); }
  function line(ps, color, width) { if (!ps.length) return; g.strokeStyle = color; g.lineWidth = width; g.beginPath(); ps.forEach((p, i) => i ? g.lineTo(X(p[0]), Y(p[1])) : g.moveTo(X(p[0]), Y(p[1]))); g.stroke(); }
  g.fillStyle = "rgba(238,102,119,0.35)";
  pre.forEach((p, i) => { if (i) { const q = pre[i - 1]; g.fillRect(X(q[0]), Y(q[1]), Math.max(1, X(p[0]) - X(q[0])), Y(0) - Y(q[1])); } });
  line(pts, "#222", 1.2);
  const last = pts.length ? [pts[pts.length - 1]] : [];
  line(last.concat(p50), "#4477aa", 2); line(last.concat(p95), "#ee7733", 2);
  document.body.dataset.points = pts.length + pre.length + p50.length;
}
async function refresh() {
  const pool = select.value || pools[0];
  try {
    const [fr, pr, st] = await Promise.all([fetch("api/v1/forecast?pool=" + encodeURIComponent(pool)), fetch("api/v1/plan"), fetch("api/v1/status")]);
    if (!fr.ok) { document.getElementById("at").textContent = "waiting for the first tick..."; return; }
    const data = await fr.json(), plan = await pr.json(), status = await st.json();
    draw(data);
    document.getElementById("at").textContent = "as of " + data.generated_at + " - model " + data.model + " (" + data.model_version + ")";
    document.getElementById("mode").textContent = status.pools[pool].mode;
    const p = plan.pools.find(x => x.pool === pool);
    document.getElementById("plan").innerHTML = "<table><tr><th>prewarm target</th><td>" + p.target_gpus + " GPUs (" + p.placeholders + " placeholders)</td></tr>"
      + p.reasons.map(r => "<tr><td colspan=2>" + r.replace(/</g, "&lt;") + "</td></tr>").join("") + "</table>";
  } catch (e) { document.getElementById("at").textContent = "endpoint unreachable: " + e; }
}
refresh(); setInterval(refresh, 3000);
</script></body></html>
"""
