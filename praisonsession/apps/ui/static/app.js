// The session browser's page: reads the JSON API beside it and draws with DOM nodes only.
// Every id and message is user data, so text goes in through textContent, never as HTML.
"use strict";

const PAGE = 50; // messages per history page; sessions per list page
const MEMORY_PAGE = 20; // memories per page
const TOKEN_KEY = "praisonsession-ui-token";
const main = document.getElementById("main");
const crumbs = document.getElementById("crumbs");
let drawing = 0; // the newest navigation: an older one's late answer is dropped

// -- building nodes --------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "text") node.textContent = String(value);
    else if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function link(text, ...parts) {
  return el("a", { href: route(...parts), text });
}

function route(...parts) {
  while (parts.length && (parts[parts.length - 1] === "" || parts[parts.length - 1] == null)) parts.pop();
  return "#/" + parts.map((part) => encodeURIComponent(String(part))).join("/");
}

function when(seconds) {
  if (seconds === null || seconds === undefined) return "never";
  return new Date(seconds * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

function json(value) {
  return JSON.stringify(value, null, 2);
}

function show(...nodes) {
  // a view leaves out what it has not got as null, as el() children do: never the text "null"
  main.replaceChildren(...nodes.filter((node) => node !== null && node !== undefined && node !== false));
}

function setCrumbs(...items) {
  const nodes = [link("users")];
  for (const item of items) {
    if (item) nodes.push(el("span", { class: "sep", text: "›" }), item);
  }
  crumbs.replaceChildren(...nodes);
}

function table(headers, rows, numeric) {
  const head = el("tr", {}, headers.map((h, i) => el("th", { class: numeric && numeric[i] ? "num" : null, text: h })));
  const body = rows.map((cells) =>
    el("tr", {}, cells.map((cell, i) =>
      el("td", { class: numeric && numeric[i] ? "num" : null }, cell instanceof Node ? cell : String(cell)))));
  return el("table", {}, headers.some(Boolean) ? el("thead", {}, head) : null, el("tbody", {}, body));
}

// -- the API ---------------------------------------------------------------------------------

class AuthNeeded extends Error {}

async function api(path, params) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params || {})) {
    if (value !== undefined && value !== null && value !== "") query.set(name, String(value));
  }
  const headers = { Accept: "application/json" };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = "Bearer " + token;
  const answer = await fetch("api/" + path + "?" + query.toString(), { headers });
  let body = null;
  try { body = await answer.json(); } catch (e) { body = null; }
  if (answer.status === 401) throw new AuthNeeded(body && body.detail ? body.detail : "Token needed");
  if (!answer.ok) throw new Error(body && body.detail ? body.detail : "HTTP " + answer.status);
  return body;
}

function askToken(message) {
  const input = el("input", { type: "password", id: "token", placeholder: "token", autocomplete: "off" });
  const form = el("form", {
    class: "card",
    onsubmit: (event) => {
      event.preventDefault();
      sessionStorage.setItem(TOKEN_KEY, input.value.trim());
      draw();
    },
  }, el("p", { text: message }), input, " ", el("button", { type: "submit", text: "Open" }));
  show(el("h1", { text: "Token needed" }), form);
}

// -- paging by cursor ------------------------------------------------------------------------
// Sessions and memories page forward by cursor (`after`, answered with `next`). Each list
// keeps, for this tab, the cursors its pages were reached by, so "previous" opens exactly the
// page before; a page opened by its address alone finds it by paging from the first.

const TRAIL_KEY = "praisonsession-ui-trail:";

function readTrail(list) {
  try {
    const trail = JSON.parse(sessionStorage.getItem(TRAIL_KEY + list) || "[]");
    return Array.isArray(trail) ? trail : [];
  } catch (e) {
    return [];
  }
}

function saveTrail(list, trail) {
  sessionStorage.setItem(TRAIL_KEY + list, JSON.stringify(trail));
}

// Notes that the page reached by `after` ("" for the first) is followed by `next`. Returns
// the cursor of the page before: null on the first page, undefined when it is not known.
function notePage(list, after, next) {
  let trail = readTrail(list);
  let at = after ? trail.indexOf(after) : 0;
  if (!after) trail = [""];
  if (at === -1) return undefined;
  trail = trail.slice(0, at + 1);
  if (next) trail.push(next);
  saveTrail(list, trail);
  return at === 0 ? null : trail[at - 1];
}

