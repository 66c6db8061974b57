// Small progressive enhancements; the report works without JavaScript.
(function () {
  "use strict";
  // Open the <details> that holds the element a link points at (e.g. a line anchor).
  function revealTarget() {
    if (!location.hash) return;
    var el = document.getElementById(decodeURIComponent(location.hash.slice(1)));
    for (var p = el; p; p = p.parentElement) {
      if (p.tagName === "DETAILS") p.open = true;
    }
  }
  window.addEventListener("hashchange", revealTarget);
  document.addEventListener("DOMContentLoaded", function () {
    revealTarget();
    // Filter box for long tables: <input data-filter="table-id">
    document.querySelectorAll("input[data-filter]").forEach(function (box) {
      var table = document.getElementById(box.getAttribute("data-filter"));
      if (!table) return;
      box.addEventListener("input", function () {
        var q = box.value.toLowerCase();
        table.querySelectorAll("tbody tr").forEach(function (row) {
          row.style.display = row.textContent.toLowerCase().indexOf(q) >= 0 ? "" : "none";
        });
      });
    });
  });
})();
