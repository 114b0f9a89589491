// The jr2 console (docs/console.md): a page over serve's own HTTP routes (docs/serve.md), with a
// Caller's token. It has no authority of its own: every read and every change is a request to the
// API, which checks the token's scopes as it does for curl. The token lives in this tab's
// sessionStorage only (gone with the tab), is sent in the Authorization header (never in a URL),
// and nothing the server sends is put into the page as markup: every text goes in as text.
"use strict";

const TOKEN_KEY = "jr2.console.token";
const PAGE = 50; // runs a page
const FEED_KEEP = 1000; // feed lines kept on a run's page
const FEED_FRAME = 250; // feed lines drawn in one frame at most
const main = document.getElementById("main");
const statusLine = document.getElementById("status");
let stopFeed = null; // ends the feed the run page follows
let shownGen = 0; // one more at each route(): a page whose reads finish after the next began draws nothing

// ---- small helpers ----------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = String(v);
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function say(text) {
  statusLine.textContent = text;
}

function token() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error) || "HTTP " + status);
    this.status = status;
    this.body = body;
  }
}

// A request to serve's API with the token. JSON in, JSON out; a refusal throws ApiError with
// the server's one-line error.
async function api(method, path, body) {
  const headers = { Authorization: "Bearer " + token() };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "omit",
    cache: "no-store",
    redirect: "error",
  });
  let doc = null;
  try {
    doc = await res.json();
  } catch (e) {
    doc = null;
  }
  if (!res.ok) throw new ApiError(res.status, doc);
  return doc;
}

// One formatter for every time shown (toLocaleString would make one per call: a feed shows
// thousands).
const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "short", timeStyle: "medium" });
function time(ms) {
  return ms ? timeFormat.format(ms) : "";
}

function statusChip(status) {
  return el("span", { class: "st-" + status, text: status });
}

// ---- signing in -------------------------------------------------------------------------------

function signIn(message) {
  document.getElementById("sign-out").hidden = true;
  document.getElementById("who").textContent = "";
  const input = el("input", {
    id: "token",
    type: "password",
    autocomplete: "off",
    required: true,
    "aria-describedby": "token-help",
  });
  const error = el("p", { id: "signin-error", class: "error", role: "alert", text: message || "" });
  const form = el(
    "form",
    { class: "signin", "aria-labelledby": "signin-title" },
    el("h1", { id: "signin-title", text: "Sign in" }),
    el("label", { for: "token", text: "Caller token" }),
    input,
    el("p", {
      id: "token-help",
      class: "help",
      text: "A token from serve's callers file, or the instance token in the store's .token file. " +
        "It is kept in this tab only, and sent to this serve alone.",
    }),
    error,
    el("button", { type: "submit", class: "primary", text: "Sign in" }),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    try {
      await whoAmI();
      route();
    } catch (e) {
      sessionStorage.removeItem(TOKEN_KEY);
      error.textContent = e.status === 401 ? "serve does not know this token." : e.message;
      input.focus();
    }
  });
  main.replaceChildren(form);
  input.focus();
}

// Who the token is (GET /caller): its name and its scopes on each workflow. The page offers only
// what they allow; every route still checks its own scope.
let me = { name: "", workflows: {} };
let canRead = false;
function may(workflow, scope) {
  const w = me.workflows[workflow];
  return !!w && w.scopes.includes(scope);
}
async function whoAmI() {
  me = await api("GET", "/caller");
  canRead = Object.values(me.workflows).some((w) => w.scopes.includes("read"));
  document.getElementById("sign-out").hidden = false;
  document.getElementById("who").textContent =
    "signed in as " + me.name + (canRead ? "" : " (answers only)");
  document.getElementById("nav-runs").hidden = !canRead;
}

document.getElementById("sign-out").addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN_KEY);
  if (stopFeed) stopFeed();
  location.hash = "#/";
  signIn("Signed out.");
});

// ---- the runs ---------------------------------------------------------------------------------

const STATUSES = ["waiting", "done", "failed", "deadlocked", "error", "cancelled", "drifted"];
let stopRuns = null; // ends the following of the runs list's first page

