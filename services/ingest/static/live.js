// Follows a running run: appends its new output and refreshes the parts of the page that
// show its state. The page works without this script; it only saves reloading.
(function () {
  "use strict";
  var root = document.querySelector("[data-live]");
  if (!root || !window.EventSource) return;
  var log = document.getElementById("log");
  var source = new EventSource(root.getAttribute("data-live"));
  var refreshing = false;
  var again = false;

  source.addEventListener("log", function (e) {
    var lines = JSON.parse(e.data);
    var follow = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
    lines.forEach(function (l) {
      var line = document.createElement("span");
      line.className = l.stream === "stderr" ? "line stderr" : "line";
      var src = document.createElement("span");
      src.className = "src";
      src.textContent = "[" + l.node + "#" + l.attempt + "] ";
      line.appendChild(src);
      line.appendChild(document.createTextNode(l.line + "\n"));
      log.appendChild(line);
    });
    if (follow) log.scrollTop = log.scrollHeight;
  });

  // Sections are swapped for the server's fresh copy; the decision form only when the
  // gates waiting changed, so a comment being typed is not lost.
  // A change announced while a refresh is under way is fetched again after it, not lost.
  function refresh() {
    if (refreshing) {
      again = true;
      return;
    }
    refreshing = true;
    again = false;
    fetch(window.location.pathname, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) return;
        var fresh = new DOMParser().parseFromString(html, "text/html");
        ["run-head", "commands", "graph", "nodes", "audit", "decide", "logs-note"].forEach(function (id) {
          var now = document.getElementById(id);
          var next = fresh.getElementById(id);
          if (!now || !next) return;
          if (id === "decide" && now.getAttribute("data-key") === next.getAttribute("data-key")) return;
          now.replaceWith(document.importNode(next, true));
        });
      })
      .finally(function () {
        refreshing = false;
        if (again) refresh();
      });
  }

  // On (re)connecting too: the stream reports changes from when it starts, and the page
  // may be older than that (rendered before it connected, or left while disconnected).
  source.addEventListener("open", refresh);
  source.addEventListener("state", refresh);
  source.addEventListener("end", function () {
    source.close();
    refresh();
  });
})();
