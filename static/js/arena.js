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
})();