// The runs: one page from the server (GET /runs?limit=…), newest change first; the filters and the
// cursor are the server's, so a page costs the same at 100 runs and at 100,000.
async function runsPage(params) {
  const wf = params.get("workflow") || "";
  const st = params.get("status") || "";
  const q = params.get("q") || "";
  const after = params.get("after") || "";
  const ask = new URLSearchParams({ limit: String(PAGE) });
  if (wf) ask.set("workflow", wf);
  if (st) ask.set("status", st);
  if (q) ask.set("q", q);
  if (after) ask.set("after", after);
  const gen = shownGen;
  const page = await api("GET", "/runs?" + ask.toString());
  if (gen !== shownGen) return; // the page moved on while the list was read: it follows nothing
  const readable = Object.keys(me.workflows).filter((w) => may(w, "read")).sort();

  const select = (id, label, value, options) =>
    el(
      "div",
      {},
      el("label", { for: id, text: label }),
      el(
        "select",
        { id, name: id },
        el("option", { value: "", text: "any" }),
        options.map((o) => el("option", { value: o, text: o, selected: o === value })),
      ),
    );
  const filters = el(
    "form",
    { class: "filters", role: "search", "aria-label": "Filter the runs" },
    select("workflow", "Workflow", wf, readable),
    select("status", "Status", st, STATUSES),
    el(
      "div",
      {},
      el("label", { for: "q", text: "Run id or item id" }),
      el("input", { id: "q", name: "q", value: q, maxlength: "200" }),
    ),
    el("button", { type: "submit", text: "Filter" }),
  );
  filters.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const p = new URLSearchParams();
    for (const k of ["workflow", "status", "q"]) {
      const v = filters.elements[k].value.trim();
      if (v) p.set(k, v);
    }
    location.hash = "#/?" + p.toString();
  });

  const countsSection = el("section", { id: "counts", "aria-label": "Counts per workflow" });
  const body = el("tbody", {});
  const fill = (pg) => {
    countsSection.replaceChildren(
      ...Object.keys(pg.counts)
        .sort()
        .map((w) =>
          el(
            "div",
            { class: "counts" },
            el("strong", { text: w }),
            Object.entries(pg.counts[w]).map(([s, n]) => el("span", { class: "chip" }, statusChip(s), " " + n)),
          ),
        ),
    );
    body.replaceChildren(
      ...pg.runs.map((r) =>
        el(
          "tr",
          {},
          el("td", {}, el("a", { href: "#/runs/" + encodeURIComponent(r.runId), class: "mono", text: r.runId })),
          el("td", { text: r.workflow }),
          el("td", {}, statusChip(r.status)),
          el("td", { class: "mono", text: r.key || "" }),
          el("td", { text: time(r.updated) }),
        ),
      ),
    );
  };
  fill(page);

  const go = (cursor) => {
    const p = new URLSearchParams(params);
    if (cursor) p.set("after", cursor);
    else p.delete("after");
    location.hash = "#/?" + p.toString();
  };
  const shownParts = [
    el("h1", { text: "Runs" }),
    startSection(),
    headsSection(page.heads || {}),
    countsSection,
    filters,
    el(
      "table",
      {},
      el("caption", { class: "visually-hidden", text: "Runs, newest change first" }),
      el(
        "thead",
        {},
        el(
          "tr",
          {},
          ["Run", "Workflow", "Status", "Item", "Changed"].map((h) => el("th", { scope: "col", text: h })),
        ),
      ),
      body,
    ),
    page.runs.length ? null : el("p", { id: "no-runs", text: "No run matches." }),
    el(
      "div",
      { class: "pager" },
      el("button", { type: "button", text: "Newest", disabled: !after, onclick: () => go("") }),
      el("span", { text: `${page.runs.length} run${page.runs.length === 1 ? "" : "s"}, newest change first` }),
      el("button", { type: "button", id: "older", text: "Older", disabled: !page.next, onclick: () => go(page.next) }),
    ),
  ];
  main.replaceChildren(...shownParts.filter((p) => p !== null));
  // The first page follows what happens: serve's stream of changed runs (GET /runs?follow=true,
  // the same filters) says when, and the page and counts are read again, at most once a second. A
  // slow read every 30 s besides catches a change the stream could not order (two hosts' clocks).
  if (!after) {
    const shown = location.hash;
    const ctrl = new AbortController();
    let stopped = false;
    let again = null;
    const reread = async () => {
      again = null;
      if (stopped || location.hash !== shown) return;
      try {
        fill(await api("GET", "/runs?" + ask.toString()));
      } catch (e) {
        say(e.message);
      }
    };
    const soon = () => {
      if (!again) again = setTimeout(reread, 1000);
    };
    const backstop = setInterval(() => document.hidden || soon(), 30000);
    stopRuns = () => {
      stopped = true;
      ctrl.abort();
      clearTimeout(again);
      clearInterval(backstop);
    };
    (async () => {
      const follow = new URLSearchParams(ask);
      follow.delete("limit");
      follow.set("follow", "true");
      let lastId = "";
      while (!stopped) {
        try {
          await readEvents("/runs?" + follow.toString(), ctrl, () => stopped, (ev) => {
            lastId = ev.updated + "." + ev.runId;
            soon();
          }, lastId ? { "Last-Event-ID": lastId } : {});
        } catch (e) {
          if (stopped) return;
          await new Promise((r) => setTimeout(r, 2000));
        }
      }
    })();
  }
}

