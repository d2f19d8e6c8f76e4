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
  var SCROLL_BOXES = ".table-scroll, .scroll-x, .bracket, .suite-run-answers, .output pre, .output table";
  function focusableScrollBoxes() {
    document.querySelectorAll(SCROLL_BOXES).forEach(function (box) {
      if (box.scrollWidth > box.clientWidth) {
        if (!box.hasAttribute("tabindex")) box.setAttribute("tabindex", "0");
      } else if (box.getAttribute("tabindex") === "0") {
        box.removeAttribute("tabindex");
      }
    });
  }
  // One pass a little after the last change: a streaming answer swaps fragments in many times a second.
  var scrollBoxesTimer = null;
  function soonFocusableScrollBoxes() {
    clearTimeout(scrollBoxesTimer);
    scrollBoxesTimer = setTimeout(focusableScrollBoxes, 150);
  }
  document.addEventListener("DOMContentLoaded", focusableScrollBoxes);
  document.addEventListener("htmx:load", soonFocusableScrollBoxes);
  window.addEventListener("resize", soonFocusableScrollBoxes);
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
