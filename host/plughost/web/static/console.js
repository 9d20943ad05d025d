// plughost operator console: plain JavaScript, no build step, no downloads.
// Live state arrives as server-sent events from /api/stream; actions are POSTs. Every request
// but the page itself carries the token, reads included, from this machine too.
"use strict";

const $ = (selector, root = document) => root.querySelector(selector);
const state = { plugins: [], tools: [], feed: [], seen: new Set(), selected: null, toolsTimer: null };
const FEED_KEEP = 2000;

// --- token: from the URL fragment (#token=...), kept for this tab only --------------------
function readToken() {
  const match = location.hash.match(/token=([^&]+)/);
  if (match) {
    sessionStorage.setItem("plughost-token", decodeURIComponent(match[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
  return sessionStorage.getItem("plughost-token") || "";
}
const tokenInput = $("#token");
tokenInput.value = readToken();
tokenInput.addEventListener("change", () => {
  sessionStorage.setItem("plughost-token", tokenInput.value);
  start();  // what was refused without it (or with a wrong one) is read again
});

async function api(path, body) {
  const headers = {};
  if (tokenInput.value) headers.authorization = "Bearer " + tokenInput.value;
  const init = { headers };
  if (body !== undefined) {
    init.method = "POST";
    headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child !== undefined && child !== null) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

const fmt = {
  num: (v, unit = "") => (v === null || v === undefined ? "–" : v + unit),
  ms: (v) => (v === null || v === undefined ? "–" : v < 10 ? v.toFixed(2) + " ms" : Math.round(v) + " ms"),
  mb: (v) => (v ? (v / 1048576).toFixed(1) + " MiB" : "–"),
  uptime: (s) => {
    if (s === null || s === undefined) return "–";
    if (s < 120) return Math.round(s) + " s";
    if (s < 7200) return Math.round(s / 60) + " min";
    if (s < 172800) return (s / 3600).toFixed(1) + " h";
    return (s / 86400).toFixed(1) + " d";
  },
  time: (t) => new Date(t * 1000).toLocaleTimeString(),
};

// --- plugins and runners ---------------------------------------------------------------------
const KNOWN_FIELDS = new Set(["plugin_id", "version", "path", "state", "runner_id", "pid", "tools",
  "error", "enabled", "problems", "runner", "calls", "runners", "where", "members", "sandbox",
  "components", "network", "denied"]);

// Where each runner of a plugin is: "local pid N", or a remote runner's address and credential.
// One line per pool member (replicas, remote runners), so a pool shows every member. The pid is
// shown here only, and marked so it can be read alone.
function whereCell(members) {
  if (!members.length) return el("td", { class: "where" }, "–");
  return el("td", { class: "where" }, members.map((m) => {
    const local = /^local pid (\d+)$/.exec(m.where);
    return el("div", {
      class: `member ${m.remote ? "remote" : "local"}${m.healthy ? "" : " unhealthy"}`,
      "data-runner": m.runner_id,
      "data-state": m.state || "",
      title: `runner ${m.runner_id}: ${m.state || "unknown"}, ${m.inflight} calls in flight\n${m.where}`,
    }, local ? ["local pid ", el("span", { class: "pid" }, local[1])] : m.where);
  }));
}

function poolDetails(members) {
  const parts = members.map((m) => `${m.runner_id} at ${m.where} (${m.state || "unknown"}, ${m.inflight} in flight)`);
  return el("div", { class: "details pool" }, `pool of ${members.length} runners: ${parts.join("; ")}`);
}

// The latency line is broken wherever a bucket had no call: a line drawn across idle time
// would show a latency nobody measured.
function latencySegments(series, x, y) {
  const segments = [];
  let current = [];
  series.forEach((p, i) => {
    if (p.p50_ms === null || p.p50_ms === undefined || !p.calls) {
      if (current.length) segments.push(current);
      current = [];
    } else current.push(`${x(i).toFixed(1)},${y(p.p50_ms).toFixed(1)}`);
  });
  if (current.length) segments.push(current);
  return segments;
}

function chart(calls) {
  const series = (calls && calls.series) || [];
  const width = 180, height = 32, n = Math.max(series.length, 1), step = width / n;
  const top = Math.max(1, ...series.map((p) => p.calls));
  const slowest = Math.max(1, ...series.map((p) => p.p50_ms || 0));
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  const shape = (tag, attrs) => {
    const node = document.createElementNS(ns, tag);
    for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
    svg.append(node);
    return node;
  };
  svg.setAttribute("class", "chart");
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  const title = document.createElementNS(ns, "title");
  title.textContent = `calls per ${calls ? calls.bucket_seconds : 5} s (bars, red: failed), p50 latency (line, broken where idle); peak ${top} calls, ${slowest} ms`;
  svg.append(title);
  shape("line", { class: "axis", x1: 0, x2: width, y1: height - 0.5, y2: height - 0.5 });
  series.forEach((p, i) => {
    const h = (p.calls / top) * (height - 2);
    if (h <= 0) return;
    const x = (i * step).toFixed(1), w = Math.max(step - 0.5, 0.5).toFixed(1);
    shape("rect", { class: "calls", x, y: (height - h).toFixed(1), width: w, height: h.toFixed(1) });
    if (p.errors) {
      const e = Math.max((p.errors / top) * (height - 2), 1);
      shape("rect", { class: "errors", x, y: (height - e).toFixed(1), width: w, height: e.toFixed(1) });
    }
  });
  const x = (i) => i * step + step / 2;
  const y = (ms) => height - 1 - (ms / slowest) * (height - 4);
  for (const points of latencySegments(series, x, y)) {
    if (points.length === 1) {
      const [cx, cy] = points[0].split(",");
      shape("circle", { class: "latency-dot", cx, cy, r: 1.2 });
    } else shape("polyline", { class: "latency", points: points.join(" ") });
  }
  return svg;
}

function pluginAction(id, action, body) {
  return api(`/api/plugins/${encodeURIComponent(id)}/${action}`, body || {})
    .then((answer) => note(`${action} ${id}: ${JSON.stringify(answer)}`))
    .catch((error) => note(`${action} ${id} refused: ${error.message}`, true));
}

const STATE_TONE = { loaded: "ok", starting: "busy", reloading: "busy", draining: "busy", failed: "bad", "gave up": "bad", lost: "bad" };

function statePill(p) {
  const tone = p.enabled === false ? "off" : STATE_TONE[p.state] || "busy";
  const name = p.enabled === false ? p.state + " (disabled)" : p.state;
  const why = (p.runner && p.runner.last_error) || p.error || "";
  return el("td", {}, el("span", { class: `state pill ${tone} state-${p.state.replace(/\s+/g, "-")}`, title: why || null }, name));
}

function restartsCell(runner) {
  const total = runner.restarts, recent = runner.restarts_recent || 0;
  if (total === undefined || total === null) return el("td", { class: "num" }, el("span", { class: "restarts" }, "–"));
  const span = runner.restart_window_s || 0;
  const last = runner.last_restart ? `; last at ${fmt.time(runner.last_restart)}` : "";
  return el("td", { class: "num", title: `${total} since the host started, ${recent} in the last ${span} s${last}` },
    el("span", { class: "restarts", "data-recent": recent }, String(total)),
    recent ? el("span", { class: "recent" }, `${recent} in ${span} s`) : null);
}

// The protections a plugin's runner is confined by, against the host's full set: a count, with
// what is missing named, and the whole list on hover or click.
function sandboxBadge(protections, host) {
  const full = host && host.enabled ? host.active : [];
  const lacking = full.filter((name) => !protections.includes(name));
  const tone = !protections.length ? "bad" : lacking.length ? "warn" : "ok";
  const label = !protections.length ? "no sandbox"
    : full.length ? `sandbox ${full.length - lacking.length}/${full.length}` : `sandbox ${protections.length}`;
  const list = protections.join(", ") || "none";
  return el("details", { class: "sandbox inline" },
    el("summary", { class: `chip ${tone}`, title: `protections: ${list}` + (lacking.length ? `\nmissing versus the host: ${lacking.join(", ")}` : "") },
      label, lacking.length ? ` · missing ${lacking.join(", ")}` : ""),
    el("span", { class: "list" }, list));
}

function countChip(label, items) {
  return el("span", { class: "chip", title: items.join("\n") }, `${items.length} ${label}`);
}

function detailsRow(p, members) {
  const runner = p.runner || {};
  const extra = [];
  for (const problem of p.problems || []) {
    const where = problem.line ? `${problem.file}:${problem.line}` : problem.file;
    extra.push(el("div", { class: "problem" }, `${problem.stage}: ${where} — ${problem.reason}`));
  }
  const line = [];
  if (runner.runner_id) {
    const shared = (runner.plugins || []).length > 1 ? `, shared by ${runner.plugins.join(", ")}` : "";
    line.push(el("span", { class: "runner-id" }, `${runner.runner_id} (${runner.state}${shared})`));
  }
  line.push(el("span", { class: "tools-list" }, `tools: ${(p.tools || []).join(", ") || "none"}`));
  if (p.state === "loaded" || (p.sandbox || []).length) line.push(sandboxBadge(p.sandbox || [], state.hostSandbox));
  if ((p.components || []).length) line.push(countChip("components", p.components));
  if ((p.network || []).length || p.denied) {
    line.push(el("span", { class: `network${p.denied ? " refused" : ""}` },
      `network: ${(p.network || []).join(", ") || "none"}` + (p.denied ? `; ${p.denied} refused (see network.denied below)` : "")));
  }
  extra.push(el("div", { class: "details line" }, line));
  if (members.length > 1) extra.push(poolDetails(members));
  for (const [key, value] of Object.entries(p)) {
    if (KNOWN_FIELDS.has(key) || value === null || value === "" || (Array.isArray(value) && !value.length)) continue;
    const text = Array.isArray(value) ? value.join(", ") : typeof value === "object" ? JSON.stringify(value) : value;
    extra.push(el("div", { class: "details extra", "data-field": key }, `${key.replace(/_/g, " ")}: ${text}`));
  }
  return el("tr", { class: "extra-row", "data-plugin-details": p.plugin_id }, el("td", { colspan: 13 }, extra));
}

function renderPlugins(plugins) {
  const body = $("#plugins tbody");
  body.replaceChildren();
  for (const p of plugins) {
    const runner = p.runner || {};
    const calls = p.calls || {};
    const members = p.members || [];
    const tone = p.enabled === false ? "off" : STATE_TONE[p.state] || "busy";
    body.append(el("tr", { class: `plugin-row tone-${tone}`, "data-plugin": p.plugin_id },
      el("td", { class: "id", title: `${p.plugin_id}\n${p.path}` }, el("strong", {}, p.plugin_id)),
      el("td", { class: "nowrap" }, p.version || "–"),
      statePill(p),
      whereCell(members),
      el("td", { class: "uptime num" }, fmt.uptime(runner.uptime_s)),
      restartsCell(runner),
      el("td", { class: "memory num" }, fmt.mb(runner.memory_bytes)),
      el("td", { class: "calls num" }, fmt.num(calls.calls_per_minute)),
      el("td", { class: `errors num${calls.errors_per_minute ? " bad" : ""}` }, fmt.num(calls.errors_per_minute)),
      el("td", { class: "p50 num" }, fmt.ms(calls.p50_ms)),
      el("td", { class: "p99 num" }, fmt.ms(calls.p99_ms)),
      el("td", {}, chart(calls)),
      el("td", { class: "actions" },
        el("button", { class: "reload", onclick: () => pluginAction(p.plugin_id, "reload") }, "reload"),
        p.enabled === false
          ? el("button", { class: "enable", onclick: () => pluginAction(p.plugin_id, "enable") }, "enable")
          : el("button", { class: "disable", onclick: () => pluginAction(p.plugin_id, "disable") }, "disable"))));
    body.append(detailsRow(p, members));
  }
}

// The strip at the top: what an operator wants at a glance, each figure coloured by how it is.
function tile(name, value, tone, title, key) {
  return el("div", { class: `tile ${tone || ""}`, title, "data-tile": key }, el("div", { class: "value" }, value), el("div", { class: "name" }, name));
}

function renderStrip(data) {
  const plugins = data.plugins;
  const loaded = plugins.filter((p) => p.state === "loaded" && p.enabled !== false).length;
  const troubled = plugins.filter((p) => ["failed", "gave up", "lost"].includes(p.state));
  const sum = (pick) => plugins.reduce((total, p) => total + (pick(p) || 0), 0);
  const calls = sum((p) => p.calls && p.calls.calls_per_minute);
  const errors = sum((p) => p.calls && p.calls.errors_per_minute);
  const restarts = sum((p) => p.runner && p.runner.restarts);
  const recent = sum((p) => p.runner && p.runner.restarts_recent);
  const slowest = Math.max(0, ...plugins.map((p) => (p.calls && p.calls.p99_ms) || 0));
  const tiles = [
    tile("need attention", String(troubled.length), troubled.length ? "bad" : "ok",
      troubled.map((p) => `${p.plugin_id}: ${p.state}`).join("\n") || "nothing failed", "attention"),
    tile("plugins loaded", `${loaded} / ${plugins.length}`, loaded === plugins.length ? "ok" : "warn", null, "loaded"),
    tile("calls / min", String(calls), "", "every plugin, the last 60 s", "calls"),
    tile("errors / min", String(errors), errors ? "bad" : "ok", "failed calls, the last 60 s", "errors"),
    tile("slowest p99", slowest ? fmt.ms(slowest) : "–", "", "the highest p99 latency of any plugin, the last 60 s", "p99"),
    tile("restarts since start", recent ? `${restarts} · ${recent} recent` : String(restarts), recent ? "bad" : restarts ? "warn" : "ok",
      "runner restarts since the host started (recent: within the restart window)", "restarts"),
  ];
  const sandbox = data.sandbox;
  if (sandbox) {
    const missing = Object.entries(sandbox.missing || {});
    tiles.push(tile("sandbox protections", sandbox.enabled ? `${sandbox.active.length} / ${sandbox.active.length + missing.length}` : "off",
      !sandbox.enabled ? "bad" : missing.length ? "warn" : "ok",
      `active: ${sandbox.active.join(", ") || "none"}` + missing.map(([name, why]) => `\nnot active: ${name} (${why})`).join(""), "sandbox"));
  }
  const mcp = data.mcp || [];
  if (mcp.length) {
    const up = mcp.filter((s) => s.state === "connected").length;
    tiles.push(tile("MCP servers up", `${up} / ${mcp.length}`, up === mcp.length ? "ok" : "bad", null, "mcp"));
  }
  $("#strip").replaceChildren(...tiles);
}

function renderMcp(servers) {
  const box = $("#mcp");
  box.replaceChildren();
  if (!servers.length) return;
  box.append(el("h3", {}, "MCP servers"));
  for (const s of servers) {
    box.append(el("div", { "data-mcp": s.name },
      el("strong", {}, s.name), ` ${s.transport}: `,
      el("span", { class: "state state-" + (s.state === "connected" ? "loaded" : "failed") }, s.state),
      ` — ${s.tools} tools`, s.reason ? ` — ${s.reason}` : "",
      s.transport === "stdio"
        ? el("div", { class: "details network" },
            `sandbox: ${(s.sandbox || []).join(", ") || "none yet"}; network: ${(s.network || []).join(", ") || "none"}` +
            (s.denied ? `; ${s.denied} connection(s) refused` : ""))
        : "",
      ...(s.refused || []).map((why) => el("div", { class: "details refused" }, why))));
  }
}

function renderOverview(data) {
  state.plugins = data.plugins;
  state.hostSandbox = data.sandbox;
  const loaded = data.plugins.filter((p) => p.state === "loaded").length;
  $("#summary").textContent = `version ${data.version} · ${loaded} of ${data.plugins.length} plugins loaded · up ${fmt.uptime(data.time - data.started)}`;
  renderStrip(data);
  renderPlugins(data.plugins);
  renderMcp(data.mcp || []);
  const select = $("#feed-plugin");
  const known = new Set([...select.options].map((o) => o.value));
  for (const p of data.plugins) if (!known.has(p.plugin_id)) select.append(el("option", { value: p.plugin_id }, p.plugin_id));
}

// --- tools ---------------------------------------------------------------------------------------
async function loadTools() {
  const session = $("#session").value.trim();
  const data = await api("/api/tools?session=" + encodeURIComponent(session));
  state.tools = data.tools;
  state.components = data.components || [];
  renderTools();
}

function scheduleTools() {
  clearTimeout(state.toolsTimer);
  state.toolsTimer = setTimeout(() => loadTools().catch((e) => note(e.message, true)), 200);
}

function setToolEnabled(tool, enabled, session) {
  const body = { full_name: tool.full_name, enabled };
  if (session) body.session_id = session;
  api("/api/tools/enabled", body).then(scheduleTools).catch((e) => { note(e.message, true); scheduleTools(); });
}

function renderTools() {
  const filter = $("#tool-filter").value.trim().toLowerCase();
  const session = $("#session").value.trim();
  const body = $("#tools tbody");
  body.replaceChildren();
  for (const t of state.tools) {
    if (filter && !(t.name + " " + t.description + " " + (t.plugin_id || "")).toLowerCase().includes(filter)) continue;
    const switchable = Boolean(t.full_name);
    const global = el("input", { type: "checkbox", class: "enabled", title: switchable ? "enabled everywhere" : "only plugin tools can be switched here" });
    global.checked = t.enabled;
    global.disabled = !switchable;
    global.addEventListener("change", () => setToolEnabled(t, global.checked, ""));
    let inSession = "–";
    if (t.enabled_in_session !== null && t.enabled_in_session !== undefined) {
      inSession = el("input", { type: "checkbox", class: "in-session", title: `enabled in session ${session}` });
      inSession.checked = t.enabled_in_session;
      inSession.disabled = !switchable;
      inSession.addEventListener("change", () => setToolEnabled(t, inSession.checked, session));
    }
    body.append(el("tr", { "data-tool": t.name, title: t.description },
      el("td", { class: "mono" }, el("details", { class: "schema" },
        el("summary", {}, t.name),
        el("div", { class: "details" }, t.description),
        el("pre", {}, JSON.stringify(t.parameters || {}, null, 2)))),
      el("td", { class: "nowrap" }, t.component_type || "tool"),
      el("td", { class: "clip", title: t.plugin_id || `${t.provider} (${t.provider_type})` }, t.plugin_id || `${t.provider} (${t.provider_type})`),
      el("td", {}, t.visibility),
      el("td", {}, global),
      el("td", {}, inSession),
      el("td", {}, el("button", { class: "try", onclick: () => selectTool(t) }, "try"))));
  }
  for (const c of state.components || []) {
    if (filter && !(c.name + " " + c.description + " " + c.plugin_id).toLowerCase().includes(filter)) continue;
    const box = el("input", { type: "checkbox", class: "enabled", title: "enabled everywhere" });
    box.checked = c.enabled;
    box.addEventListener("change", () =>
      api("/api/components/enabled", { key: c.key, enabled: box.checked }).then(scheduleTools).catch((e) => { note(e.message, true); scheduleTools(); }));
    body.append(el("tr", { "data-component": c.key, title: c.description },
      el("td", { class: "mono" }, c.name),
      el("td", { class: "nowrap" }, c.kind.toLowerCase().replace(/_/g, " ")),
      el("td", { class: "clip", title: c.plugin_id }, c.plugin_id),
      el("td", {}, "–"),
      el("td", {}, box),
      el("td", {}, "–"),
      el("td", {}, "")));
  }
}

// --- try a tool: a form from the JSON Schema --------------------------------------------------------
function fieldFor(name, schema, required) {
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  let input;
  if (Array.isArray(schema.enum)) {
    input = el("select", { name }, el("option", { value: "" }, ""), schema.enum.map((v) => el("option", { value: JSON.stringify(v) }, String(v))));
    input.dataset.kind = "enum";
  } else if (type === "boolean") {
    input = el("select", { name }, el("option", { value: "" }, ""), el("option", { value: "true" }, "true"), el("option", { value: "false" }, "false"));
    input.dataset.kind = "boolean";
  } else if (type === "integer" || type === "number") {
    input = el("input", { name, type: "number", step: type === "integer" ? "1" : "any", placeholder: schema.default !== undefined ? String(schema.default) : "" });
    input.dataset.kind = "number";
  } else if (type === "object" || type === "array" || !type) {
    input = el("textarea", { name, rows: 3, placeholder: type === "array" ? "[...] as JSON" : "{...} as JSON" });
    input.dataset.kind = "json";
  } else {
    input = el("input", { name, type: "text", placeholder: schema.default !== undefined ? String(schema.default) : "" });
    input.dataset.kind = "string";
  }
  return el("div", { class: "field" },
    el("label", {}, name, required ? " *" : "", el("span", { class: "hint" }, ` ${type || "any"}`)),
    input,
    schema.description ? el("div", { class: "hint" }, schema.description) : null);
}

function selectTool(tool) {
  state.selected = tool;
  const schema = tool.parameters || {};
  const required = new Set(schema.required || []);
  $("#try-name").textContent = tool.name;
  $("#try-hint").textContent = tool.description || "";
  $("#try-fields").replaceChildren(...Object.entries(schema.properties || {}).map(([name, prop]) => fieldFor(name, prop, required.has(name))));
  $("#try-schema").textContent = JSON.stringify(schema, null, 2);
  $("#try-raw").value = "";
  $("#try-result").replaceChildren();
  $("#try-form").hidden = false;
  showForm();
}

// The form may be far from the button that opened it: bring it into view, put the cursor in its
// first field and mark it for a moment, so the eye finds it.
function showForm() {
  const panel = $("#try-panel");
  panel.scrollIntoView({ block: "start" });
  const first = $("#try-fields").querySelector("[name]") || $("#try-form button[type=submit]");
  first.focus({ preventScroll: true });
  panel.classList.remove("flash");
  void panel.offsetWidth;  // restart the animation when the same panel is flashed again
  panel.classList.add("flash");
}

function formArguments() {
  const raw = $("#try-raw").value.trim();
  if (raw) return raw; // sent as text, parsed by the registry exactly like a model's arguments
  const args = {};
  for (const input of $("#try-fields").querySelectorAll("[name]")) {
    const text = input.value.trim();
    if (text === "") continue;
    const kind = input.dataset.kind;
    if (kind === "number") args[input.name] = Number.isNaN(Number(text)) ? text : Number(text);
    else if (kind === "boolean") args[input.name] = text === "true";
    else if (kind === "enum") args[input.name] = JSON.parse(text);
    else if (kind === "json") { try { args[input.name] = JSON.parse(text); } catch { args[input.name] = text; } }
    else args[input.name] = text;
  }
  return args;
}

function shortenData(value) {
  return JSON.stringify(value, (key, v) => (typeof v === "string" && v.length > 200 && /^(data:|[A-Za-z0-9+/=]{200,}$)/.test(v) ? v.slice(0, 60) + `… (${v.length} chars)` : v), 2);
}

// A failure says why at once: its code and its message (what the model would read), first.
function outcome(r) {
  if (r.success) return el("div", { class: "outcome-line" }, el("strong", { class: "outcome" }, "success"));
  return el("div", { class: "outcome-line" },
    el("strong", { class: "outcome" }, "failed"), " ",
    el("code", { class: "error-code" }, r.error_code || "error"),
    el("pre", { class: "error-message" }, r.error_message || "(the tool gave no message)"));
}

function renderResult(answer) {
  const r = answer.result;
  const box = el("div", { class: "result " + (r.success ? "ok" : "failed"), "data-call": answer.call_id },
    outcome(r),
    r.content ? el("pre", { class: "content" }, r.content) : null,
    r.structured_content !== null && r.structured_content !== undefined
      ? el("details", { open: "" }, el("summary", {}, "structured content"), el("pre", { class: "structured" }, JSON.stringify(r.structured_content, null, 2)))
      : null);
  for (const item of answer.items) {
    const label = el("div", { class: "details" }, `${item.type} ${item.name || ""} ${item.mime_type || ""} ${item.description || ""}`);
    if (item.type === "image" && item.data_url) box.append(label, el("img", { src: item.data_url, alt: item.description || item.name || "image" }));
    else if (item.type === "audio" && item.data_url) box.append(label, el("audio", { controls: "", src: item.data_url }));
    else if (item.text) box.append(label, el("pre", {}, item.text));
    else if (item.uri) box.append(label, el("a", { href: item.uri, rel: "noreferrer", target: "_blank" }, item.uri));
    else box.append(label);
  }
  box.append(
    el("details", { class: "history" }, el("summary", {}, "history messages (OpenAI)"), el("pre", {}, shortenData(answer.history.openai))),
    el("details", { class: "history" }, el("summary", {}, "history messages (Anthropic)"), el("pre", {}, shortenData(answer.history.anthropic))));
  $("#try-result").replaceChildren(box);
}

$("#try-form").addEventListener("submit", (event) => {
  event.preventDefault();
  if (!state.selected) return;
  const body = { tool: state.selected.name, arguments: formArguments() };
  const session = $("#session").value.trim();
  if (session) body.session_id = session;
  $("#try-result").replaceChildren(el("div", { class: "muted" }, "calling…"));
  api("/api/call", body).then(renderResult).catch((e) => $("#try-result").replaceChildren(
    el("div", { class: "result failed" }, el("strong", { class: "outcome" }, "refused"), el("pre", { class: "error-message" }, e.message))));
});

// --- events and logs --------------------------------------------------------------------------------
const LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"];
function passes(entry) {
  const plugin = $("#feed-plugin").value, level = $("#feed-level").value, source = $("#feed-source").value;
  if (plugin && entry.plugin_id !== plugin) return false;
  if (source && entry.source !== source) return false;
  if (level && LEVELS.indexOf(entry.level) < LEVELS.indexOf(level)) return false;
  return true;
}

function feedLine(entry) {
  const where = entry.details && entry.details.file && entry.details.line ? ` (${entry.details.file}:${entry.details.line})` : "";
  return el("li", { class: `${entry.source} ${entry.level}`, "data-kind": entry.kind, "data-plugin": entry.plugin_id || "" },
    el("span", { class: "time" }, fmt.time(entry.time)),
    el("span", { class: "kind" }, entry.kind),
    " ", entry.plugin_id ? `[${entry.plugin_id}] ` : "", entry.message, where,
    grantButton(entry));
}

function grantButton(entry) {
  const details = entry.details || {};
  if (!entry.plugin_id) return "";
  if (entry.kind === "network.denied" && details.grant) {
    return el("button", {
      class: "grant",
      title: `let ${entry.plugin_id} reach ${details.grant} until the host stops (plughost grant keeps it)`,
      onclick: () => pluginAction(entry.plugin_id, "grant", { destination: details.grant }),
    }, `grant ${details.grant}`);
  }
  if (entry.kind === "sandbox.denied" && details.grant_path) {
    return el("button", {
      class: "grant",
      title: `let ${entry.plugin_id} write under ${details.grant_path} (reloads it; lasts until the host stops: add it to write_grants to keep it)`,
      onclick: () => pluginAction(entry.plugin_id, "grant", { path: details.grant_path }),
    }, `grant writes under ${details.grant_path}`);
  }
  return "";
}

function renderFeed() {
  const list = $("#feed");
  const shown = state.feed.filter(passes).slice(-500);
  list.replaceChildren(...shown.map(feedLine));
  list.scrollTop = list.scrollHeight;
  $("#feed-count").textContent = `${shown.length} shown of ${state.feed.length} kept`;
}

function addFeed(entry) {
  if (entry.seq && state.seen.has(entry.seq)) return;
  if (entry.seq) state.seen.add(entry.seq);
  state.feed.push(entry);
  if (state.feed.length > FEED_KEEP) state.feed.splice(0, state.feed.length - FEED_KEEP);
  if (passes(entry)) {
    const list = $("#feed");
    const atBottom = list.scrollTop + list.clientHeight >= list.scrollHeight - 4;
    list.append(feedLine(entry));
    while (list.children.length > 500) list.firstChild.remove();
    if (atBottom) list.scrollTop = list.scrollHeight;
  }
  if (/^(plugin|reload|runner)\./.test(entry.kind)) scheduleTools();
}

function note(message, bad = false) {
  addFeed({ seq: 0, time: Date.now() / 1000, source: "event", level: bad ? "ERROR" : "INFO", kind: "console", message, plugin_id: null, details: {} });
}

// --- live stream ------------------------------------------------------------------------------------
let source = null;

function connect() {
  if (source) source.close();
  const query = tokenInput.value ? "?token=" + encodeURIComponent(tokenInput.value) : "";
  source = new EventSource("/api/stream" + query);
  const live = $("#live");
  source.addEventListener("open", () => { live.textContent = "live"; live.className = "badge on"; });
  source.addEventListener("error", () => {
    // A refused stream (no token, a wrong one, too many open) is closed for good by the browser.
    const closed = source.readyState === EventSource.CLOSED;
    live.textContent = closed ? "offline" : "reconnecting";
    live.className = "badge off";
  });
  source.addEventListener("overview", (event) => renderOverview(JSON.parse(event.data)));
  source.addEventListener("feed", (event) => addFeed(JSON.parse(event.data)));
}

for (const id of ["#feed-plugin", "#feed-level", "#feed-source"]) $(id).addEventListener("change", renderFeed);
$("#tool-filter").addEventListener("input", renderTools);
$("#session").addEventListener("change", scheduleTools);

// Live first, then the history: entries that arrive on both are told apart by their seq.
function start() {
  if (!tokenInput.value) {
    note("this console needs its token: open the address plughost serve printed (…/#token=…), or paste the token above", true);
    return;
  }
  connect();
  loadTools().catch((e) => note(e.message, true));
  api("/api/feed?limit=500")
    .then((feed) => {
      const fresh = feed.entries.filter((e) => !state.seen.has(e.seq));
      fresh.forEach((e) => state.seen.add(e.seq));
      state.feed = [...fresh, ...state.feed].sort((a, b) => (a.seq || Infinity) - (b.seq || Infinity));
      renderFeed();
    })
    .catch((e) => note(e.message, true));
}
start();