// Start a run: a form from each workflow's input type (GET /caller's `input`, the JSON Schema of
// its parameters) for the workflows the token may `start` (a standing one is resumed instead).
function startSection() {
  const startable = Object.entries(me.workflows)
    .filter(([, w]) => w.scopes.includes("start") && !w.standing && w.input)
    .sort(([a], [b]) => (a < b ? -1 : 1));
  if (!startable.length) return null;
  return el(
    "section",
    { id: "start", "aria-label": "Start a run" },
    el("h2", { text: "Start a run" }),
    startable.map(([name, w]) =>
      el(
        "details",
        {},
        el("summary", { text: name }),
        formFor(w.input, `start.${name}.`, { "data-start": name, "aria-label": "Start " + name }, null, el("p", { class: "help", text: "It takes no input." }), "Start " + name, async (input) => {
          const r = await api("POST", `/workflows/${encodeURIComponent(name)}/runs`, { input });
          say(`${name}: run ${r.runId} started`);
          location.hash = "#/runs/" + encodeURIComponent(r.runId);
        }),
      ),
    ),
  );
}

// The standing workflows' heads: live, waiting out a back-off until when, or paused and why —
// with resume where the token may start that workflow.
function headsSection(heads) {
  const names = Object.keys(heads).sort();
  if (!names.length) return null;
  return el(
    "section",
    { id: "heads", "aria-label": "Standing workflows" },
    el("h2", { text: "Standing workflows" }),
    names.map((w) => {
      const h = heads[w];
      let what = h.state;
      if (h.state === "waiting") what = `backing off after ${h.ended} until ${time(h.retryAtMs)}`;
      if (h.state === "paused") what = `paused (${h.paused})` + (h.why ? ": " + h.why : "");
      const held = h.held ? `, ${h.held} held` : "";
      const resume =
        h.state === "paused" && may(w, "start")
          ? el("button", {
              type: "button",
              text: "Resume",
              onclick: async () => {
                try {
                  const r = await api("POST", `/workflows/${encodeURIComponent(w)}/runs`, {});
                  say("resumed as run " + r.runId);
                  route();
                } catch (e) {
                  say(e.message);
                }
              },
            })
          : null;
      return el(
        "div",
        { class: "counts", "data-workflow": w },
        el("strong", { text: w }),
        " " + what + held + " ",
        h.run ? el("a", { href: "#/runs/" + encodeURIComponent(h.run), class: "mono", text: h.run }) : null,
        " ",
        resume,
      );
    }),
  );
}

// ---- forms from a Menu's JSON Schema ------------------------------------------------------------

// A schema with its `$ref` (to `#/$defs/NAME`, what sema::JsonSchema writes for a named record)
// followed, and an optional value's `anyOf: [T, null]` read as T.
function resolveSchema(schema, defs) {
  let s = schema || {};
  for (let hops = 0; s.$ref && hops < 8; hops++) {
    const m = /^#\/\$defs\/(.+)$/.exec(s.$ref);
    s = (m && defs && defs[m[1]]) || {};
  }
  if (Array.isArray(s.anyOf)) {
    const real = s.anyOf.filter((a) => !(a && a.type === "null"));
    if (real.length === 1) return { ...resolveSchema(real[0], defs), description: s.description || real[0].description };
  }
  return s;
}

