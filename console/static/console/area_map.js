/* A service area drawn on a map (console/coverage.py, AreaMapInput): Leaflet with
   Leaflet.draw (static/vendor/leaflet-draw) over the area's GeoJSON text. Drawing, editing
   or removing a part writes the text; typing GeoJSON redraws the map. The text is what the
   form sends and what the server checks: without this script it is edited as before. Each
   part of a MultiPolygon is a layer of its own, so each can be edited or removed. */
(function () {
  "use strict";
  var PHNOM_PENH = [11.5564, 104.9282];
  var AREA_STYLE = { color: "#0b6e4f", weight: 2, fillOpacity: 0.15 };

  // The text's area as Leaflet layers, one per polygon; none for an empty text (a new
  // area's is "null"); null if it is not a (Multi)Polygon.
  function partsOf(text) {
    var geometry;
    try {
      geometry = JSON.parse(text.trim() || "null");
    } catch (error) {
      return null;
    }
    if (geometry === null) {
      return [];
    }
    if (typeof geometry !== "object" || !Array.isArray(geometry.coordinates)) {
      return null;
    }
    var polygons = { Polygon: [geometry.coordinates], MultiPolygon: geometry.coordinates };
    var rings = polygons[geometry.type];
    if (!rings) {
      return null;
    }
    try {
      return rings.map(function (polygon) {
        return L.polygon(L.GeoJSON.coordsToLatLngs(polygon, 1), AREA_STYLE);
      });
    } catch (error) {
      return null;
    }
  }

  // The drawn layers as GeoJSON: a Polygon for one part, a MultiPolygon for several.
  function geojsonOf(group) {
    var polygons = group.getLayers().map(function (layer) {
      return layer.toGeoJSON().geometry.coordinates;
    });
    if (!polygons.length) {
      return "";
    }
    if (polygons.length === 1) {
      return JSON.stringify({ type: "Polygon", coordinates: polygons[0] });
    }
    return JSON.stringify({ type: "MultiPolygon", coordinates: polygons });
  }

  function drawControl(group) {
    return new L.Control.Draw({
      position: "topright",
      draw: {
        polygon: { allowIntersection: false, shapeOptions: AREA_STYLE },
        rectangle: { shapeOptions: AREA_STYLE },
        polyline: false,
        circle: false,
        circlemarker: false,
        marker: false,
      },
      edit: { featureGroup: group },
    });
  }

  function setUp(holder) {
    var text = document.getElementById(holder.getAttribute("data-area-map"));
    var status = document.getElementById(holder.id + "_status");
    var tiles = JSON.parse(holder.getAttribute("data-tiles"));
    holder.hidden = false;
    var map = L.map(holder, { attributionControl: Boolean(tiles), scrollWheelZoom: false });
    if (tiles) {
      L.tileLayer(tiles.url, {
        attribution: tiles.attribution,
        maxZoom: 19,
        referrerPolicy: "strict-origin",
      }).addTo(map);
    }
    var group = L.featureGroup().addTo(map);
    map.addControl(drawControl(group));

    function say(sentence) {
      status.textContent = sentence;
      status.hidden = !sentence;
    }
    function showText() {
      var parts = partsOf(text.value);
      if (parts === null) {
        say("The GeoJSON is not a Polygon or MultiPolygon yet: the map shows the last area that was.");
        return false;
      }
      group.clearLayers();
      parts.forEach(function (part) {
        group.addLayer(part);
      });
      say(parts.length ? "" : "No area yet: draw one with the polygon or rectangle tool.");
      return true;
    }
    function writeText() {
      text.value = geojsonOf(group);
      say(group.getLayers().length ? "" : "No area yet: draw one with the polygon or rectangle tool.");
    }

    map.on(L.Draw.Event.CREATED, function (event) {
      group.addLayer(event.layer);
      writeText();
    });
    map.on([L.Draw.Event.EDITED, L.Draw.Event.EDITVERTEX, L.Draw.Event.EDITMOVE,
      L.Draw.Event.EDITRESIZE, L.Draw.Event.DELETED].join(" "), writeText);
    text.addEventListener("input", showText);

    var drawn = showText();
    if (group.getLayers().length) {
      map.fitBounds(group.getBounds(), { padding: [24, 24] });
    } else {
      map.setView(PHNOM_PENH, 12);
    }
    // The text stays at hand under its summary; open while it needs fixing.
    text.closest("details").open = !drawn || Boolean(text.closest(".errors"));
  }

  function setUpAll() {
    if (typeof window.L === "undefined" || !L.Control.Draw) {
      return;
    }
    Array.prototype.forEach.call(document.querySelectorAll("[data-area-map]"), setUp);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setUpAll);
  } else {
    setUpAll();
  }
})();
