/* The tracking page's map: pins, the service area and the courier, from #tracking-data.
   Without JavaScript (or Leaflet) the map stays hidden; the rest of the page is HTML. */
(function () {
  "use strict";
  var source = document.getElementById("tracking-data");
  var card = document.getElementById("tracking-map-card");
  var holder = document.getElementById("tracking-map");
  if (!source || !card || !holder || typeof window.L === "undefined") {
    return;
  }
  var data = JSON.parse(source.textContent);
  var L = window.L;
  card.hidden = false; // before L.map(), so that Leaflet measures a visible box
  var map = L.map(holder, {
    attributionControl: Boolean(data.tiles),
    scrollWheelZoom: false,
    zoomSnap: 0.5,
  });
  // No tile URL configured: no tiles at all, so the page never calls out (works offline).
  if (data.tiles) {
    L.tileLayer(data.tiles.url, { attribution: data.tiles.attribution, maxZoom: 19 }).addTo(map);
  }
  data.areas.forEach(function (rings) {
    L.polygon(rings, { className: "service-area", interactive: false }).addTo(map);
  });

  function pin(kind, at, label, round) {
    var icon = L.divIcon({
      className: "pin pin-" + kind,
      html: "<span></span>",
      iconSize: [26, 26],
      // A teardrop points at its place with its tip; the courier's dot is centred on it.
      iconAnchor: round ? [13, 13] : [13, 31],
    });
    return L.marker(at, { icon: icon, title: label, keyboard: false }).addTo(map);
  }

  var points = [data.pickup, data.drop];
  pin("pickup", data.pickup, "Pickup", false);
  pin("drop", data.drop, "Drop-off", false);
  if (data.courier) {
    pin("courier", data.courier, "Courier", true);
    points.push(data.courier);
  }
  map.fitBounds(L.latLngBounds(points), { padding: [40, 40], maxZoom: 16 });
  holder.setAttribute("data-ready", "true");
})();