// One input for a schema; gives {node, read()} where read() gives the value (undefined: left out).
// `defs`: the `$defs` of the schema it is part of; `depth` bounds a record that holds itself.
function inputFor(schema, name, id, required, defs, depth = 0) {
  schema = resolveSchema(schema, defs);
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  if (Array.isArray(schema.enum)) {
    const sel = el(
      "select",
      { id, name, required },
      required ? null : el("option", { value: "", text: "(none)" }),
      schema.enum.map((v) => el("option", { value: JSON.stringify(v), text: String(v) })),
    );
    return { node: sel, read: () => (sel.value === "" ? undefined : JSON.parse(sel.value)) };
  }
  if (type === "boolean") {
    const box = el("input", { id, name, type: "checkbox" });
    return { node: box, read: () => box.checked };
  }
  if (type === "integer" || type === "number") {
    const num = el("input", { id, name, type: "number", step: type === "integer" ? "1" : "any", required });
    return { node: num, read: () => (num.value === "" ? undefined : Number(num.value)) };
  }
  if (type === "object" && schema.properties && depth < 6) {
    const inner = fieldsFor(schema, id + ".", defs, depth + 1);
    return { node: el("fieldset", { id }, el("legend", { text: name }), inner.nodes), read: inner.read };
  }
  if (type === "array") {
    const area = el("textarea", { id, name, required, "aria-describedby": id + "-fmt" });
    return {
      node: el("div", {}, area, el("p", { id: id + "-fmt", class: "help", text: "A JSON list." })),
      read: () => (area.value.trim() === "" ? undefined : JSON.parse(area.value)),
    };
  }
  if (type === "string") {
    const long = (schema.maxLength || 0) > 200 || /reason|summary|note|question|text|why/i.test(name);
    const box = long ? el("textarea", { id, name, required }) : el("input", { id, name, required });
    return { node: box, read: () => (box.value === "" && !required ? undefined : box.value) };
  }
  const any = el("textarea", { id, name, required, "aria-describedby": id + "-fmt" });
  return {
    node: el("div", {}, any, el("p", { id: id + "-fmt", class: "help", text: "A JSON value." })),
    read: () => (any.value.trim() === "" ? undefined : JSON.parse(any.value)),
  };
}

function fieldsFor(schema, prefix, defs, depth = 0) {
  defs = (schema && schema.$defs) || defs;
  const props = (schema && schema.properties) || {};
  const required = new Set((schema && schema.required) || []);
  const readers = [];
  const nodes = Object.entries(props).map(([name, raw]) => {
    const id = prefix + name;
    const sub = resolveSchema(raw, defs);
    const input = inputFor(sub, name, id, required.has(name), defs, depth);
    readers.push([name, input.read]);
    const nested = input.node.tagName === "FIELDSET";
    return el(
      "div",
      { class: "field", "data-field": name },
      nested ? null : el("label", { for: id, text: name + (required.has(name) ? " (required)" : "") }),
      sub && sub.description ? el("p", { class: "help", text: sub.description }) : null,
      input.node,
      el("p", { class: "error", role: "alert", "data-error-for": name }),
    );
  });
  return {
    nodes,
    read: () => {
      const out = {};
      for (const [name, read] of readers) {
        const v = read();
        if (v !== undefined) out[name] = v;
      }
      return out;
    },
  };
}

// The server's refusal at the field it names (`reason`), else under the form.
function showRefusal(form, message) {
  for (const p of form.querySelectorAll("[data-error-for]")) p.textContent = "";
  const named = [...form.querySelectorAll("[data-field]")].find((f) =>
    message.includes("`" + f.dataset.field + "`") || message.includes("." + f.dataset.field),
  );
  const where = named ? named.querySelector("[data-error-for]") : form.querySelector(".form-error");
  where.textContent = message;
  const input = named && named.querySelector("input, select, textarea");
  if (input) {
    input.setAttribute("aria-invalid", "true");
    input.focus();
  }
}

// A form of `schema`'s fields that, submitted, sends what they read to `send` (a field that is not
// JSON, or the server's refusal, shown at the field it names): the Gate forms and the start forms.
// `empty` is what it says when the schema has no field.
function formFor(schema, prefix, attrs, head, empty, button, send) {
  const fields = fieldsFor(schema, prefix);
  const form = el(
    "form",
    attrs,
    head,
    fields.nodes.length ? fields.nodes : empty,
    el("p", { class: "error form-error", role: "alert" }),
    el("button", { type: "submit", class: "primary", text: button }),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    let value;
    try {
      value = fields.read();
    } catch (e) {
      return showRefusal(form, "a field is not JSON: " + e.message);
    }
    try {
      await send(value);
    } catch (e) {
      showRefusal(form, e.message);
    }
  });
  return form;
}

function gateForms(runId, gate, onDone) {
  const menu = gate.menu || (gate.accepts || []).map((e) => ({ event: e }));
  return menu.map((item) =>
    formFor(
      item.schema,
      `${gate.gate}.${item.event}.`,
      { "data-event": item.event, "aria-label": `${gate.gate}: ${item.event}` },
      [el("h3", { text: item.event }), item.description ? el("p", { class: "help", text: item.description }) : null],
      null,
      "Send " + item.event,
      async (payload) => {
        const path = `/runs/${encodeURIComponent(runId)}/gates/${encodeURIComponent(gate.gate)}/events`;
        await api("POST", path, { event: item.event, payload });
        say(`${gate.gate}: ${item.event} sent`);
        onDone();
      },
    ),
  );
}

