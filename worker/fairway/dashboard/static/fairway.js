// Fairway dashboard: refresh the page's <main> every few seconds without a full reload, and send the
// token (kept for this tab only, in sessionStorage) with every action form. No build step, no library.
(function () {
  "use strict";
  var REFRESH_MS = 3000;
  var live = document.getElementById("live");
  var tokenInput = document.getElementById("token");
  if (tokenInput) {
    tokenInput.value = sessionStorage.getItem("fairway-token") || "";
    tokenInput.addEventListener("input", function () { sessionStorage.setItem("fairway-token", tokenInput.value); });
  }
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.classList || !form.classList.contains("action")) return;
    if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) { event.preventDefault(); return; }
    var token = form.querySelector('input[name="token"]');
    if (!token) { token = document.createElement("input"); token.type = "hidden"; token.name = "token"; form.appendChild(token); }
    token.value = sessionStorage.getItem("fairway-token") || "";
  });
  function busy() {
    var active = document.activeElement;
    return active && active !== document.body && live.contains(active) && /INPUT|SELECT|TEXTAREA/.test(active.tagName);
  }
  function refresh() {
    if (!live || document.visibilityState !== "visible" || busy()) return;
    fetch(live.dataset.fragment, { headers: { "Accept": "text/html" } })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (text) { if (text !== null && !busy()) { live.innerHTML = text; live.dataset.refreshed = String(Date.now()); } })
      .catch(function () { /* a missed refresh is retried on the next tick */ });
  }
  if (live) window.setInterval(refresh, REFRESH_MS);
})();