// The cursor of the page before the one `after` opens, found by paging from the first.
async function findPrevious(list, after, fetchPage) {
  const trail = [""];
  let cursor = "";
  for (let step = 0; step < 1000; step++) {
    const page = await fetchPage(cursor);
    if (!page.next) break;
    if (page.next === after) {
      saveTrail(list, trail.concat([after]));
      return cursor;
    }
    cursor = page.next;
    trail.push(cursor);
  }
  return ""; // the list changed meanwhile: the first page is the best "before"
}

function pager(ids, list, after, next, previous, fetchPage, open) {
  const back = async () => {
    open(previous !== undefined ? previous || "" : await findPrevious(list, after, fetchPage));
  };
  return el("div", { class: "toolbar pager" },
    after ? el("button", { id: ids + "first-page", onclick: () => open(""), text: "« first" }) : null,
    after ? el("button", { id: ids + "prev-page", onclick: back, text: "‹ previous" }) : null,
    next ? el("button", { id: ids + "next-page", onclick: () => open(next), text: "next ›" }) : null);
}

// -- views -----------------------------------------------------------------------------------

async function usersView() {
  setCrumbs();
  const me = await api("me");
  if (me.user !== null) { location.hash = route("user", me.user); return null; }
  const { users } = await api("users");
  const items = users.map((user) => el("li", {}, link(user, "user", user)));
  return [
    el("h1", { text: "Users" }),
    users.length ? el("ul", { class: "list", id: "users" }, items) : el("p", { class: "muted", text: "No sessions in this store yet." }),
  ];
}

async function userView(user, search, after) {
  setCrumbs(link(user, "user", user));
  const page = await api("sessions", { user, q: search, after, limit: PAGE });
  const box = el("input", { type: "search", id: "search", placeholder: "search ids and titles", value: search || "" });
  const form = el("form", {
    class: "toolbar",
    onsubmit: (event) => { event.preventDefault(); location.hash = route("user", user, box.value.trim()); },
  }, box, el("button", { type: "submit", text: "Search" }), link("fork tree", "tree", user),
  link("memories", "memories", user));
  const rows = page.sessions.map((s) =>
    el("li", {}, link(s.session_id, "session", user, s.session_id),
      el("span", { class: "title", text: s.title || "" }),
      el("span", { class: "muted", text: (s.forked ? "fork · " : "") + "updated " + when(s.updated_at) })));
  const list = ["sessions", user, search || ""].join("\u001f");
  const previous = notePage(list, after, page.next);
  const fetchPage = (cursor) => api("sessions", { user, q: search, after: cursor, limit: PAGE });
  const open = (cursor) => { location.hash = route("user", user, search || "", cursor); };
  return [
    el("h1", {}, "Sessions of ", el("code", { text: user })),
    form,
    rows.length ? el("ul", { class: "list", id: "sessions" }, rows)
      : el("p", { class: "muted", id: "no-sessions", text: search ? "No session id contains that text." : "No sessions." }),
    pager("", list, after, page.next, previous, fetchPage, open),
  ];
}