function gateSection(runId, gate, canAnswer, onDone) {
  return el(
    "section",
    { class: "gate", "data-gate": gate.gate, "aria-label": "Gate " + gate.gate },
    el("h2", {}, "Gate ", el("code", { text: gate.gate })),
    gate.meta && Object.keys(gate.meta).length
      ? el("pre", { class: "mono", text: JSON.stringify(gate.meta, null, 2) })
      : null,
    canAnswer ? gateForms(runId, gate, onDone) : el("p", { class: "help", text: "Accepts: " + (gate.accepts || []).join(", ") }),
  );
}

// ---- a run --------------------------------------------------------------------------------------

// `following`: the feed's list the page follows already (a run read again), kept as it is.
async function runPage(id, following) {
  const gen = shownGen;
  const run = await api("GET", "/runs/" + encodeURIComponent(id));
  if (gen !== shownGen) return; // the page moved on while the run was read
  const full = run.report !== undefined; // `read`; an `answer`-only token sees the observation
  const feedList = following || el("ol", { id: "feed-lines" });
  const scroll = following ? following.parentElement.scrollTop : 0;
  const header = el(
    "div",
    {},
    el("h1", {}, "Run ", el("code", { text: run.runId || id })),
    el(
      "p",
      {},
      el("strong", { text: run.workflow || "" }),
      " — ",
      statusChip(run.status || ""),
      run.reason ? " — " + run.reason : "",
    ),
  );
  const parts = [header];
  // Cancel where the token's scopes allow it (GET /caller); the server checks it again.
  if (run.status === "waiting" && may(run.workflow, "cancel")) {
    parts.push(
      el("button", {
        type: "button",
        class: "danger",
        id: "cancel",
        text: "Cancel the run",
        onclick: async () => {
          if (!confirm("Cancel run " + run.runId + "? What it did is kept.")) return;
          try {
            await api("POST", `/runs/${encodeURIComponent(run.runId)}/events`, { type: "CANCEL" });
            say("cancelled");
            route();
          } catch (e) {
            say(e.message);
          }
        },
      }),
    );
  }
  if (full && (run.items || run.failures)) {
    const items = run.items || {};
    const failures = run.failures || {};
    parts.push(
      el("h2", { text: "The Pool" }),
      el(
        "p",
        { id: "progress" },
        `${Object.keys(items).length} settled, ${Object.keys(failures).length} failed`,
      ),
      Object.keys(failures).length
        ? el(
            "table",
            {},
            el("caption", { text: "Failed items" }),
            el("thead", {}, el("tr", {}, el("th", { scope: "col", text: "Item" }), el("th", { scope: "col", text: "Why" }))),
            el(
              "tbody",
              {},
              Object.entries(failures).map(([item, f]) =>
                el("tr", {}, el("td", { class: "mono", text: item }), el("td", { text: typeof f === "string" ? f : JSON.stringify(f) })),
              ),
            ),
          )
        : null,
    );
  }
  if (run.workflow) parts.push(pictureSection(run));
  if (full) parts.push(deadlockSection(run.output), childrenSection(run.children || []));
  const gates = run.gates || [];
  parts.push(el("h2", { text: gates.length ? `Open Gates (${gates.length})` : "No open Gate" }));
  for (const g of gates) parts.push(gateSection(run.runId, g, true, () => route()));
  if (full && run.output !== undefined && run.output !== null) {
    parts.push(el("h2", { text: "Output" }), el("pre", { class: "mono", text: JSON.stringify(run.output, null, 2) }));
  }
  if (full) parts.push(el("h2", { text: "Feed" }), el("div", { class: "feed", tabindex: "0", "aria-label": "The run's feed" }, feedList));
  main.replaceChildren(...parts.filter((p) => p !== null));
  if (following) feedList.parentElement.scrollTop = scroll;
  else if (full) followFeed(run.runId, feedList, run.status !== "waiting");
}

// ---- why a Pool is stuck, and what is live ------------------------------------------------------

// A deadlocked Pool's explanation (its output's `blocked` and `cycle`, docs/runtime.md): each item
// left and what each of its needs is.
function deadlockSection(output) {
  if (!output || typeof output !== "object" || !Array.isArray(output.blocked) || !output.blocked.length) return null;
  const rows = output.blocked.map((b) =>
    el(
      "tr",
      {},
      el("td", { class: "mono", text: b.id }),
      el("td", {}, (b.waitsFor || []).flatMap((w, i) => [i ? ", " : "", el("span", { class: "mono", text: w.id }), ` (${w.is})`])),
    ),
  );
  return el(
    "section",
    { id: "deadlock", "aria-label": "Why the items left can never start" },
    el("h2", { text: "Why the items left can never start" }),
    Array.isArray(output.cycle) ? el("p", { text: "A dependency cycle: " + output.cycle.join(" → ") }) : null,
    el(
      "table",
      {},
      el("thead", {}, el("tr", {}, el("th", { scope: "col", text: "Item" }), el("th", { scope: "col", text: "Waits for" }))),
      el("tbody", {}, rows),
    ),
  );
}

