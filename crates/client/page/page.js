// The client's local page: the running client's status, read from /api/status every
// two seconds, and the marks (right-click or press and hold a server, then Done).
// Every value from the client is set as text, never as HTML.

const HOLD_MS = 500;

// Set while a pointer is down on a server: the table is not redrawn under it.
let holding = false;

const $ = (id) => document.getElementById(id);

function el(tag, props = {}, children = []) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "text") e.textContent = v;
    else if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

async function call(path, body) {
  const init = body === undefined
    ? {}
    : { method: "POST", headers: { "Content-Type": "application/json", "X-Switchyard-Page": "1" }, body: JSON.stringify(body) };
  const r = await fetch(path, init);
  const answer = await r.json().catch(() => ({ ok: false, error: `HTTP ${r.status}` }));
  if (!answer.ok) throw new Error(answer.error || `HTTP ${r.status}`);
  return answer;
}

function showError(e) {
  $("error").textContent = e ? String(e.message || e) : "";
}

async function act(path, body) {
  try {
    await call(path, body);
    showError(null);
  } catch (e) {
    showError(e);
  }
  await refresh();
}

const toggle = (server) =>
  act(server.marked ? "/api/unmark" : "/api/mark", { servers: [server.name] });

function ms(v) {
  return v === null || v === undefined ? "–" : `${v} ms`;
}

function row(server) {
  const badges = el("td", { class: "notes" });
  for (const [key, word] of [["current", "current"], ["return_to", "return"], ["marked", "marked"]]) {
    if (server[key]) badges.append(el("span", { class: `badge ${word}`, text: word }));
  }
  if (server.speed_mbps !== null && server.speed_mbps !== undefined) {
    badges.append(el("span", { text: `${server.speed_mbps.toFixed(1)} Mbit/s` }));
  }
  if (server.standing !== "scored") badges.append(el("span", { text: server.standing.replace("_", " ") }));
  const tr = el("tr", {
    class: `server${server.marked ? " marked" : ""}`,
    tabindex: "0",
    "data-name": server.name,
    "aria-label": `${server.name}${server.marked ? ", marked" : ""}${server.current ? ", in use" : ""}`,
  }, [
    el("td", { class: "name", text: server.name }),
    el("td", { class: "num", text: server.score === null ? "–" : String(server.score) }),
    el("td", { class: "num", text: ms(server.typical_ms) }),
    el("td", { class: "num", text: ms(server.jumps_ms) }),
    el("td", { class: "num", text: server.failures === null ? "–" : String(server.failures) }),
    badges,
    el("td", {}, [el("button", {
      type: "button",
      class: "mark",
      text: server.marked ? "Unmark" : "Mark",
      onclick: () => toggle(server),
    })]),
  ]);
  tr.addEventListener("contextmenu", (ev) => {
    ev.preventDefault();
    toggle(server);
  });
  // Press and hold: a pointer down that stays put for HOLD_MS.
  let timer = null;
  const cancel = () => { clearTimeout(timer); timer = null; holding = false; };
  tr.addEventListener("pointerdown", (ev) => {
    if (ev.button !== 0 || ev.target.closest("button")) return;
    cancel();
    holding = true;
    timer = setTimeout(() => { cancel(); toggle(server); }, HOLD_MS);
  });
  for (const end of ["pointerup", "pointerleave", "pointercancel"]) tr.addEventListener(end, cancel);
  return tr;
}

function table(sub) {
  const caption = `${sub.number}. ${sub.name}${sub.auto ? " (Auto is on)" : ""}`;
  const head = el("tr", {}, ["Server", "Score", "Typical", "Jumps", "Failures", "", ""].map(
    (h, i) => el("th", { scope: "col", class: i >= 1 && i <= 4 ? "num" : "", text: h })));
  return el("table", { "data-subscription": sub.name }, [
    el("caption", { text: caption }),
    el("thead", {}, [head]),
    el("tbody", {}, sub.servers.map(row)),
  ]);
}

function render(s) {
  $("summary").textContent = s.current ? `Connected through ${s.current}` : "Not connected";
  const now = $("now");
  now.replaceChildren();
  const add = (term, value) => now.append(el("dt", { text: term }), el("dd", { text: value }));
  add("Current server", s.current || "none");
  add("Return server", s.return_to || "none");
  add("Network", s.network === "up" ? "up" : "down");
  add("Back-off", s.back_off
    ? `the network looks gone (${s.back_off.attempts} attempt(s) in a row); next attempt in ${Math.ceil(s.back_off.retry_in_ms / 1000)} s`
    : "none");
  const c = s.last_check;
  add("Last check", c
    ? `#${c.id} (${c.trigger.replace("_", " ")}): ${c.outcome.replace("_", " ")}` +
      `; answered: ${c.answered.map((a) => `${a.server} ${a.ms} ms`).join(", ") || "none"}` +
      `; silent: ${c.silent.join(", ") || "none"}`
    : "none yet");
  $("subscriptions").replaceChildren(...s.subscriptions.map(table));
}

// The last status drawn: the page is redrawn only when it changes, so a row being
// pointed at, and the keyboard's focus, stay put between polls.
let drawn = "";

function draw(s) {
  const text = JSON.stringify(s);
  if (text === drawn) return;
  const focused = document.activeElement && document.activeElement.closest("tr.server");
  const name = focused && focused.dataset.name;
  const onButton = document.activeElement && document.activeElement.matches("button.mark");
  render(s);
  drawn = text;
  if (name !== undefined && name !== null) {
    for (const tr of document.querySelectorAll("tr.server")) {
      if (tr.dataset.name === name) (onButton ? tr.querySelector("button.mark") : tr).focus();
    }
  }
}

async function refresh() {
  try {
    const s = await call("/api/status");
    if (!holding) draw(s);
  } catch (e) {
    $("summary").textContent = `The client does not answer: ${e.message}`;
  }
}

$("done").addEventListener("click", () => act("/api/done", {}));
refresh();
setInterval(refresh, 2000);
