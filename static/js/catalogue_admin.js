// The catalogue entry's admin form (arena/catalogue/admin.py SECTIONS): each section of engine-
// specific fields is marked engine-<name> for the engines it applies to; changing the engine shows
// those of the new engine and hides the rest, as the server renders them for a saved entry.
// The Test button says it is working while the test runs (it waits for a model to start).
"use strict";

(function () {
  function showSectionsOf(engine) {
    document.querySelectorAll("fieldset.engine-section").forEach(function (section) {
      section.classList.toggle("hidden", !section.classList.contains("engine-" + engine));
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var engine = document.getElementById("id_engine");
    if (engine) {
      engine.addEventListener("change", function () { showSectionsOf(engine.value); });
      showSectionsOf(engine.value);
    }
    var test = document.querySelector("form.catalogue-test-form");
    if (test) {
      test.addEventListener("submit", function () {
        var button = test.querySelector("button");
        button.disabled = true;
        button.textContent = "Testing…";
      });
    }
  });
})();
