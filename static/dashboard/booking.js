/* New delivery and the pickup place form, better with JavaScript (both work without it):
   addresses found on the map as they are typed, pins dragged to correct them (the corrected
   pin is what the form sends), drop rows added and removed in place, the address book offered
   as a name or phone is typed, and the live quote of POST /orders/new/quote/ as the form
   changes. The same Leaflet setup as static/dashboard/maps.js. Its words come in the page's
   language from the dashboard's catalogue (templates/dashboard/_script_words.html); without
   it, they are English. */
(function () {
  "use strict";
  var gettext = window.gettext || function (text) { return text; };
  var interpolate = window.interpolate || function (text, values) {
    return text.replace(/%\((\w+)\)s/g, function (all, name) { return values[name]; });
  };
  // How a pin came to be where it is, said in a whole sentence each.
  var PIN_WORDS = {
    found: gettext("Pin found at %(lat)s, %(long)s."),
    moved: gettext("Pin moved at %(lat)s, %(long)s."),
    again: gettext("Pin as last time at %(lat)s, %(long)s."),
    set: gettext("Pin set at %(lat)s, %(long)s.")
  };
  var form = document.getElementById("booking") || document.getElementById("place-form");
  if (!form) return;
  var L = window.L;
  var mapData = document.getElementById("map-data");
  var placesData = document.getElementById("places-data");
  var places = placesData ? JSON.parse(placesData.textContent) : {};
  var csrf = form.querySelector("[name=csrfmiddlewaretoken]").value;
  var map = null;
  var pickupMarker = null;
  var markers = new Map(); // row element → its marker

  function debounce(fn, ms) {
    var timer = null;
    return function () {
      var args = arguments;
      clearTimeout(timer);
      timer = setTimeout(function () { fn.apply(null, args); }, ms);
    };
  }

  function pin(classes, at, label, draggable) {
    var icon = L.divIcon({ className: "pin pin-tear " + classes, html: "<span></span>", iconSize: [26, 26], iconAnchor: [13, 31] });
    return L.marker(at, { icon: icon, title: label, draggable: draggable, keyboard: false }).addTo(map);
  }

  function setUpMap() {
    if (!mapData || typeof L === "undefined") return;
    var data = JSON.parse(mapData.textContent);
    var card = document.getElementById("map-card");
    card.hidden = false;
    map = L.map(document.getElementById("booking-map"), { attributionControl: Boolean(data.tiles), scrollWheelZoom: false, zoomSnap: 0.5 });
    if (data.tiles) {
      L.tileLayer(data.tiles.url, { attribution: data.tiles.attribution, maxZoom: 19, referrerPolicy: "strict-origin" }).addTo(map);
    }
    data.areas.forEach(function (rings) {
      L.polygon(rings, { className: "service-area", interactive: false }).addTo(map);
    });
    map.setView([11.5564, 104.9282], 12);
    document.getElementById("booking-map").setAttribute("data-ready", "true");
  }

  function fit() {
    if (!map) return;
    var points = [];
    if (pickupMarker) points.push(pickupMarker.getLatLng());
    markers.forEach(function (marker) { points.push(marker.getLatLng()); });
    if (points.length) map.fitBounds(L.latLngBounds(points), { paddingTopLeft: [30, 52], paddingBottomRight: [30, 24], maxZoom: 15 });
  }

  function input(row, name) {
    return row.querySelector("[name$='-" + name + "'], [name='" + name + "']");
  }

  function dropName(n) {
    return interpolate(gettext("Drop %(n)s"), { n: n }, true);
  }

  function number(row) {
    var span = row.querySelector(".drop-number");
    return span ? span.textContent : "";
  }

  function showPin(row, lat, long, how) {
    input(row, "lat").value = lat.toFixed(6);
    input(row, "long").value = long.toFixed(6);
    var state = row.querySelector("[data-pin-state]");
    if (state) state.textContent = interpolate(PIN_WORDS[how], { lat: lat.toFixed(5), long: long.toFixed(5) }, true);
    if (!map) return;
    var marker = markers.get(row);
    if (!marker) {
      marker = pin("pin-drop", [lat, long], dropName(number(row)), true);
      marker.on("dragend", function () {
        var at = marker.getLatLng();
        showPin(row, at.lat, at.lng, "moved");
        changed();
      });
      markers.set(row, marker);
    } else {
      marker.setLatLng([lat, long]);
    }
    fit();
  }

  function clearPin(row, words) {
    input(row, "lat").value = "";
    input(row, "long").value = "";
    var state = row.querySelector("[data-pin-state]");
    if (state) state.textContent = words;
    var marker = markers.get(row);
    if (marker) { marker.remove(); markers.delete(row); }
  }

  var geocode = debounce(function (row) {
    var address = input(row, "address").value.trim();
    if (address.length < 3) return;
    fetch(form.dataset.geocodeUrl + "?address=" + encodeURIComponent(address), { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (answer) {
        if (input(row, "address").value.trim() !== address) return; // typed on meanwhile
        if (answer.data && answer.data.found) {
          showPin(row, answer.data.lat, answer.data.long, "found");
          changed();
        } else {
          clearPin(row, gettext("Not found on the map yet: keep typing, or it is looked up again when booked."));
        }
      });
  }, 500);

  function suggest(row, field) {
    var box = row.querySelector("[data-suggestions]");
    var text = input(row, field).value.trim();
    if (!box) return;
    if (text.length < 2) { box.hidden = true; box.textContent = ""; return; }
    var env = form.querySelector("[name=environment]:checked");
    var url = form.dataset.recipientsUrl + "?q=" + encodeURIComponent(text) + "&environment=" + (env ? env.value : "sandbox");
    fetch(url, { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (answer) {
      var found = (answer.data && answer.data.recipients) || [];
      box.textContent = "";
      box.hidden = !found.length;
      if (!found.length) return;
      var title = document.createElement("p");
      title.className = "helptext";
      title.textContent = gettext("Sent to before:");
      box.appendChild(title);
      found.forEach(function (person) {
        var button = document.createElement("button");
        button.type = "button";
        button.className = "suggestion";
        button.textContent = person.name + ", " + person.phone + (person.address ? ", " + person.address : "");
        button.addEventListener("click", function () {
          input(row, "name").value = person.name;
          input(row, "phone").value = person.phone;
          input(row, "address").value = person.address;
          showPin(row, person.lat, person.long, "again");
          box.hidden = true;
          box.textContent = "";
          input(row, "address").focus();
          changed();
        });
        box.appendChild(button);
      });
    });
  }
  var suggestSoon = debounce(suggest, 250);

  // --- Drop rows ---------------------------------------------------------------------------
  var rowsBox = document.getElementById("drop-rows");
  var total = form.querySelector("[name=drops-TOTAL_FORMS]");

  function renumber() {
    var rows = rowsBox ? rowsBox.querySelectorAll(".drop-row") : [];
    rows.forEach(function (row, i) {
      row.dataset.row = i;
      row.querySelectorAll("[name], [id], [for], [aria-describedby]").forEach(function (el) {
        ["name", "id", "for", "aria-describedby"].forEach(function (attr) {
          var value = el.getAttribute(attr);
          if (value) el.setAttribute(attr, value.replace(/drops-(\d+|__prefix__)-/g, "drops-" + i + "-"));
        });
      });
      row.querySelectorAll(".drop-number").forEach(function (span) { span.textContent = i + 1; });
      var remove = row.querySelector(".remove-drop");
      remove.value = i;
      remove.hidden = rows.length === 1;
      var marker = markers.get(row);
      if (marker) marker.options.title = dropName(i + 1);
    });
    if (total) total.value = rows.length;
    var add = document.getElementById("add-drop");
    if (add) add.disabled = rows.length >= Number(form.dataset.maxDrops);
  }

  function addRow() {
    var template = document.getElementById("drop-template");
    var row = template.content.firstElementChild.cloneNode(true);
    rowsBox.appendChild(row);
    renumber();
    input(row, "name").focus();
  }

  function removeRow(row) {
    var marker = markers.get(row);
    if (marker) { marker.remove(); markers.delete(row); }
    var previous = row.previousElementSibling || row.nextElementSibling;
    row.remove();
    renumber();
    if (previous) input(previous, "name").focus();
    changed();
  }

  // --- The live quote ----------------------------------------------------------------------
  var quoting = null;
  var changed = debounce(function () {
    if (!form.dataset.quoteUrl) return;
    if (quoting) quoting.abort();
    quoting = new AbortController();
    var body = new FormData(form);
    body.delete("book");
    fetch(form.dataset.quoteUrl, { method: "POST", body: body, headers: { "X-CSRFToken": csrf }, credentials: "same-origin", signal: quoting.signal })
      .then(function (r) { return r.json(); })
      .then(showQuote)
      .catch(function () {});
  }, 400);

  function showQuote(answer) {
    var totalBox = document.getElementById("quote-total");
    form.querySelectorAll(".live-refusal").forEach(function (el) { el.remove(); });
    if (!answer.success) {
      totalBox.textContent = gettext("Choose a pickup place to see the price.");
      return;
    }
    var data = answer.data;
    var rows = rowsBox.querySelectorAll(".drop-row");
    data.drops.forEach(function (drop, i) {
      var row = rows[i];
      if (!row) return;
      var price = row.querySelector("[data-drop-price]");
      if (drop.status === "quotable") {
        price.textContent = interpolate(gettext("Drop %(n)s: %(price)s %(currency)s"), { n: i + 1, price: drop.price, currency: data.currency }, true);
      } else if (drop.status === "rejected") {
        price.textContent = interpolate(gettext("Drop %(n)s cannot be booked as it is."), { n: i + 1 }, true);
        var field = drop.field && input(row, drop.field);
        var holder = field ? field.closest(".field") : price.parentNode;
        var words = document.createElement("p");
        words.className = "live-refusal errorlist";
        words.textContent = drop.message;
        holder.appendChild(words);
      } else {
        price.textContent = interpolate(gettext("Drop %(n)s: fill in the name, phone and address to see its price."), { n: i + 1 }, true);
      }
    });
    totalBox.textContent = data.total_price === null ? "—" : interpolate(gettext("Total %(price)s %(currency)s"), { price: data.total_price, currency: data.currency }, true);
    totalBox.setAttribute("data-total", data.total_price || "");
  }

  // --- Wiring --------------------------------------------------------------------------------
  function syncPickup() {
    var select = form.querySelector("[name=pickup_place]");
    if (!select || !map) return;
    var at = places[select.value];
    if (pickupMarker) { pickupMarker.remove(); pickupMarker = null; }
    if (at) pickupMarker = pin("pin-pickup", [at[0], at[1]], interpolate(gettext("Pickup: %(name)s"), { name: at[2] }, true), false);
    fit();
  }

  function syncSandbox() {
    var env = form.querySelector("[name=environment]:checked");
    form.querySelectorAll("[data-sandbox-only]").forEach(function (el) {
      el.hidden = !env || env.value !== "sandbox";
    });
  }

  setUpMap();
  form.querySelectorAll(".drop-row").forEach(function (row) {
    var lat = parseFloat(input(row, "lat").value);
    var long = parseFloat(input(row, "long").value);
    if (!isNaN(lat) && !isNaN(long)) showPin(row, lat, long, "set");
  });
  syncPickup();
  syncSandbox();
  renumber();

  form.addEventListener("click", function (event) {
    var button = event.target.closest("button[name=add_drop], button[name=remove_drop]");
    if (!button || !rowsBox) return;
    event.preventDefault();
    if (button.name === "add_drop") addRow();
    else removeRow(button.closest(".drop-row"));
  });
  form.addEventListener("input", function (event) {
    var row = event.target.closest(".drop-row");
    var name = (event.target.name || "").replace(/^drops-\d+-/, "");
    if (row && name === "address") {
      clearPin(row, gettext("Looking for the address…"));
      geocode(row);
    }
    if (row && (name === "name" || name === "phone")) suggestSoon(row, name);
    changed();
  });
  form.addEventListener("change", function (event) {
    if (event.target.name === "pickup_place") syncPickup();
    if (event.target.name === "environment") syncSandbox();
    changed();
  });
  form.addEventListener("submit", function (event) {
    var book = event.submitter && event.submitter.name === "book" ? event.submitter : null;
    if (!book) return;
    if (book.dataset.sent) { event.preventDefault(); return; } // a double click sends once
    book.dataset.sent = "true";
    book.setAttribute("aria-disabled", "true");
  });
  changed();
})();
