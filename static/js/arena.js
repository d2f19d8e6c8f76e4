// The pages' own behaviour, as a file: the Content-Security-Policy (arena/security.py) runs
// no inline script or on* handler. Delegated listeners, so fragments htmx swaps in work too.
(function () {
  "use strict";
  // A read-only link field selects itself when focused, ready to copy.
  document.addEventListener("focusin", function (event) {
    var field = event.target;
    if (field instanceof HTMLInputElement && field.hasAttribute("data-select-on-focus")) field.select();
  });
  // A Copy button copies the field it names (data-copy="<id>"), then says so.
  document.addEventListener("click", function (event) {
    var button = event.target instanceof Element ? event.target.closest("button[data-copy]") : null;
    if (!button) return;
    var field = document.getElementById(button.getAttribute("data-copy"));
    if (!field || !navigator.clipboard) return;
    navigator.clipboard.writeText(field.value).then(function () { button.textContent = "Copied"; });
  });
  // A box that scrolls sideways (a wide table or the bracket on a phone) takes keyboard focus
  // while its content overflows, so arrow keys scroll it too; one that fits is no tab stop.
  var SCROLL_BOXES = ".table-scroll, .bracket, .suite-run-answers, .output pre, .output table";
  function updateScrollBox(box) {
    if (box.scrollWidth > box.clientWidth) {
      if (!box.hasAttribute("tabindex")) box.setAttribute("tabindex", "0");
    } else if (box.getAttribute("tabindex") === "0") {
      box.removeAttribute("tabindex");
    }
  }
  // A box's content can grow after it was first looked at (a late layout: fonts, a scrollbar
  // appearing, a table filled in): each box and its content are watched, and looked at again.
  var watched = new WeakSet();
  var watcher = window.ResizeObserver ? new ResizeObserver(function (entries) {
    entries.forEach(function (entry) {
      var box = entry.target.matches(SCROLL_BOXES) ? entry.target : entry.target.parentElement;
      if (box) updateScrollBox(box);
    });
  }) : null;
  function focusableScrollBoxes(root) {
    var boxes = Array.prototype.slice.call(root.querySelectorAll(SCROLL_BOXES));
    var around = root instanceof Element ? root.closest(SCROLL_BOXES) : null;  // content swapped into a box
    if (around) boxes.push(around);
    boxes.forEach(function (box) {
      updateScrollBox(box);
      if (watcher && !watched.has(box)) {
        watched.add(box);
        watcher.observe(box);
        if (box.firstElementChild) watcher.observe(box.firstElementChild);
      }
    });
  }
  document.addEventListener("DOMContentLoaded", function () { focusableScrollBoxes(document); });
  // Only what a swap brought in (a streaming answer swaps small fragments many times a second).
  document.addEventListener("htmx:load", function (event) {
    if (event.target instanceof Element) focusableScrollBoxes(event.target);
  });
  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () { focusableScrollBoxes(document); }, 150);
  });
  // A streaming answer that starts out of sight (on a phone the playground's answer lies below
  // its form) is brought into view once, when its socket's first message arrives; one already in
  // sight stays put, and later messages never scroll (the reader may have scrolled away).
  var streamsSeen = new WeakSet();
  document.addEventListener("htmx:wsAfterMessage", function (event) {
    var socket = event.target;
    if (!(socket instanceof Element) || streamsSeen.has(socket)) return;
    streamsSeen.add(socket);
    var answer = socket.matches("[data-scroll-on-stream]") ? socket : socket.querySelector("[data-scroll-on-stream]");
    if (!answer) return;
    var top = answer.getBoundingClientRect().top;
    if (top >= 0 && top < window.innerHeight * 0.6) return;
    var still = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    answer.scrollIntoView({ block: "start", behavior: still ? "auto" : "smooth" });
  });
})();