// What the run has live under it (a Pool's workers, a machine's invokes), each with its active
// states and its own children; the first 200.
function childrenSection(children) {
  if (!children.length) return null;
  let shown = 0;
  const list = (kids) =>
    el(
      "ul",
      {},
      kids.map((c) => {
        if (++shown > 200) return null;
        const states = (c.value || []).join(", ");
        return el(
          "li",
          { "data-child": c.id },
          el("span", { class: "mono", text: c.id }),
          ` — ${c.kind || "child"}` + (states ? ` in ${states}` : ""),
          // A Pool of runs' worker: its own run, once the host gave it one.
          typeof c.run === "string" ? [" ", el("a", { href: "#/runs/" + encodeURIComponent(c.run), class: "mono", text: c.run })] : null,
          c.children && c.children.length ? list(c.children) : null,
        );
      }),
    );
  return el(
    "section",
    { id: "children", "aria-label": "Live children" },
    el("h2", { text: `Live children (${children.length})` }),
    list(children),
    shown > 200 ? el("p", { class: "help", text: `${shown - 200} more not shown` }) : null,
  );
}

// ---- the machine's picture ----------------------------------------------------------------------

// Each workflow's pictures (GET /workflows/:name/picture, `?of=worker` for a Pool's worker machine):
// the SVG Graphviz laid out when the runner was built, fetched once a page load.
const pictures = new Map();
function pictureOf(workflow, of) {
  const key = workflow + (of ? "?of=" + of : "");
  if (!pictures.has(key)) {
    pictures.set(
      key,
      (async () => {
        const res = await fetch(`/workflows/${encodeURIComponent(workflow)}/picture` + (of ? "?of=" + of : ""), {
          headers: { Authorization: "Bearer " + token() },
          credentials: "omit",
          cache: "no-store",
        });
        if (!res.ok) {
          const doc = await res.json().catch(() => null);
          return { error: (doc && doc.error) || "no picture (HTTP " + res.status + ")" };
        }
        return { text: await res.text() };
      })(),
    );
  }
  return pictures.get(key);
}

const SVG_NS = "http://www.w3.org/2000/svg";
const XLINK_NS = "http://www.w3.org/1999/xlink";
const SVG_TAGS = new Set(["svg", "g", "title", "path", "polygon", "polyline", "ellipse", "text", "tspan", "rect", "line", "circle"]);
const SVG_ATTRS = new Set([
  "viewBox", "width", "height", "transform", "fill", "stroke", "stroke-width", "stroke-dasharray",
  "d", "points", "cx", "cy", "rx", "ry", "r", "x", "y", "x1", "y1", "x2", "y2", "text-anchor",
  "font-family", "font-size", "font-weight", "font-style", "class",
]);

// A copy of the drawing alone: only the elements and attributes above come over (an `<a>` becomes a
// `<g>`), so nothing in the file — a script, a handler, a link, a style — reaches the page. Each
// state's group gets `data-state`: a state's node is titled with its path, a compound state's
// cluster carries it as its tooltip.
function cleanSvg(node) {
  const tag = node.localName === "a" ? "g" : node.localName;
  if (!SVG_TAGS.has(tag)) return null;
  const out = document.createElementNS(SVG_NS, tag);
  for (const a of node.attributes) if (SVG_ATTRS.has(a.name)) out.setAttribute(a.name, a.value);
  const cls = node.getAttribute("class");
  if (tag === "g" && cls === "node") {
    const title = [...node.children].find((c) => c.localName === "title");
    if (title) out.setAttribute("data-state", title.textContent);
  } else if (tag === "g" && cls === "cluster") {
    const link = node.querySelector("a");
    const state = link && link.getAttributeNS(XLINK_NS, "title");
    if (state) out.setAttribute("data-state", state);
  }
  for (const c of node.childNodes) {
    if (c.nodeType === Node.TEXT_NODE) out.append(document.createTextNode(c.nodeValue));
    else if (c.nodeType === Node.ELEMENT_NODE) {
      const copy = cleanSvg(c);
      if (copy) out.append(copy);
    }
  }
  return out;
}