async function sessionView(user, id) {
  setCrumbs(link(user, "user", user), link(id, "session", user, id));
  const d = await api("session", { user, id });
  const info = d.session;
  const facts = [
    ["user", info.user_id], ["created", when(info.created_at)], ["updated", when(info.updated_at)],
    ["expires", when(info.expires_at)], ["version", info.version],
    ["parent", d.parent ? link(d.parent.session_id, "session", d.parent.user_id, d.parent.session_id) : "none"],
    ["children", d.children.length ? el("span", {}, d.children.map((c, i) => [i ? ", " : "", link(c, "session", user, c)])) : "none"],
  ];
  const metadata = Object.fromEntries(Object.entries(info.metadata).filter(([k]) => k !== "parent"));
  if (Object.keys(metadata).length) facts.push(["metadata", el("pre", { text: json(metadata) })]);
  const stateKeys = Object.keys(d.state).sort();
  const usageCols = ["turns", "requests", "prompt_tokens", "completion_tokens", "total_tokens"];
  const usageRows = Object.entries(d.usage.agents).map(([name, t]) => [name, ...usageCols.map((c) => t[c])]);
  if (usageRows.length) usageRows.push(["(session)", ...usageCols.map((c) => d.usage.session[c])]);
  const summaries = Object.entries(d.summaries).flatMap(([agent, records]) =>
    records.map((r) => el("div", { class: "card summary" },
      el("div", { class: "muted", text: `${agent} · version ${r.version} · covers messages ${(r.covers || []).join("–")} · ${r.method || ""}` }),
      el("pre", { text: typeof r.content === "string" ? r.content : json(r.content) }))));
  return [
    el("h1", {}, "Session ", el("code", { id: "session-id", text: info.session_id })),
    el("div", { class: "toolbar" }, link("fork tree", "tree", user, id),
      link("short-term memories", "memories", user, id), link(`${user}'s long-term memories`, "memories", user)),
    el("div", { class: "card" }, table(["", ""], facts)),
    el("h2", { text: `Message logs (${d.logs.length})` }),
    d.logs.length ? el("div", { id: "logs" }, table(["log", "messages"],
      d.logs.map((l) => [link(l.log, "log", user, id, l.log, 1), l.messages]), [false, true]))
      : el("p", { class: "muted", text: "No message logs." }),
    el("h2", { text: `State (${stateKeys.length} keys)` }),
    stateKeys.length ? el("div", { id: "state" }, table(["key", "value"], stateKeys.map((k) => [el("code", { text: k }), el("pre", { text: json(d.state[k]) })])))
      : el("p", { class: "muted", text: "No state." }),
    el("h2", { text: `Summaries (${summaries.length})` }),
    el("div", { id: "summaries" }, summaries.length ? summaries : el("p", { class: "muted", text: "No summaries: compaction has not run in this session." })),
    el("h2", { text: "Usage" }),
    el("div", { id: "usage" }, usageRows.length ? table(["agent", ...usageCols], usageRows, [false, true, true, true, true, true])
      : el("p", { class: "muted", text: "No usage recorded." })),
    el("h2", { text: `Snapshots (${d.snapshots.length})` }),
    d.snapshots.length ? el("div", { id: "snapshots" }, table(["snapshot", "label", "taken", "version", "messages"],
      d.snapshots.map((s) => [el("code", { text: s.snapshot_id }), s.label || "", when(s.created_at), s.version, s.messages]),
      [false, false, false, true, true]))
      : el("p", { class: "muted", text: "No snapshots." }),
    el("h2", { text: "Modules" }),
    el("p", { class: d.modules.length ? null : "muted", text: d.modules.join(", ") || "none" }),
  ];
}

function messageNode(message, index) {
  const role = typeof message.role === "string" ? message.role : "?";
  const meta = el("div", { class: "meta" }, el("span", { class: "role", text: role }), "#" + (index + 1),
    message.name ? " · " + message.name : "", message.tool_call_id ? " · answers " + message.tool_call_id : "");
  const content = message.content;
  const body = content === undefined || content === null ? null
    : el("pre", { class: "content", text: typeof content === "string" ? content : json(content) });
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls.map((call) => {
    const fn = (call && call.function) || {};
    let args = fn.arguments;
    if (typeof args === "string") { try { args = json(JSON.parse(args)); } catch (e) { /* shown as sent */ } }
    else args = json(args);
    return el("div", { class: "toolcall" },
      el("div", {}, "tool call ", el("span", { class: "name", text: fn.name || "?" }), el("span", { class: "muted", text: call && call.id ? " · " + call.id : "" })),
      el("pre", { text: args === undefined ? "" : String(args) }));
  }) : [];
  const known = new Set(["role", "content", "name", "tool_calls", "tool_call_id"]);
  const extra = Object.fromEntries(Object.entries(message).filter(([k]) => !known.has(k)));
  return el("div", { class: "message role-" + role.replace(/[^a-z]/g, ""), "data-index": index },
    meta, body, calls, Object.keys(extra).length ? el("pre", { class: "muted", text: json(extra) }) : null);
}

// A framework's log, as the API answers it (framework_views.py): one entry per stored record,
// each a role, an author, a title and parts: text, a tool call, a tool's output, a value, a
// conversation (a LangGraph channel's messages) or why a value could not be decoded.
function shownValue(value) {
  return typeof value === "string" ? value : json(value);
}

function partNode(part) {
  const calls = (part.call_id ? " · " + part.call_id : "");
  switch (part.kind) {
    case "text":
      return el("pre", { class: "content", text: part.text });
    case "function_call":
      return el("div", { class: "toolcall function-call" },
        el("div", {}, el("span", { class: "label", text: "function_call " }), el("span", { class: "name", text: part.name || "?" }),
          el("span", { class: "muted call-id", text: calls })),
        el("div", { class: "muted", text: "arguments" }), el("pre", { class: "arguments", text: shownValue(part.arguments) }));
    case "function_call_output":
      return el("div", { class: "toolcall function-output" },
        el("div", {}, el("span", { class: "label", text: "function_call_output " }), el("span", { class: "name", text: part.name || "" }),
          el("span", { class: "muted call-id", text: calls })),
        el("div", { class: "muted", text: "output" }), el("pre", { class: "output", text: shownValue(part.output) }));
    case "conversation":
      return el("div", { class: "channel conversation", "data-channel": part.label },
        el("div", { class: "label", text: `${part.label} (${part.messages.length} message${part.messages.length === 1 ? "" : "s"})` }),
        part.messages.map((m, i) => entryNode(m, i)));
    case "undecodable":
      return el("div", { class: "channel undecodable", "data-channel": part.label },
        el("div", { class: "label", text: part.label }), el("p", { class: "card error reason", text: "Not decoded: " + part.reason }));
    default:
      return el("div", { class: "channel value", "data-channel": part.label },
        el("div", { class: "label", text: part.label }), el("pre", { class: "value", text: shownValue(part.value) }));
  }
}

