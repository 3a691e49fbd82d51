/* The dispatch board's map (console/dispatch.py, templates/admin/dispatch/board.html): the
   waiting orders' pickups and the couriers online as pins, each courier's run as a line from
   their pin through the stops they have left (pickups and drops marked), from the JSON in
   #board-data, then from the board's data view every refresh_seconds, without reloading the
   page. The same Leaflet setup as the dashboard's maps (static/dashboard/maps.js): our own
   copy of Leaflet, tiles only when a tile URL is configured, L.divIcon pins and the lines
   styled by CSS (console.css). */
(function () {
  "use strict";
  var source = document.getElementById("board-data");
  var holder = document.getElementById("board-map");
  var status = document.getElementById("board-map-status");
  if (!source || !holder || typeof window.L === "undefined") {
    return;
  }
  var L = window.L;
  var data = JSON.parse(source.textContent);
  var map = L.map(holder, { attributionControl: Boolean(data.tiles), scrollWheelZoom: false });
  if (data.tiles) {
    L.tileLayer(data.tiles.url, {
      attribution: data.tiles.attribution,
      maxZoom: 19,
      referrerPolicy: "strict-origin",
    }).addTo(map);
  }
  var pins = L.layerGroup().addTo(map);
  // A courier's state in the couriers table's words.
  var STATES = { free: "free", offered: "offered an order", on_route: "on a run" };
  var framed = false;

  // front: drawn over the others at one place (an urgent pickup over a plain one).
  function pin(classes, lat, long, label, shape, front) {
    var icon = L.divIcon({
      className: "pin pin-" + shape + " " + classes,
      html: "<span></span>",
      iconSize: [22, 22],
      iconAnchor: shape === "tear" ? [11, 27] : [11, 11],
    });
    return L.marker([lat, long], {
      icon: icon, title: label, alt: label, keyboard: false, zIndexOffset: front ? 1000 : 0,
    });
  }

  // A courier's run: a line from their pin through the stops left, each stop marked.
  function drawRun(courier, points) {
    var line = [[courier.position.lat, courier.position.long]];
    courier.run.forEach(function (stop, index) {
      var label = courier.name + ": stop " + (index + 1) + " of " + courier.run.length + ", " + stop.kind;
      var icon = L.divIcon({
        className: "board-stop board-stop-" + stop.kind, html: "<span></span>",
        iconSize: [12, 12], iconAnchor: [6, 6],
      });
      L.marker([stop.lat, stop.long], { icon: icon, title: label, alt: label, keyboard: false })
        .addTo(pins);
      line.push([stop.lat, stop.long]);
      points.push([stop.lat, stop.long]);
    });
    L.polyline(line, { className: "board-run", weight: 3, opacity: 0.8, interactive: false })
      .addTo(pins);
  }

  function draw(board) {
    pins.clearLayers();
    var points = [];
    var runs = 0;
    board.orders.forEach(function (order) {
      var urgent = order.at_risk || order.flagged_at;
      var shop = order.pickup.name + (order.for_business ? " (" + order.for_business + ")" : "");
      var label = shop + ": " + order.drops + " drop(s) waiting";
      pin(urgent ? "board-pin-risk" : "board-pin-pickup", order.pickup.lat, order.pickup.long, label, "tear", urgent)
        .addTo(pins);
      points.push([order.pickup.lat, order.pickup.long]);
    });
    var couriers = 0;
    board.couriers.forEach(function (courier) {
      var at = courier.position;
      if (!at) {
        return;
      }
      var classes = "board-pin-" + courier.state + (at.live ? "" : " board-pin-stale");
      var label = courier.name + " (" + courier.vehicle + ", " + (STATES[courier.state] || courier.state) + ")";
      if (courier.run.length) {
        label += ", " + courier.run.length + " stop(s) left";
        drawRun(courier, points);
        runs += 1;
      }
      pin(classes, at.lat, at.long, label, "round").addTo(pins);
      points.push([at.lat, at.long]);
      couriers += 1;
    });
    holder.setAttribute("data-orders", String(board.orders.length));
    holder.setAttribute("data-couriers", String(couriers));
    holder.setAttribute("data-runs", String(runs));
    if (!framed) {
      // Framed once: a refresh keeps where the operator panned and zoomed to.
      if (points.length) {
        map.fitBounds(L.latLngBounds(points), { padding: [30, 30], maxZoom: 15 });
      } else {
        map.setView([0, 0], 2);
      }
      framed = true;
    }
    status.textContent =
      "Map as of " + board.at_shown + ": " + board.waiting +
      " waiting, " + board.online + " online (it follows by itself; reload the page for the tables).";
  }

  function refresh() {
    fetch(data.url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) {
          throw new Error(response.status === 403 ? "signed out" : "HTTP " + response.status);
        }
        return response.json();
      })
      .then(function (body) {
        draw(body.data);
        holder.setAttribute("data-refreshed", String(Number(holder.getAttribute("data-refreshed") || 0) + 1));
      })
      .catch(function (error) {
        status.textContent = "The map could not refresh (" + error.message + "); it tries again.";
      });
  }

  draw(data);
  holder.setAttribute("data-ready", "true");
  window.setInterval(refresh, data.refresh_seconds * 1000);
})();