// The picture of `run`'s machine with its active states marked (`value`: their paths; a
// compound state is marked when a state inside it is active). A Pool of machines gets its worker's
// picture too, each state marked with how many workers are in it (the live children's `value`).
function pictureSection(run) {
  const active = run.value || [];
  const box = el(
    "figure",
    { id: "picture", class: "picture" },
    el("figcaption", { text: active.length ? "The workflow — active: " + active.join(", ") : "The workflow" }),
  );
  const known = me.workflows[run.workflow] || {};
  const has = known.pictures || ["workflow"];
  if (has.includes("workflow")) drawPicture(box, run.workflow, "", `statechart of ${run.workflow}`, (st) => (active.some((v) => v === st || v.startsWith(st + ".")) ? 1 : 0));
  else box.append(el("p", { class: "help", text: "this runner was built without its pictures (Graphviz was not found)" }));
  if (!has.includes("worker")) return box;
  const workers = (run.children || []).filter((c) => c.kind === "machine");
  const count = (st) => workers.filter((c) => (c.value || []).some((v) => v === st || v.startsWith(st + "."))).length;
  const worker = el(
    "figure",
    { id: "worker-picture", class: "picture" },
    el("figcaption", { text: `Its worker — ${workers.length} live` + (workers.length > 200 ? " (the first 200 counted)" : "") }),
  );
  drawPicture(worker, run.workflow, "worker", `the worker machine of ${run.workflow}`, count, true);
  return el("div", {}, box, worker);
}

// Draws a picture into `box`: each state for which `marks(state)` is more than 0 is outlined and,
// with `counted`, its label gets the count.
function drawPicture(box, workflow, of, label, marks, counted = false) {
  pictureOf(workflow, of).then((p) => {
    if (p.error) return box.append(el("p", { class: "help", text: p.error }));
    const doc = new DOMParser().parseFromString(p.text, "image/svg+xml");
    const svg = doc.documentElement && doc.documentElement.localName === "svg" ? cleanSvg(doc.documentElement) : null;
    if (!svg) return box.append(el("p", { class: "help", text: "the picture could not be read" }));
    const marked = [];
    for (const g of svg.querySelectorAll("[data-state]")) {
      const st = g.getAttribute("data-state");
      const n = marks(st);
      if (!n) continue;
      g.classList.add("active");
      marked.push(counted ? `${st} ${n}` : st);
      const text = counted && g.querySelector("text");
      if (text) text.textContent += ` ×${n}`;
    }
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", label + (marked.length ? (counted ? "; workers by state: " : "; active: ") + marked.join(", ") : ""));
    box.append(svg);
  });
}