function entryNode(entry, index) {
  const role = typeof entry.role === "string" ? entry.role : "?";
  const meta = el("div", { class: "meta" }, el("span", { class: "role", text: role }), "#" + (index + 1),
    entry.author && entry.author !== role ? " · " + entry.author : "", entry.title ? " · " + entry.title : "");
  return el("div", { class: "message entry role-" + role.replace(/[^a-z]/g, ""), "data-index": index },
    meta, (entry.parts || []).map(partNode),
    entry.details ? el("details", {}, el("summary", { class: "muted", text: "details" }), el("pre", { class: "muted", text: json(entry.details) })) : null);
}

async function logView(user, id, log, pageText) {
  const page = Math.max(1, parseInt(pageText, 10) || 1);
  setCrumbs(link(user, "user", user), link(id, "session", user, id), link(log, "log", user, id, log, 1));
  const d = await api("messages", { user, id, log, start: (page - 1) * PAGE, limit: PAGE });
  const pages = Math.max(1, Math.ceil(d.total / PAGE));
  const go = (n) => { location.hash = route("log", user, id, log, Math.min(Math.max(1, n), pages)); };
  const jump = el("input", { type: "number", id: "page-input", min: 1, max: pages, value: page });
  const bar = () => el("div", { class: "toolbar" },
    el("button", { class: "first", disabled: page <= 1, onclick: () => go(1), text: "« first" }),
    el("button", { class: "prev", disabled: page <= 1, onclick: () => go(page - 1), text: "‹ prev" }),
    el("span", { class: "page-info", text: `page ${page} of ${pages} · messages ${d.total ? d.start + 1 : 0}–${d.start + d.messages.length} of ${d.total}` }),
    el("button", { class: "next", disabled: page >= pages, onclick: () => go(page + 1), text: "next ›" }),
    el("button", { class: "last", disabled: page >= pages, onclick: () => go(pages), text: "last »" }));
  const jumper = el("form", { class: "toolbar", onsubmit: (e) => { e.preventDefault(); go(parseInt(jump.value, 10) || 1); } },
    "go to page ", jump, el("button", { type: "submit", text: "go" }));
  return [
    el("h1", {}, "History ", el("code", { text: log })),
    bar(), jumper,
    d.framework ? el("p", { class: "muted", id: "framework", text: `${FRAMEWORKS[d.framework] || d.framework}'s log, shown in its terms.` }) : null,
    d.notice ? el("div", { class: "card error", id: "notice", text: d.notice }) : null,
    el("div", { id: "messages" }, d.messages.map((m, i) => (d.framework ? entryNode : messageNode)(m, d.start + i))),
    d.messages.length ? bar() : el("p", { class: "muted", text: "No messages on this page." }),
  ];
}

async function treeView(user, current) {
  setCrumbs(link(user, "user", user), current ? link(current, "session", user, current) : null, el("span", { text: "fork tree" }));
  const { tree } = await api("tree", { user });
  function branch(node) {
    const label = el("a", { class: "node" + (node.session_id === current ? " current" : ""), href: route("session", user, node.session_id), text: node.session_id });
    return el("li", {}, label, node.children.length ? el("ul", {}, node.children.map(branch)) : null);
  }
  function holds(node) {
    const stack = [node];
    while (stack.length) {
      const next = stack.pop();
      if (next.session_id === current) return true;
      stack.push(...next.children);
    }
    return false;
  }
  // a session's page shows the tree it belongs to; the user's page shows every tree
  const mine = current ? tree.filter(holds) : tree;
  const shown = mine.length ? mine : tree;
  return [
    el("h1", {}, "Fork tree of ", el("code", { text: current && mine.length ? current : user })),
    current ? el("div", { class: "toolbar" }, link(`all of ${user}'s sessions as trees`, "tree", user)) : null,
    shown.length ? el("ul", { class: "tree", id: "tree" }, shown.map(branch)) : el("p", { class: "muted", text: "No sessions." }),
  ];
}

