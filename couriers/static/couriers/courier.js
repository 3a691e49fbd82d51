// The courier app in the browser (docs/couriers.md). The page works without this file (plain
// form posts); with it, moves and the online switch go to the JSON API (/api/v1/courier/),
// and a move or a position made without network waits in localStorage until the network
// returns (the `online` event, and every page load). Resending is safe: the same move twice
// answers the stop, and a position not newer than the stored one is ignored. While the phone
// has a network it asks whether the route changed, and says what did in words; while online
// with no offer shown, whether one came (drawn in place: the rest of the page is left as is).
(function () {
  "use strict";
  const body = document.body;
  const courier = body.dataset.courier;
  if (!courier) return; // the sign-in page

  // Per courier: a phone shared by two couriers never sends one's queue as the other.
  const MOVES = "courier-moves-" + courier;
  const POINTS = "courier-points-" + courier;
  const REFUSED = "courier-refused-" + courier;
  // Shown after the reload that follows a move: what it did ("Delivered to Dara at 14:05").
  const CONFIRMED = "courier-confirmed-" + courier;
  // The route's changes already shown (each has an id of its own: drop, kind, time).
  const SEEN = "courier-changes-seen-" + courier;
  const MAX_POINTS = Number(body.dataset.maxPoints) || 100; // per request, as the API takes
  const EVERY_MS = (Number(body.dataset.positionSeconds) || 15) * 1000;
  const KEEP_POINTS = 2000; // about eight hours at one point every 15 s
  // Words in the page's language: gettext and interpolate come from /courier/jsi18n/.
  const MOVE_NAMES = { PICKED_UP: gettext("Picked up"), DELIVERED: gettext("Delivered"),
                       FAILED: gettext("Failed"), RETURNING: gettext("Returning"),
                       RETURNED: gettext("Returned") };
  const messages = JSON.parse(document.getElementById("move-messages").textContent);
  const csrf = () => document.querySelector("input[name=csrfmiddlewaretoken]").value;

  function read(key) {
    try { return JSON.parse(localStorage.getItem(key)) || []; } catch (e) { return []; }
  }
  function write(key, list) {
    localStorage.setItem(key, JSON.stringify(list));
    showWaiting();
  }
  function notice(text) {
    const box = document.getElementById("notice");
    box.textContent = text;
    box.hidden = !text;
  }

  function showWaiting() {
    const moves = read(MOVES), points = read(POINTS).length;
    const badge = document.getElementById("waiting");
    const parts = [];
    if (moves.length) {
      const waitingMoves = ngettext("%s move waiting to send", "%s moves waiting to send", moves.length);
      parts.push(interpolate(waitingMoves, [moves.length]));
    }
    if (points) {
      const positions = moves.length
        ? ngettext("%s position", "%s positions", points)
        : ngettext("%s position waiting to send", "%s positions waiting to send", points);
      parts.push(interpolate(positions, [points]));
    }
    badge.textContent = parts.join(" · ");
    badge.hidden = parts.length === 0;
    for (const item of moves) {
      const stop = document.getElementById("stop-" + item.drop);
      if (!stop) continue;
      stop.classList.add("queued");
      const waiting = stop.querySelector("[data-waiting]");
      waiting.textContent = interpolate(gettext("Waiting to send: %s"), [MOVE_NAMES[item.fields.to] || item.fields.to]);
      waiting.hidden = false;
    }
  }

  function setError(dropId, text) {
    const stop = document.getElementById("stop-" + dropId);
    if (stop) stop.querySelector("[data-error]").textContent = text;
    else if (text) notice(text);
  }

  async function errorText(response) {
    try {
      const error = (await response.json()).error;
      if (messages[error.code]) return messages[error.code];
      const details = (error.details || []).map((d) => (d.field ? d.field + ": " : "") + d.message);
      return [error.message, ...details].join(" ");
    } catch (e) {
      return interpolate(gettext("The move was refused (%s)."), [response.status]);
    }
  }

  // Not taken now: the network or the server is away, or the session ended (sign in again).
  const later = (status) => status >= 500 || status === 429 || status === 401 || status === 403;

  function moveRequest(item) {
    const data = new FormData();
    for (const [name, value] of Object.entries(item.fields)) data.append(name, value);
    if (item.file) data.append("photo", item.file, item.file.name || "photo.jpg");
    else if (item.photo) data.append("photo", blobOf(item.photo), item.photoName || "photo.jpg");
    if (item.signature) data.append("signature", blobOf(item.signature), "signature.png");
    return fetch(body.dataset.dropsUrl + item.drop + "/move", {
      method: "POST", body: data, credentials: "same-origin", headers: { "X-CSRFToken": csrf() },
    });
  }

  async function submitMove(form) {
    const stop = form.closest("[data-drop]");
    const item = { id: Date.now() + "-" + Math.random(), drop: stop.dataset.drop, fields: {} };
    for (const [name, value] of new FormData(form)) {
      if (name === "csrfmiddlewaretoken" || value === "") continue;
      if (value instanceof File) { if (value.size) item.file = await smaller(value); continue; }
      item.fields[name] = value;
    }
    // The recipient's signature as a PNG data URL: it waits in the queue's storage as it is.
    const pad = form.querySelector("[data-signature-pad]");
    if (pad && pad.dataset.signed === "true") item.signature = pad.toDataURL("image/png");
    stopScanning();
    setError(item.drop, "");
    form.querySelectorAll("button").forEach((b) => { b.disabled = true; });
    let response = null;
    if (navigator.onLine) {
      try { response = await moveRequest(item); } catch (e) { response = null; }
    }
    if (response === null || later(response.status)) {
      await queue(item);
      if (response !== null && (response.status === 401 || response.status === 403)) location.reload();
    } else if (response.ok) {
      await confirm(response);
      location.reload();
    } else if (response.status === 409) { // no longer movable: say why, draw the route as it is
      notice(await errorText(response));
      await checkRoute();
    } else {
      setError(item.drop, await errorText(response));
    }
    form.querySelectorAll("button").forEach((b) => { b.disabled = false; });
  }

  async function queue(item) {
    const kept = { id: item.id, drop: item.drop, fields: item.fields };
    if (item.signature) kept.signature = item.signature;
    if (item.file) {
      kept.photo = await dataUrlOf(item.file);
      kept.photoName = item.file.name;
    }
    const moves = read(MOVES).filter((m) => !(m.drop === item.drop && m.fields.to === item.fields.to));
    try {
      write(MOVES, [...moves, kept]);
    } catch (e) { // the photo does not fit in the phone's storage: the move goes without it
      delete kept.photo;
      write(MOVES, [...moves, kept]);
      notice(gettext("No network: the move waits to be sent, without its photo (too big to keep)."));
      return;
    }
    notice(gettext("No network: the move waits and is sent when the network returns."));
  }

  let flushing = false;
  async function flush() {
    if (flushing || !navigator.onLine) return;
    flushing = true;
    let answered = 0;
    try {
      for (const item of read(MOVES)) {
        let response;
        try { response = await moveRequest(item); } catch (e) { break; }
        if (later(response.status)) break;
        answered += 1;
        write(MOVES, read(MOVES).filter((m) => m.id !== item.id));
        if (response.ok) await confirm(response);
        if (!response.ok) {
          write(REFUSED, [...read(REFUSED), { drop: item.drop, text: await errorText(response) }]);
        }
      }
      await sendPoints();
    } finally {
      flushing = false;
    }
    if (answered) location.reload(); // the route as the server has it now
  }

  async function confirm(response) {
    let said = "";
    try { said = (await response.json()).data.message || ""; } catch (e) { return; }
    const kept = sessionStorage.getItem(CONFIRMED);
    sessionStorage.setItem(CONFIRMED, kept ? kept + " " + said : said);
  }

  function showConfirmed() {
    const said = sessionStorage.getItem(CONFIRMED);
    sessionStorage.removeItem(CONFIRMED);
    if (!said) return;
    const box = document.getElementById("confirmation");
    box.textContent = said;
    box.hidden = false;
  }

  // Changes reach the courier (docs/couriers.md): while the phone has a network, ask every
  // ROUTE_EVERY_MS whether the route changed (a 304 while it has not); when it did, say what
  // changed in words and draw the route again from the server's page, so each stop's buttons
  // are the ones its status allows now.
  const ROUTE_EVERY_MS = (Number(body.dataset.routeSeconds) || 15) * 1000;
  let checking = false;
  async function checkRoute() {
    const area = document.querySelector("[data-route-area]");
    if (checking || !area || !navigator.onLine) return;
    checking = true;
    try {
      const url = body.dataset.routeUrl + "?since=" + encodeURIComponent(area.dataset.routeAsOf);
      let response;
      try {
        response = await fetch(url, {
          credentials: "same-origin", headers: { "If-None-Match": '"' + area.dataset.routeVersion + '"' },
        });
      } catch (e) { return; }
      if (response.status === 401 || response.status === 403) { location.reload(); return; }
      if (response.status !== 200) return; // 304: nothing changed
      let data;
      try { data = (await response.json()).data; } catch (e) { return; }
      showChanges(data.changes || [], area);
      if (await redraw()) {
        document.querySelector("[data-route-area]").dataset.routeAsOf = data.as_of;
      }
    } finally {
      checking = false;
    }
  }

  function showChanges(changes, area) {
    const seen = new Set(JSON.parse(sessionStorage.getItem(SEEN) || "[]"));
    // What the page already draws is no news: a stop that is on it, one shown cancelled.
    const drawn = (id) => area.querySelector('[data-drop="' + id + '"]');
    const known = (c) => (c.kind === "added" && drawn(c.drop_id)) ||
      (c.kind === "cancelled" && drawn(c.drop_id) && drawn(c.drop_id).dataset.status === "CANCELLED");
    const fresh = changes.filter((c) => !seen.has(c.drop_id + c.kind + c.at) && !known(c));
    if (!fresh.length) return;
    const list = document.querySelector("[data-changes]");
    for (const change of fresh) {
      seen.add(change.drop_id + change.kind + change.at);
      const item = document.createElement("li");
      item.textContent = change.message;
      list.prepend(item);
    }
    sessionStorage.setItem(SEEN, JSON.stringify([...seen].slice(-200)));
    document.getElementById("changes").hidden = false;
  }

  async function serverPage() { // the home page as the server draws it now, parsed; null if not
    try {
      const response = await fetch(body.dataset.homeUrl, { credentials: "same-origin" });
      if (!response.ok) return null;
      return new DOMParser().parseFromString(await response.text(), "text/html");
    } catch (e) { return null; }
  }

  async function redraw() { // the route as the server's page draws it now
    const page = await serverPage();
    const fresh = page && page.querySelector("[data-route-area]");
    const area = document.querySelector("[data-route-area]");
    if (!fresh || !area) return false;
    area.replaceWith(document.importNode(fresh, true));
    showWaiting();
    return true;
  }

  function showRefused() {
    const refused = read(REFUSED);
    localStorage.removeItem(REFUSED);
    const said = gettext("Sent when the network returned, and refused: %s");
    for (const r of refused) setError(r.drop, interpolate(said, [r.text]));
  }

  let sendingPoints = false;
  async function sendPoints() {
    if (sendingPoints || !navigator.onLine) return;
    sendingPoints = true;
    try {
      for (let points = read(POINTS); points.length; points = read(POINTS)) {
        const batch = points.slice(0, MAX_POINTS);
        let response;
        try {
          response = await fetch(body.dataset.locationUrl, {
            method: "POST", credentials: "same-origin", body: JSON.stringify({ points: batch }),
            headers: { "Content-Type": "application/json", "X-CSRFToken": csrf() },
          });
        } catch (e) { return; }
        if (later(response.status)) return;
        // Taken, or refused as invalid (never better on a resend): off the queue either way.
        write(POINTS, read(POINTS).slice(batch.length));
      }
    } finally {
      sendingPoints = false;
    }
  }

  function takePoint() {
    navigator.geolocation.getCurrentPosition(
      (fix) => {
        const point = {
          lat: fix.coords.latitude, long: fix.coords.longitude,
          // When it was read: a fix at most maximumAge (5 s) old. Not fix.timestamp: a phone
          // standing still may keep answering one old fix, and its points would all be
          // "not newer" than the stored one, its position going stale while it waits.
          at: new Date().toISOString(),
          accuracy: Math.min(Math.max(fix.coords.accuracy || 0, 0), 100000),
        };
        write(POINTS, [...read(POINTS), point].slice(-KEEP_POINTS));
        sendPoints();
      },
      () => notice(gettext("Allow this page to use your location: the shop and the recipient see where you are.")),
      { enableHighAccuracy: true, maximumAge: 5000, timeout: 12000 }
    );
  }

  function untilTyped(form) {
    const until = form.querySelector("[data-until]");
    return Boolean(until && until.value);
  }

  async function submitStatus(form) {
    const online = form.elements.online.value === "true";
    let response;
    try {
      response = await fetch(body.dataset.statusUrl, {
        method: "POST", credentials: "same-origin", body: JSON.stringify({ online }),
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrf() },
      });
    } catch (e) {
      notice(gettext("No network: try again when you have a signal."));
      return;
    }
    if (response.ok || response.status === 401 || response.status === 403) location.reload();
    else notice(await errorText(response));
  }

  // A phone's camera photo is often over the API's 5 MB, and too big to wait in storage:
  // one over PHOTO_BYTES is sent as a JPEG at most PHOTO_SIDE px on its longer side.
  const PHOTO_BYTES = 1500000, PHOTO_SIDE = 1600;
  async function smaller(file) {
    if (file.size <= PHOTO_BYTES || !window.createImageBitmap) return file;
    try {
      const image = await createImageBitmap(file);
      const scale = Math.min(1, PHOTO_SIDE / Math.max(image.width, image.height));
      const canvas = document.createElement("canvas");
      canvas.width = Math.round(image.width * scale);
      canvas.height = Math.round(image.height * scale);
      canvas.getContext("2d").drawImage(image, 0, 0, canvas.width, canvas.height);
      const blob = await new Promise((resolve) => canvas.toBlob(resolve, "image/jpeg", 0.82));
      return blob ? new File([blob], "photo.jpg", { type: "image/jpeg" }) : file;
    } catch (e) {
      return file; // not an image the browser can read: the server says so
    }
  }

  function dataUrlOf(file) {
    return new Promise((resolve, reject) => {
      const reader = new FileReader();
      reader.onload = () => resolve(reader.result);
      reader.onerror = () => reject(reader.error);
      reader.readAsDataURL(file);
    });
  }
  function blobOf(dataUrl) { // by hand: the page's CSP lets fetch() reach our own origin only
    const [head, base64] = dataUrl.split(",");
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    return new Blob([bytes], { type: head.slice(5).split(";")[0] });
  }

  // Scans and signatures (docs/couriers.md). The label's code is typed, or read by the camera
  // where the browser has a barcode reader (BarcodeDetector: Code 128 and QR, the label's
  // two codes); the "Scan code" button shows only there (body.can-scan).
  if ("BarcodeDetector" in window && navigator.mediaDevices && navigator.mediaDevices.getUserMedia) {
    body.classList.add("can-scan");
  }
  let scanning = null; // the camera while it looks for a code: { stream, video, button, timer }
  function stopScanning() {
    if (!scanning) return;
    clearInterval(scanning.timer);
    scanning.stream.getTracks().forEach((track) => track.stop());
    scanning.video.hidden = true;
    scanning.button.textContent = gettext("Scan code");
    scanning = null;
  }
  async function startScanning(button) {
    const box = button.closest("[data-scan]");
    const video = box.querySelector("[data-scan-video]"), input = box.querySelector("[data-scan-input]");
    let detector, stream;
    try {
      detector = new BarcodeDetector({ formats: ["code_128", "qr_code"] });
      stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: "environment" } });
    } catch (e) {
      notice(gettext("The camera cannot read the code here: type the code from the label."));
      input.focus();
      return;
    }
    video.srcObject = stream;
    video.hidden = false;
    video.play().catch(() => {});
    button.textContent = gettext("Stop scanning");
    const timer = setInterval(async () => {
      let codes = [];
      try { codes = await detector.detect(video); } catch (e) { return; }
      if (!codes.length || !scanning) return;
      input.value = codes[0].rawValue.trim();
      stopScanning();
      input.focus();
    }, 250);
    scanning = { stream, video, button, timer };
  }

  // The signing box: strokes drawn with a finger, a pen or a mouse (pointer events), on white
  // so the PNG reads on any background; `data-signed` once anything is drawn.
  let stroke = null; // the box being drawn on and the last point
  function padPoint(pad, event) {
    const box = pad.getBoundingClientRect();
    return [(event.clientX - box.left) * pad.width / box.width,
            (event.clientY - box.top) * pad.height / box.height];
  }
  function ink(pad) {
    const pen = pad.getContext("2d");
    if (pad.dataset.signed !== "true") {
      pen.fillStyle = "#fff";
      pen.fillRect(0, 0, pad.width, pad.height);
      pad.dataset.signed = "true";
    }
    Object.assign(pen, { lineWidth: 4, lineCap: "round", lineJoin: "round", strokeStyle: "#1b1f23" });
    return pen;
  }
  document.addEventListener("pointerdown", (event) => {
    const pad = event.target.closest && event.target.closest("[data-signature-pad]");
    if (!pad) return;
    event.preventDefault();
    pad.setPointerCapture(event.pointerId);
    stroke = { pad, at: padPoint(pad, event) };
    const pen = ink(pad);
    pen.beginPath();
    pen.moveTo(...stroke.at);
    pen.lineTo(stroke.at[0] + 0.1, stroke.at[1]); // a tap leaves a dot
    pen.stroke();
  });
  document.addEventListener("pointermove", (event) => {
    if (!stroke) return;
    const to = padPoint(stroke.pad, event), pen = ink(stroke.pad);
    pen.beginPath();
    pen.moveTo(...stroke.at);
    pen.lineTo(...to);
    pen.stroke();
    stroke.at = to;
  });
  const endStroke = () => { stroke = null; };
  document.addEventListener("pointerup", endStroke);
  document.addEventListener("pointercancel", endStroke);
  document.addEventListener("click", (event) => {
    if (event.target.matches("[data-signature-clear]")) {
      const pad = event.target.closest("[data-signature]").querySelector("[data-signature-pad]");
      pad.getContext("2d").clearRect(0, 0, pad.width, pad.height);
      delete pad.dataset.signed;
    } else if (event.target.matches("[data-scan-camera]")) {
      const again = scanning && scanning.button === event.target;
      stopScanning();
      if (!again) startScanning(event.target);
    }
  });

  // The offer (docs/couriers.md, "The offer"). Its answer is never queued: an offer expires
  // within a minute, and a "yes" sent when the network returns would take a job the courier
  // has meanwhile stopped waiting for.
  const OFFER_GONE = gettext("This offer is gone: it expired or was taken.");
  const NO_NETWORK_ANSWER = gettext("No network: the offer cannot be answered offline.");
  const OFFER_EVERY_MS = (Number(body.dataset.offerSeconds) || 10) * 1000;

  function withdrawOffer(text) {
    document.querySelectorAll("[data-offer-part]").forEach((part) => part.remove());
    document.querySelector("[data-no-offer]").hidden = false;
    notice(text);
    pollOffer();
  }

  function countDown(card) {
    // On the phone's monotonic clock from the seconds the server counted: its wall clock may
    // be minutes off, which would end the offer early or show it after it is gone.
    const ends = performance.now() + Number(card.dataset.secondsLeft) * 1000;
    const text = card.querySelector("[data-countdown]");
    const at = text.querySelector("time").textContent;
    const tick = () => {
      const left = Math.ceil((ends - performance.now()) / 1000);
      if (left <= 0) {
        clearInterval(timer);
        withdrawOffer(gettext("The offer expired."));
        return;
      }
      const seconds = String(left % 60).padStart(2, "0");
      const clock = Math.floor(left / 60) + ":" + seconds;
      text.textContent = interpolate(gettext("Expires in %s (at %s)"), [clock, at]);
    };
    const timer = setInterval(tick, 1000);
    tick();
  }

  function goHome(hash) { // the home page again, at the route when there is one now
    const home = body.dataset.homeUrl;
    if (location.pathname !== home) { location.assign(home + hash); return; }
    history.replaceState(null, "", home + hash);
    location.reload();
  }

  async function answerOffer(form) {
    if (!navigator.onLine) { notice(NO_NETWORK_ANSWER); return; }
    const buttons = document.querySelectorAll("[data-offer-answer] button");
    buttons.forEach((b) => { b.disabled = true; });
    let response = null;
    try {
      response = await fetch(form.dataset.api, {
        method: "POST", credentials: "same-origin", body: "{}",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrf() },
      });
    } catch (e) { response = null; }
    buttons.forEach((b) => { b.disabled = false; });
    if (response === null) notice(NO_NETWORK_ANSWER);
    else if (response.ok) goHome(form.matches("[data-accept]") ? "#route" : "");
    else if (response.status === 409 || response.status === 404) withdrawOffer(OFFER_GONE);
    else if (response.status === 401 || response.status === 403) location.reload();
    else notice(await errorText(response));
  }

  // The card of an offer that came, drawn in place from the server's page: the rest of the
  // page stays as it is (a courier on a run may be typing a PIN or a name at a stop).
  async function drawOffer() {
    const page = await serverPage();
    const fresh = page && page.querySelector("[data-offer-area]");
    if (!fresh || !fresh.querySelector("[data-offer]")) return false;
    document.querySelector("[data-offer-area]").replaceWith(document.importNode(fresh, true));
    countDown(document.querySelector("[data-offer]"));
    return true;
  }

  let offerPoll = null, asking = false;
  function pollOffer() { // while online with no offer shown, with or without a run
    if (offerPoll !== null || body.dataset.online !== "true") return;
    offerPoll = setInterval(async () => {
      if (asking || !navigator.onLine) return;
      asking = true; // one question at a time: a slow answer is not asked again meanwhile
      try {
        if (await offerCame()) {
          clearInterval(offerPoll);
          offerPoll = null;
        }
      } finally {
        asking = false;
      }
    }, OFFER_EVERY_MS);
  }

  async function offerCame() { // true once an offer is drawn
    let response;
    try {
      response = await fetch(body.dataset.offerUrl, { credentials: "same-origin" });
    } catch (e) { return false; }
    if (response.status === 401 || response.status === 403) { location.reload(); return false; }
    if (!response.ok) return false;
    let offer = null;
    try {
      offer = (await response.json()).data.offer;
    } catch (e) { return false; } // not the API's answer (a captive portal's page): ask later
    return Boolean(offer) && drawOffer();
  }

  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (form.matches("[data-move]")) { event.preventDefault(); submitMove(form); }
    // An "Until" time is read by the page (today, in the service's zone), so that form posts.
    else if (form.matches("[data-status-form]") && !untilTyped(form)) { event.preventDefault(); submitStatus(form); }
    else if (form.matches("[data-offer-answer]")) { event.preventDefault(); answerOffer(form); }
  });
  window.addEventListener("online", () => { notice(""); flush(); });
  window.addEventListener("offline", () => notice(gettext("No network: moves and positions wait here until it returns.")));

  showWaiting();
  showRefused();
  showConfirmed();
  document.addEventListener("click", (event) => {
    if (!event.target.matches("[data-changes-seen]")) return;
    document.getElementById("changes").hidden = true;
    document.querySelector("[data-changes]").replaceChildren();
  });
  setInterval(checkRoute, ROUTE_EVERY_MS);
  const offerCard = document.querySelector("[data-offer]");
  if (offerCard) countDown(offerCard);
  else if (body.dataset.wantsOffer === "true") pollOffer();
  if (body.dataset.online === "true" && "geolocation" in navigator) {
    takePoint();
    setInterval(takePoint, EVERY_MS);
  }
  flush();
})();
