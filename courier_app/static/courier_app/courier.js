// The courier app in the browser (docs/couriers.md). The page works without this file (plain
// form posts); with it, moves and the online switch go to the JSON API (/api/v1/courier/),
// and a move or a position made without network waits in localStorage until the network
// returns (the `online` event, and every page load). Resending is safe: the same move twice
// answers the stop, and a position not newer than the stored one is ignored.
(function () {
  "use strict";
  const body = document.body;
  const courier = body.dataset.courier;
  if (!courier) return; // the sign-in page

  // Per courier: a phone shared by two couriers never sends one's queue as the other.
  const MOVES = "courier-moves-" + courier;
  const POINTS = "courier-points-" + courier;
  const REFUSED = "courier-refused-" + courier;
  const MAX_POINTS = Number(body.dataset.maxPoints) || 100; // per request, as the API takes
  const EVERY_MS = (Number(body.dataset.positionSeconds) || 15) * 1000;
  const KEEP_POINTS = 2000; // about eight hours at one point every 15 s
  const MOVE_NAMES = { PICKED_UP: "Picked up", DELIVERED: "Delivered", FAILED: "Failed",
                       RETURNING: "Returning", RETURNED: "Returned" };
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
    if (moves.length) parts.push(moves.length + " waiting to send");
    if (points) parts.push(points + (points === 1 ? " position" : " positions") + (moves.length ? "" : " waiting to send"));
    badge.textContent = parts.join(" · ");
    badge.hidden = parts.length === 0;
    for (const item of moves) {
      const stop = document.getElementById("stop-" + item.drop);
      if (!stop) continue;
      stop.classList.add("queued");
      const waiting = stop.querySelector("[data-waiting]");
      waiting.textContent = "Waiting to send: " + (MOVE_NAMES[item.fields.to] || item.fields.to);
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
      return "The move was refused (" + response.status + ").";
    }
  }

  // Not taken now: the network or the server is away, or the session ended (sign in again).
  const later = (status) => status >= 500 || status === 429 || status === 401 || status === 403;

  function moveRequest(item) {
    const data = new FormData();
    for (const [name, value] of Object.entries(item.fields)) data.append(name, value);
    if (item.file) data.append("photo", item.file, item.file.name || "photo.jpg");
    else if (item.photo) data.append("photo", blobOf(item.photo), item.photoName || "photo.jpg");
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
      location.reload();
    } else {
      setError(item.drop, await errorText(response));
    }
    form.querySelectorAll("button").forEach((b) => { b.disabled = false; });
  }

  async function queue(item) {
    const kept = { id: item.id, drop: item.drop, fields: item.fields };
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
      notice("No network: the move waits to be sent, without its photo (too big to keep).");
      return;
    }
    notice("No network: the move waits and is sent when the network returns.");
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

  function showRefused() {
    const refused = read(REFUSED);
    localStorage.removeItem(REFUSED);
    for (const r of refused) setError(r.drop, "Sent when the network returned, and refused: " + r.text);
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
      () => notice("Allow this page to use your location: the shop and the recipient see where you are."),
      { enableHighAccuracy: true, maximumAge: 5000, timeout: 12000 }
    );
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
      notice("No network: try again when you have a signal.");
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

  // The offer (docs/couriers.md, "The offer"). Its answer is never queued: an offer expires
  // within a minute, and a "yes" sent when the network returns would take a job the courier
  // has meanwhile stopped waiting for.
  const OFFER_GONE = "This offer is gone: it expired or was taken.";
  const NO_NETWORK_ANSWER = "No network: the offer cannot be answered offline.";
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
        withdrawOffer("The offer expired.");
        return;
      }
      const seconds = String(left % 60).padStart(2, "0");
      text.textContent = "Expires in " + Math.floor(left / 60) + ":" + seconds + " (at " + at + ")";
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

  let offerPoll = null;
  function pollOffer() { // a reload shows the offer that came: the server renders the card
    if (offerPoll !== null || body.dataset.online !== "true") return;
    offerPoll = setInterval(async () => {
      if (!navigator.onLine) return;
      let response;
      try {
        response = await fetch(body.dataset.offerUrl, { credentials: "same-origin" });
      } catch (e) { return; }
      if (response.status === 401 || response.status === 403) { location.reload(); return; }
      if (!response.ok) return;
      try {
        if ((await response.json()).data.offer) location.reload();
      } catch (e) { /* not the API's answer (a captive portal's page): ask again later */ }
    }, OFFER_EVERY_MS);
  }

  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (form.matches("[data-move]")) { event.preventDefault(); submitMove(form); }
    else if (form.matches("[data-status-form]")) { event.preventDefault(); submitStatus(form); }
    else if (form.matches("[data-offer-answer]")) { event.preventDefault(); answerOffer(form); }
  });
  window.addEventListener("online", () => { notice(""); flush(); });
  window.addEventListener("offline", () => notice("No network: moves and positions wait here until it returns."));

  showWaiting();
  showRefused();
  const offerCard = document.querySelector("[data-offer]");
  if (offerCard) countDown(offerCard);
  else if (body.dataset.wantsOffer === "true") pollOffer();
  if (body.dataset.online === "true" && "geolocation" in navigator) {
    takePoint();
    setInterval(takePoint, EVERY_MS);
  }
  flush();
})();
