/* The dashboard's maps (order and batch pages), from the JSON in #map-data (dashboard/maps.py).
   The same Leaflet setup as the recipient's page (static/tracking/tracking.js): our own copy
   of Leaflet, tiles only when a tile URL is configured, L.divIcon pins styled by CSS.
   Without JavaScript (or Leaflet) the map's card stays hidden; the page is plain HTML.
   Its words (the pins' names) come in the page's language from the dashboard's catalogue
   (templates/dashboard/_script_words.html); without it, they are English. */
(function () {
  "use strict";
  var gettext = window.gettext || function (text) { return text; };
  var source = document.getElementById("map-data");
  var card = document.getElementById("map-card");
  var holder = document.getElementById("dashboard-map");
  if (!source || !card || !holder || typeof window.L === "undefined") {
    return;
  }
  var data = JSON.parse(source.textContent);
  var L = window.L;
  card.hidden = false; // before L.map(), so that Leaflet measures a visible box
  var map = L.map(holder, {
    attributionControl: Boolean(data.tiles), // the tiles' licence asks for it
    scrollWheelZoom: false,
    zoomSnap: 0.5,
  });
  // Tiles are pictures behind the pins: while they cannot load (offline, blocked, a tile
  // server down) the pins and the areas still draw on the map's grey. TRACKING_TILE_URL
  // `off`: no tiles, and the page never calls out (docs/deployment.md).
  if (data.tiles) {
    L.tileLayer(data.tiles.url, {
      attribution: data.tiles.attribution,
      maxZoom: 19,
      // The tile server is told the site, never the page: a tracking link holds its token,
      // and OpenStreetMap refuses tiles asked for with no Referer at all.
      referrerPolicy: "strict-origin",
    }).addTo(map);
  }
  data.areas.forEach(function (rings) {
    L.polygon(rings, { className: "service-area", interactive: false }).addTo(map);
  });

  // shape: "tear" (points at its place), "round" (the courier) or "dot" (a batch's drops).
  function pin(classes, at, label, shape) {
    var size = shape === "dot" ? 14 : 26;
    var icon = L.divIcon({
      className: "pin pin-" + shape + " " + classes,
      html: "<span></span>",
      iconSize: [size, size],
      // A teardrop points at its place with its tip; dots are centred on it.
      iconAnchor: shape === "tear" ? [13, 31] : [size / 2, size / 2],
    });
    return L.marker(at, { icon: icon, title: label, keyboard: false }).addTo(map);
  }

  var points = [];
  if (data.kind === "order") {
    pin("pin-pickup", data.pickup, gettext("Pickup"), "tear");
    pin("pin-drop pin-status-" + data.status, data.drop, gettext("Drop-off"), "tear");
    points.push(data.pickup, data.drop);
    if (data.courier) {
      pin("pin-courier", data.courier, gettext("Courier"), "round");
      points.push(data.courier);
    }
  } else {
    data.pickups.forEach(function (at) {
      pin("pin-pickup", at, gettext("Pickup"), "tear");
      points.push(at);
    });
    // Thousands of pins: one marker each, a popup built only when one is clicked.
    data.pins.forEach(function (row) {
      var at = [row[0], row[1]];
      var status = data.statuses[row[2]];
      var label = row[3] + " (" + data.status_labels[row[2]] + ")";
      var marker = pin("pin-drop pin-status-" + status, at, label, "dot");
      marker.bindPopup(function () {
        var link = document.createElement("a");
        link.href = data.order_url.replace("{id}", row[4]);
        link.textContent = label;
        return link;
      });
      points.push(at);
    });
  }
  if (points.length) {
    // More room above: a teardrop pin, its border and its shadow stand ~40 px over its place.
    map.fitBounds(L.latLngBounds(points), {
      paddingTopLeft: [30, 52],
      paddingBottomRight: [30, 24],
      maxZoom: 16,
    });
  } else {
    map.setView([0, 0], 2);
  }
  holder.setAttribute("data-ready", "true");
})();
