// tether ui: small progressive enhancements. Every page works without this file.
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  // "Select all" buttons toggle the checkboxes of their form named by data-select-all.
  document.querySelectorAll("[data-select-all]").forEach(function (button) {
    button.addEventListener("click", function () {
      var boxes = button.form.querySelectorAll('input[type="checkbox"][name="' + button.dataset.selectAll + '"]');
      var all = Array.prototype.every.call(boxes, function (b) { return b.checked; });
      boxes.forEach(function (b) { b.checked = !all; });
      button.textContent = all ? "Select all" : "Select none";
    });
  });

  // Browse: a changed select applies the filters at once.
  var filters = document.querySelector("form.filters");
  if (filters) {
    filters.querySelectorAll("select").forEach(function (select) {
      select.addEventListener("change", function () { filters.requestSubmit(); });
    });
  }

  // Recall playground: one more file field once the last one is used.
  var files = document.querySelector("fieldset.files");
  if (files) {
    files.addEventListener("input", function () {
      var inputs = files.querySelectorAll("input");
      var last = inputs[inputs.length - 1];
      if (last && last.value) {
        var more = last.cloneNode();
        more.value = "";
        more.setAttribute("aria-label", "touched file " + (inputs.length + 1));
        files.appendChild(more);
      }
    });
  }

  // "/" focuses the search field, as in most web apps.
  document.addEventListener("keydown", function (event) {
    var search = document.querySelector('input[type="search"]');
    var typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement && document.activeElement.tagName);
    if (event.key === "/" && search && !typing) {
      event.preventDefault();
      search.focus();
    }
  });
})();
