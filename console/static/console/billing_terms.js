/* Billing terms by billing model (console/businesses.py, show_billing_terms_by_model): the
   fields only a monthly invoice has (marked data-invoice-only: net days) show while "Monthly
   invoice" is chosen and are hidden and disabled for a prepaid wallet, on the approve page and
   on the business page. Without this script every field shows and the server ignores the
   invoice-only ones for a wallet. */
(function () {
  "use strict";
  var INVOICED = "invoiced";

  function setUp() {
    var model = document.querySelector('select[name="billing_model"]');
    var fields = document.querySelectorAll("[data-invoice-only]");
    if (!model || !fields.length) {
      return;
    }
    function show() {
      var invoiced = model.value === INVOICED;
      Array.prototype.forEach.call(fields, function (field) {
        var row = field.closest(".form-row") || field;
        row.hidden = !invoiced;
        field.disabled = !invoiced;
      });
    }
    model.addEventListener("change", show);
    show();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setUp);
  } else {
    setUp();
  }
})();