// The run's feed (GET /runs/:id/events, server-sent events) read with fetch, so that the token
// goes in a header: EventSource cannot send one.
function followFeed(id, list, once) {
  if (stopFeed) stopFeed();
  const ctrl = new AbortController();
  let stopped = false;
  let refresh = null;
  stopFeed = () => {
    stopped = true;
    ctrl.abort();
    clearTimeout(refresh); // a read of this run due after the page moved on would draw it again
  };
  let last = 0;
  // Lines are put on the page once a frame, whatever the rate they come at: at most FEED_FRAME
  // drawn a frame and the newest FEED_KEEP kept (a note says how many went before), so a feed of
  // 100,000 lines streams without the page freezing (the browser test measures the frame gaps).
  let pending = [];
  let dropped = 0;
  let frame = 0;
  const flush = () => {
    frame = 0;
    const box = list.parentElement; // the page is rebuilt around the list as the run moves
    const atEnd = !box || box.scrollHeight - box.scrollTop - box.clientHeight < 40;
    // More than a frame's worth waiting: only the newest FEED_FRAME are drawn, and what was shown
    // goes too, so the lines on the page are always the newest ones, with no hole among them.
    const burst = pending.length > FEED_FRAME;
    if (burst) dropped += pending.splice(0, pending.length - FEED_FRAME).length;
    const batch = document.createDocumentFragment();
    const count = burst ? FEED_KEEP : pending.length;
    for (const ev of pending.splice(0)) {
      const line = ev.line || (ev.kind + (ev.data ? " " + JSON.stringify(ev.data) : ""));
      batch.append(el("li", { "data-kind": ev.kind, "data-seq": ev.seq }, el("time", { text: time(ev.time) }), line));
    }
    const shown = list.querySelectorAll("li[data-seq]");
    if (count >= FEED_KEEP) {
      // A whole page's worth came at once: it replaces what was shown.
      dropped += shown.length;
      list.replaceChildren(batch);
    } else {
      list.append(batch);
      for (let i = 0; i < shown.length + count - FEED_KEEP; i++) {
        shown[i].remove();
        dropped++;
      }
    }
    if (dropped) {
      let note = list.querySelector("li.dropped");
      if (!note) {
        note = el("li", { class: "dropped help" });
        list.prepend(note);
      }
      note.textContent = `${dropped} earlier lines not shown (the command line's \`log\` has them all)`;
    }
    if (atEnd && box) box.scrollTop = box.scrollHeight;
  };
  const add = (ev) => {
    last = ev.seq;
    if (ev.kind === "turn") return; // where a commit's lines begin, for a replay: nothing to show
    pending.push(ev);
    if (pending.length > 2 * FEED_KEEP) dropped += pending.splice(0, FEED_KEEP).length; // a hidden tab draws no frame
    if (!frame) frame = requestAnimationFrame(flush);
  };
  // Every kind but a log line can move the run (a timer, an Agent's reply, a wake): the page reads
  // the run again once a burst is over, so the picture follows.
  const movesTheRun = (kind) => kind !== "log" && kind !== "line";
  (async () => {
    while (!stopped) {
      try {
        await readEvents(`/runs/${encodeURIComponent(id)}/events?after=${last}` + (once ? "&follow=false" : ""), ctrl, () => stopped, (ev) => {
          add(ev);
          // What changes the page (a Gate, an item, the end): read the run again, once the burst is over.
          if (movesTheRun(ev.kind) && !once) {
            clearTimeout(refresh);
            refresh = setTimeout(() => refreshRun(id), 150);
          }
        });
        return; // the stream ends when the run ends
      } catch (e) {
        if (stopped) return;
        say("the feed stopped (" + e.message + "); reading it again");
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  })();
}

// Reads an event stream of serve's (GET /runs/:id/events, GET /runs?follow=true) with fetch, so
// that the token goes in a header (EventSource cannot send one): `onEvent` gets each event's data,
// parsed, until the stream ends or `stopped()`. Reads that the stream has buffered resolve at once,
// without a frame between them: after each 8 ms of work, the page is let draw.
async function readEvents(path, ctrl, stopped, onEvent, headers = {}) {
  const res = await fetch(path, {
    headers: { Authorization: "Bearer " + token(), ...headers },
    signal: ctrl.signal,
    cache: "no-store",
    credentials: "omit",
  });
  if (!res.ok) throw new ApiError(res.status, null);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  let slice = performance.now();
  const breathe = async () => {
    await new Promise((r) => setTimeout(r, 0));
    slice = performance.now();
  };
  for (;;) {
    if (performance.now() - slice > 8) await breathe();
    const { value, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true });
    const blocks = buf.split("\n\n");
    buf = blocks.pop();
    for (let b = 0; b < blocks.length; b++) {
      // A chunk can hold thousands of events: the same 8 ms rule inside it.
      if ((b & 127) === 127 && performance.now() - slice > 8) {
        await breathe();
        if (stopped()) return;
      }
      const data = blocks[b].split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
      if (data) onEvent(JSON.parse(data));
    }
  }
}

// The run page again, keeping the feed that is being followed.
async function refreshRun(id) {
  const shown = location.hash.split("?")[0];
  if (!shown.startsWith("#/runs/") || decodeURIComponent(shown.slice(7)) !== id) return; // the page moved on
  await runPage(id, document.getElementById("feed-lines"));
}

// ---- the open Gates a token may answer ----------------------------------------------------------

async function gatesPage() {
  const gates = await api("GET", "/gates");
  main.replaceChildren(
    el("h1", { text: gates.length ? `Open Gates (${gates.length})` : "No open Gate to answer" }),
    ...gates.map((g) =>
      el(
        "div",
        {},
        el("p", {}, "Run ", el("a", { href: "#/runs/" + encodeURIComponent(g.runId), class: "mono", text: g.runId }), " — " + g.workflow),
        gateSection(g.runId, g, true, () => route()),
      ),
    ),
  );
}

// ---- routing (the hash: nothing of it reaches the server) ---------------------------------------

async function route() {
  shownGen++;
  if (stopFeed) {
    stopFeed();
    stopFeed = null;
  }
  if (stopRuns) {
    stopRuns();
    stopRuns = null;
  }
  if (!token()) return signIn();
  const hash = location.hash || "#/";
  const [path, query] = hash.slice(1).split("?");
  const params = new URLSearchParams(query || "");
  try {
    if (path.startsWith("/runs/")) await runPage(decodeURIComponent(path.slice(6)));
    else if (path === "/gates" || !canRead) await gatesPage();
    else await runsPage(params);
    main.focus();
  } catch (e) {
    if (e.status === 401) return signIn("The token was refused; sign in again.");
    main.replaceChildren(el("h1", { text: "Not shown" }), el("p", { class: "error", role: "alert", text: e.message }));
  }
}

window.addEventListener("hashchange", route);
(async () => {
  if (token()) {
    try {
      await whoAmI();
    } catch (e) {
      sessionStorage.removeItem(TOKEN_KEY);
    }
  }
  route();
})();