const SHOWN_ELSEWHERE = new Set(["created_at", "updated_at", "memory_type", "user_id", "session_id"]);

function historyTable(changes) {
  if (!changes.length) return el("p", { class: "muted", text: "No recorded changes." });
  return table(["change", "when", "text", "before"], changes.map((c) => [
    c.event || "?", when(c.at), el("pre", { text: c.text === null || c.text === undefined ? "" : c.text }),
    el("pre", { class: "muted", text: c.previous === null || c.previous === undefined ? "" : c.previous }),
  ]));
}

function memoryNode(memory, user, session) {
  const meta = memory.metadata || {};
  const given = Object.fromEntries(Object.entries(meta).filter(([k]) => !SHOWN_ELSEWHERE.has(k)));
  const changes = el("div", { class: "memory-history" });
  let shown = false;
  const toggle = async (event) => {
    const button = event.currentTarget;
    if (shown) { changes.replaceChildren(); shown = false; button.textContent = "history"; return; }
    shown = true;
    button.textContent = "hide history";
    try {
      const { history } = await api("memory_history", { user, memory: memory.id, id: session || undefined });
      if (shown) changes.replaceChildren(historyTable(history));
    } catch (error) {
      changes.replaceChildren(el("div", { class: "card error", text: error.message }));
    }
  };
  const from = !session && meta.session_id
    ? [" · from ", link(meta.session_id, "session", user, meta.session_id)] : [];
  return el("div", { class: "card memory", "data-id": memory.id },
    el("pre", { class: "memory-text", text: memory.text }),
    el("div", { class: "muted meta" }, "id ", el("code", { text: memory.id }),
      " · created " + when(meta.created_at), " · updated " + when(meta.updated_at), from),
    Object.keys(given).length ? el("pre", { class: "muted memory-metadata", text: json(given) }) : null,
    el("button", { class: "history", type: "button", onclick: toggle, text: "history" }),
    changes);
}

async function memoriesView(user, session, after) {
  session = session || "";
  setCrumbs(link(user, "user", user), session ? link(session, "session", user, session) : null,
    el("span", { text: session ? "short-term memories" : "memories" }));
  const fetchPage = (cursor) =>
    api("memories", { user, id: session, after: cursor, limit: MEMORY_PAGE });
  const page = await fetchPage(after);
  const list = ["memories", user, session].join("\u001f");
  const previous = notePage(list, after, page.next);
  const open = (cursor) => { location.hash = route("memories", user, session, cursor); };
  const about = session
    ? "The session's own notes (add_memory(..., memory_type=\"short\")), kept in its store."
    : `What ${user} asked to remember, from any session (add_memory(...))` +
      (page.location ? `, read from ${page.location}.` : ".");
  return [
    session ? el("h1", {}, "Short-term memories of ", el("code", { text: session }))
      : el("h1", {}, "Long-term memories of ", el("code", { text: user })),
    el("p", { class: "muted", text: about }),
    el("div", { class: "toolbar" }, session ? link(`${user}'s long-term memories`, "memories", user)
      : link(`${user}'s sessions`, "user", user)),
    page.memories.length
      ? el("div", { id: "memories" }, page.memories.map((m) => memoryNode(m, user, session)))
      : el("p", { class: "muted", id: "no-memories", text: after ? "No more memories." : "No memories." }),
    pager("memories-", list, after, page.next, previous, fetchPage, open),
  ];
}

// -- routing ---------------------------------------------------------------------------------

const FRAMEWORKS = { langgraph: "LangGraph", adk: "Google ADK", "openai-agents": "The OpenAI Agents SDK" };

const VIEWS = {
  "": usersView, user: userView, session: sessionView, log: logView, tree: treeView, memories: memoriesView,
};

async function draw() {
  const mine = ++drawing;
  const parts = location.hash.replace(/^#\/?/, "").split("/").map((p) => decodeURIComponent(p));
  const view = VIEWS[parts[0]] || usersView;
  try {
    const nodes = await view(...parts.slice(1));
    if (mine !== drawing || nodes === null) return;
    show(...nodes);
    document.title = "praisonsession · " + (parts.slice(1, 3).filter(Boolean).join(" · ") || "users");
    window.scrollTo(0, 0);
  } catch (error) {
    if (mine !== drawing) return;
    if (error instanceof AuthNeeded) askToken(error.message);
    else show(el("div", { class: "card error", id: "error", text: error.message }));
  }
}

window.addEventListener("hashchange", draw);
draw();
