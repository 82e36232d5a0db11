// Flame graph interaction: click a frame to zoom, "Reset zoom" (or Escape)
// to go back, search (regular expression, else literal text) to highlight
// frames and show the matched share. Kept dependency-free so the SVG is one
// self-contained file.
(function () {
  "use strict";
  var svg = document.documentElement;
  var W = parseFloat(svg.getAttribute("width")), PAD = 10, FW = W - 2 * PAD;
  var CHAR = 6.6; // width of one 11px monospace character
  var frames = Array.prototype.slice.call(document.querySelectorAll("g.f"));
  var details = document.getElementById("details");
  var matched = document.getElementById("matched");
  var search = document.getElementById("search");
  var reset = document.getElementById("reset");
  function num(g, k) { return parseFloat(g.getAttribute("data-" + k)); }
  function fit(name, px) {
    var n = Math.floor((px - 6) / CHAR);
    if (n < 3) return "";
    return name.length <= n ? name : name.slice(0, n - 2) + "..";
  }
  function place(g, x, w) {
    var r = g.querySelector("rect"), t = g.querySelector("text");
    var px = PAD + x * FW, pw = w * FW;
    r.setAttribute("x", px.toFixed(2));
    r.setAttribute("width", Math.max(pw, 0).toFixed(2));
    t.setAttribute("x", (px + 3).toFixed(2));
    t.textContent = fit(g.getAttribute("data-n"), pw);
    g.style.display = "";
  }
  function zoom(g) {
    var x0 = num(g, "x"), w0 = num(g, "w"), d0 = num(g, "d"), eps = 1e-9;
    frames.forEach(function (f) {
      var x = num(f, "x"), w = num(f, "w"), d = num(f, "d");
      f.classList.remove("anc");
      if (d < d0 && x <= x0 + eps && x + w >= x0 + w0 - eps) {
        place(f, 0, 1);
        f.classList.add("anc");
      } else if (d >= d0 && x >= x0 - eps && x + w <= x0 + w0 + eps) {
        place(f, (x - x0) / w0, w / w0);
      } else {
        f.style.display = "none";
      }
    });
    svg.setAttribute("data-zoomed", d0 === 0 ? "" : g.getAttribute("data-n"));
    reset.style.opacity = d0 === 0 ? "0.3" : "1";
  }
  function unzoom() { zoom(frames[0]); }
  function highlight(term) {
    var re = null;
    if (term) {
      try { re = new RegExp(term); } catch (e) { re = new RegExp(term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")); }
    }
    var spans = [];
    frames.forEach(function (f) {
      var r = f.querySelector("rect");
      if (re && re.test(f.getAttribute("data-n"))) {
        r.setAttribute("fill", "rgb(230,0,230)");
        f.classList.add("hl");
        spans.push([num(f, "x"), num(f, "x") + num(f, "w")]);
      } else {
        r.setAttribute("fill", f.getAttribute("data-c"));
        f.classList.remove("hl");
      }
    });
    // Matched share: the union of the matched intervals, so a match nested
    // in another match is not counted twice.
    spans.sort(function (a, b) { return a[0] - b[0]; });
    var total = 0, end = -1;
    spans.forEach(function (s) {
      if (s[0] >= end) { total += s[1] - s[0]; end = s[1]; }
      else if (s[1] > end) { total += s[1] - end; end = s[1]; }
    });
    var pct = (100 * total).toFixed(1);
    matched.textContent = re ? "Matched: " + pct + "% (" + spans.length + " frames)" : "";
    svg.setAttribute("data-matched", re ? pct : "");
  }
  frames.forEach(function (f) {
    f.addEventListener("click", function (e) { e.stopPropagation(); zoom(f); });
    f.addEventListener("mouseover", function () {
      details.textContent = f.getAttribute("data-n") + " — " + f.getAttribute("data-i");
    });
    f.addEventListener("mouseout", function () { details.textContent = " "; });
  });
  reset.addEventListener("click", unzoom);
  search.addEventListener("input", function () { highlight(search.value); });
  document.addEventListener("keydown", function (e) {
    if ((e.ctrlKey || e.metaKey) && e.key === "f") { e.preventDefault(); search.focus(); }
    if (e.key === "Escape") { search.value = ""; highlight(""); unzoom(); }
  });
  unzoom();
})();
