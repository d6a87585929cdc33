"""The console's style sheet and its one script, served from /static/ (no CDN, no inline
script: the Content-Security-Policy allows only this origin's files)."""

from __future__ import annotations

CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #222; background: #fafafa; }
header { background: #243447; color: #fff; padding: 8px 16px; display: flex; gap: 16px; }
header a { color: #cfe3ff; margin-right: 10px; }
header .status { margin-left: auto; color: #ffd27f; }
main { padding: 8px 16px 32px; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 24px; }
table { border-collapse: collapse; background: #fff; margin: 8px 0; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #eef2f6; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
pre { background: #fff; border: 1px solid #ddd; padding: 8px; white-space: pre-wrap;
      word-break: break-all; max-width: 960px; }
td pre { margin: 0; border: 0; padding: 0; }
form { display: inline; margin: 0 4px; }
form#selection { display: block; margin: 0; }
button { cursor: pointer; }
.note { color: #666; }
.error { background: #fdecea; border: 1px solid #c0392b; padding: 12px; max-width: 800px; }
.done { background: #eafaf1; border: 1px solid #1e8449; padding: 12px; max-width: 800px; }
.chart { display: block; background: #fff; border: 1px solid #ddd; margin: 8px 0; }
.axis { font-size: 11px; fill: #555; }
.filters input { margin-right: 8px; }
#health { padding: 4px 12px; max-width: 960px; border: 1px solid #ddd; background: #fff; }
#health.alert { border-color: #c0392b; background: #fdecea; }
#health.ok { border-color: #1e8449; background: #eafaf1; }
"""

# The overview's live region refreshes itself from its `data-src` every `data-every`
# seconds; `outboxRefresh()` refreshes it at once (the browser test calls it instead of
# waiting for the timer).
JS = """
(function () {
  var live = document.getElementById("live");
  if (!live) { return; }
  function refresh() {
    return fetch(live.dataset.src, {credentials: "same-origin"}).then(function (answer) {
      var status = document.querySelector("header .status");
      if (!answer.ok) {
        status.textContent = "Firestore unreachable: showing the last reading";
        return;
      }
      return answer.text().then(function (text) {
        live.innerHTML = text;
        live.dataset.refreshed = String(Number(live.dataset.refreshed || "0") + 1);
        status.textContent = "";
      });
    }).catch(function () {
      document.querySelector("header .status").textContent = "console unreachable";
    });
  }
  window.outboxRefresh = refresh;
  setInterval(refresh, Number(live.dataset.every) * 1000);
})();
"""

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)

STATIC = {
    "/static/console.css": ("text/css; charset=utf-8", CSS.encode()),
    "/static/live.js": ("text/javascript; charset=utf-8", JS.encode()),
}
