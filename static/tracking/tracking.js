/* The tracking page's live part: the map (pins, the service area and the courier, from
   #tracking-data) and, while the drop is active, updating the page in place.

   The server says how often to look (main[data-refresh-seconds], only while the drop is
   active); each look fetches the page again and swaps the server-rendered [data-region]s and
   the courier's pin, so the map is never re-created and its view never jumps. Without
   JavaScript a <noscript> refresh reloads the page instead, and the map stays hidden. */
(function () {
  "use strict";
  // After a 429, a 5xx or no answer the wait doubles up to this (unless Retry-After asks more).
  var LONGEST_WAIT_SECONDS = 60;
  // A look that hangs this long is given up, so that the next one is not blocked behind it.
  var LOOK_TIMEOUT_MS = 20000;

  var main = document.querySelector("main.tracking");
  if (!main) {
    return;
  }
  var courierPin = drawMap(readData(document));
  follow();

  function readData(doc) {
    var source = doc.getElementById("tracking-data");
    return source ? JSON.parse(source.textContent) : null;
  }

  /* Draws the map; returns a function that moves, adds or removes the courier's pin, or
     null if there is no map (no data, no Leaflet). */
  function drawMap(data) {
    var card = document.getElementById("tracking-map-card");
    var holder = document.getElementById("tracking-map");
    if (!data || !card || !holder || typeof window.L === "undefined") {
      return null;
    }
    var L = window.L;
    card.hidden = false; // before L.map(), so that Leaflet measures a visible box
    var map = L.map(holder, {
      attributionControl: Boolean(data.tiles), // the tiles' licence asks for it
      scrollWheelZoom: false,
      zoomSnap: 0.5,
      // Leaflet would make the container focusable (tabindex=0) for arrow-key panning: a
      // focusable region holding the zoom buttons is a nested control to a screen reader.
      keyboard: false,
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

    // The pins' names in the page's language: the page writes them on the map's element.
    function pin(kind, at, round) {
      var label = holder.getAttribute("data-label-" + kind) || kind;
      var icon = L.divIcon({
        className: "pin pin-" + kind,
        html: "<span></span>",
        iconSize: [26, 26],
        // A teardrop points at its place with its tip; the courier's dot is centred on it.
        iconAnchor: round ? [13, 13] : [13, 31],
      });
      // No popup, nothing to press: neither focusable nor clickable. The legend names them.
      var options = { icon: icon, title: label, keyboard: false, interactive: false };
      return L.marker(at, options).addTo(map);
    }

    var points = [data.pickup, data.drop];
    pin("pickup", data.pickup, false);
    pin("drop", data.drop, false);
    var courier = null;
    if (data.courier) {
      courier = pin("courier", data.courier, true);
      points.push(data.courier);
    }
    // More room above: a teardrop pin, its border and its shadow stand ~40 px over its place.
    map.fitBounds(L.latLngBounds(points), {
      paddingTopLeft: [40, 52],
      paddingBottomRight: [40, 24],
      maxZoom: 16,
    });
    holder.setAttribute("data-ready", "true");

    return function placeCourier(at) {
      if (at && courier) {
        courier.setLatLng(at);
      } else if (at) {
        courier = pin("courier", at, true);
      } else if (courier) {
        courier.remove();
        courier = null;
      }
    };
  }

  function refreshSeconds(element) {
    var seconds = Number(element.getAttribute("data-refresh-seconds"));
    return seconds > 0 ? seconds : null;
  }

  /* Looks at the page again every data-refresh-seconds for as long as the fresh copy still
     has that attribute, i.e. while the drop is active. main[data-poll-seconds] tells the wait
     before the next look; it is removed when the page stops looking. */
  function follow() {
    var every = refreshSeconds(main);
    if (!every) {
      return;
    }
    if (typeof window.fetch !== "function" || typeof window.DOMParser !== "function") {
      setTimeout(function () {
        window.location.reload();
      }, every * 1000);
      return;
    }
    var wait = every;
    var dueWhileHidden = false;
    document.addEventListener("visibilitychange", function () {
      if (!document.hidden && dueWhileHidden) {
        dueWhileHidden = false;
        look();
      }
    });
    later();

    function later() {
      main.setAttribute("data-poll-seconds", String(wait));
      setTimeout(look, wait * 1000);
    }

    function stop() {
      main.removeAttribute("data-poll-seconds");
      var note = document.querySelector('[data-region="refresh-note"]');
      if (note) {
        note.textContent = "";
      }
    }

    function backOff(retryAfter) {
      wait = Math.max(every, Math.min(wait * 2, LONGEST_WAIT_SECONDS), retryAfter || 0);
      later();
    }

    function look() {
      // A hidden tab is not read every few seconds: once it is shown again, at once.
      if (document.hidden) {
        dueWhileHidden = true;
        return;
      }
      var controller = typeof AbortController === "function" ? new AbortController() : null;
      var timer = controller && setTimeout(function () {
        controller.abort();
      }, LOOK_TIMEOUT_MS);
      window
        .fetch(window.location.href, {
          cache: "no-store",
          credentials: "same-origin",
          headers: { Accept: "text/html" },
          signal: controller ? controller.signal : undefined,
        })
        .then(function (response) {
          if (response.status === 404) {
            return "gone"; // the link no longer opens the page: nothing more to learn
          }
          if (!response.ok) {
            return { retryAfter: Number(response.headers.get("Retry-After")) || 0 };
          }
          return response.text();
        })
        .then(function (answer) {
          clearTimeout(timer);
          if (answer === "gone") {
            stop();
          } else if (typeof answer === "string" && update(answer)) {
            every = refreshSeconds(main);
            wait = every;
            if (every) {
              later();
            } else {
              stop();
            }
          } else {
            backOff(answer && answer.retryAfter);
          }
        })
        .catch(function () {
          // No answer, an unreadable one, or one that could not be put in the page.
          clearTimeout(timer);
          backOff(0);
        });
    }
  }

  /* Puts the fresh copy's state into the page; false if it is not a tracking page. */
  function update(html) {
    var fresh = new DOMParser().parseFromString(html, "text/html");
    var freshMain = fresh.querySelector("main.tracking[data-status]");
    if (!freshMain) {
      return false;
    }
    var regions = document.querySelectorAll("[data-region]");
    for (var i = 0; i < regions.length; i++) {
      var name = regions[i].getAttribute("data-region");
      var next = fresh.querySelector('[data-region="' + name + '"]');
      var inner = next ? next.innerHTML : "";
      // Only what changed: a live region read out again, or a photo loaded again, for nothing
      // would be noise.
      if (regions[i].innerHTML !== inner) {
        regions[i].innerHTML = inner;
      }
    }
    var data = readData(fresh);
    if (courierPin && data) {
      courierPin(data.courier);
    }
    document.title = fresh.title;
    var interval = freshMain.getAttribute("data-refresh-seconds");
    if (interval) {
      main.setAttribute("data-refresh-seconds", interval);
    } else {
      main.removeAttribute("data-refresh-seconds");
    }
    // Last: tests and styles key on it, and by now everything else shows that state.
    main.setAttribute("data-status", freshMain.getAttribute("data-status"));
    return true;
  }
})();
