// Provenance panels: hovering or clicking a line highlights what it came from and what it became.
(function () {
  "use strict";
  var island = document.getElementById("provenance-data");
  if (!island) return;
  var DATA = JSON.parse(island.textContent);
  var OTHERS = { pre: ["post", "code"], post: ["pre", "code"], code: ["post", "pre"] };

  function get(map, n) { return (map && map[n]) || []; }
  function add(list, items) { items.forEach(function (x) { if (list.indexOf(x) < 0) list.push(x); }); }
  function through(map, lines) { var out = []; lines.forEach(function (n) { add(out, get(map, n)); }); return out; }

  // Lines of the other panels related to line n of a panel: {panel: [[line, inferred?], ...]}
  function related(d, panel, n) {
    var r = { pre: [], post: [], code: [] }, inf = { pre: [], post: [], code: [] };
    if (panel === "pre") {
      add(r.post, get(d.preToPost, n));
      add(r.code, through(d.postToCode, r.post));
      add(inf.code, through(d.inferredPostToCode, r.post));
    } else if (panel === "post") {
      add(r.pre, get(d.postToPre, n));
      add(r.code, get(d.postToCode, n));
      add(inf.code, get(d.inferredPostToCode, n));
    } else {
      add(r.post, get(d.codeToPost, n));
      add(inf.post, get(d.inferredCodeToPost, n));
      add(r.pre, through(d.postToPre, r.post));
      add(inf.pre, through(d.postToPre, inf.post));
    }
    return { sure: r, inferred: inf };
  }

  function scrollToLine(body, el) {
    var top = el.offsetTop - (body.clientHeight - el.offsetHeight) / 2;
    body.scrollTop = Math.max(0, top);
  }

  function setupSection(el, d) {
    var bodies = {};
    el.querySelectorAll(".prov-panel").forEach(function (p) { bodies[p.getAttribute("data-panel")] = p.querySelector(".prov-body"); });
    var marked = [], pinned = null;

    function line(panel, n) { return document.getElementById(el.id + "-" + panel + "-L" + n); }
    function clear() { marked.forEach(function (e) { e.classList.remove("sel", "rel", "inf"); }); marked = []; }
    function mark(panel, n, cls) {
      var e = line(panel, n);
      if (e) { e.classList.add(cls); marked.push(e); }
      return e;
    }
    function show(panel, n, scroll) {
      clear();
      var own = mark(panel, n, "sel");
      if (own && scroll === "self") scrollToLine(bodies[panel], own);
      var r = related(d, panel, n);
      OTHERS[panel].forEach(function (p) {
        var els = [];
        r.sure[p].forEach(function (m) { var e = mark(p, m, "rel"); if (e) els.push(e); });
        r.inferred[p].forEach(function (m) { if (r.sure[p].indexOf(m) < 0) { var e = mark(p, m, "inf"); if (e) els.push(e); } });
        if (scroll && els.length && bodies[p]) {
          els.sort(function (a, b) { return a.offsetTop - b.offsetTop; });
          scrollToLine(bodies[p], els[Math.floor(els.length / 2)]);
        }
      });
    }
    function pin(panel, n, scroll) {
      pinned = { panel: panel, n: n };
      show(panel, n, scroll);
      if (history.replaceState) history.replaceState(null, "", "#" + el.id + "-" + panel + "-L" + n);
    }
    function restore() { if (pinned) show(pinned.panel, pinned.n, false); else clear(); }
    function lineOf(target) {
      var e = target.closest ? target.closest(".pl") : null;
      return e ? parseInt(e.getAttribute("data-n"), 10) : null;
    }

    Object.keys(bodies).forEach(function (panel) {
      var body = bodies[panel];
      body.addEventListener("mouseover", function (ev) {
        var n = lineOf(ev.target);
        if (n !== null) show(panel, n, true);
      });
      body.addEventListener("mouseleave", restore);
      body.addEventListener("click", function (ev) {
        if (ev.target.closest && ev.target.closest("a")) return;  // a kernel link: just follow it
        var n = lineOf(ev.target);
        if (n !== null) pin(panel, n, true);
      });
      body.addEventListener("keydown", function (ev) {
        var down = ev.key === "ArrowDown" || ev.key === "j", up = ev.key === "ArrowUp" || ev.key === "k";
        if (ev.key === "Escape") { pinned = null; clear(); ev.preventDefault(); return; }
        if (!down && !up) return;
        var mapped = Array.prototype.map.call(body.querySelectorAll(".pl.m"), function (e) { return parseInt(e.getAttribute("data-n"), 10); });
        if (!mapped.length) return;
        var cur = pinned && pinned.panel === panel ? pinned.n : (down ? 0 : Infinity), next = null;
        mapped.forEach(function (m) {
          if (down && m > cur && (next === null || m < next)) next = m;
          if (up && m < cur && (next === null || m > next)) next = m;
        });
        if (next !== null) pin(panel, next, "self");
        ev.preventDefault();
      });
    });

    // Resizable panels: a divider moves the border between the panels on its two sides.
    el.querySelectorAll(".prov-divider").forEach(function (div) {
      var prev = div.previousElementSibling, next = div.nextElementSibling;
      function moveTo(x) {
        var a = prev.getBoundingClientRect(), b = next.getBoundingClientRect(), min = 80;
        var total = a.width + b.width, w = Math.min(Math.max(x - a.left, min), total - min);
        prev.style.flex = "0 0 " + w + "px";
        next.style.flex = "0 0 " + (total - w) + "px";
      }
      div.addEventListener("mousedown", function (ev) {
        ev.preventDefault();
        function onMove(e) { moveTo(e.clientX); }
        function onUp() { document.removeEventListener("mousemove", onMove); document.removeEventListener("mouseup", onUp); document.body.style.cursor = ""; }
        document.body.style.cursor = "col-resize";
        document.addEventListener("mousemove", onMove);
        document.addEventListener("mouseup", onUp);
      });
      div.addEventListener("keydown", function (ev) {
        var step = ev.key === "ArrowLeft" ? -40 : ev.key === "ArrowRight" ? 40 : 0;
        if (!step) return;
        moveTo(prev.getBoundingClientRect().right + step);
        ev.preventDefault();
      });
    });

    return { pin: pin };
  }

  var sections = [];
  document.querySelectorAll(".prov-section").forEach(function (el) {
    sections.push(setupSection(el, DATA[parseInt(el.getAttribute("data-section"), 10)] || {}));
  });

  function showSection(i) {
    document.querySelectorAll(".prov-section").forEach(function (el) { el.hidden = el.getAttribute("data-section") !== String(i); });
    document.querySelectorAll(".prov-tabs button").forEach(function (b) { b.setAttribute("aria-selected", b.getAttribute("data-section") === String(i) ? "true" : "false"); });
  }
  document.querySelectorAll(".prov-tabs button").forEach(function (b) {
    b.addEventListener("click", function () { showSection(b.getAttribute("data-section")); });
  });

  // #s<section>-<panel>-L<line> (from the kernel page, or a kernel's note above the panels): open that section and
  // select the line.
  function openHash() {
    var m = /^#s(\d+)-(pre|post|code)-L(\d+)$/.exec(location.hash);
    if (!m || !sections[+m[1]]) return;
    showSection(m[1]);
    sections[+m[1]].pin(m[2], parseInt(m[3], 10), "self");
    // Stacked panels (a phone): the selected line's panel may be below the screen; bring it up.
    var sel = document.getElementById("s" + m[1] + "-" + m[2] + "-L" + m[3]);
    if (sel) {
      var r = sel.getBoundingClientRect();
      if (r.top < 0 || r.bottom > window.innerHeight) sel.closest(".prov-panel").scrollIntoView({ block: "start" });
    }
  }
  openHash();
  window.addEventListener("hashchange", openHash);
})();
