// The claims page: reads the claims API with the session cookie and
// follows GET /v1/events. It never writes.
"use strict";

const state = { rows: new Map(), frees: [], lastSweep: null, health: null, after: "" };

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith("data-") || k === "href" || k === "id" || k === "class") e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const k of kids) e.append(k instanceof Node ? k : String(k ?? ""));
  return e;
}

async function getJSON(path) {
  const r = await fetch(path, { credentials: "same-origin", headers: { Accept: "application/json" } });
  if (r.status === 401) { location.assign("/ui/"); throw new Error("signed out"); }
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(path + ": " + r.status + " " + (body.error || ""));
  return body;
}

function age(t) {
  if (!t) return "";
  const s = Math.max(0, Math.round((Date.now() - new Date(t).getTime()) / 1000));
  if (s < 120) return s + " s ago";
  if (s < 7200) return Math.round(s / 60) + " min ago";
  if (s < 172800) return Math.round(s / 3600) + " h ago";
  return Math.round(s / 86400) + " d ago";
}

const key = (repo, issue) => repo + "#" + issue;

function lastDecision(v) {
  const f = v.freed || v.would_free;
  if (!f) return null;
  return { word: v.freed ? "free" : "would_free", rule: f.rule, reason: f.evidence, at: f.at };
}

async function loadRows() {
  const rows = new Map();
  let cursor = "";
  do {
    const page = await getJSON("/v1/claims?limit=1000" + (cursor ? "&cursor=" + encodeURIComponent(cursor) : ""));
    for (const v of page.claims) rows.set(key(v.repo, v.issue), v);
    cursor = page.next_cursor;
  } while (cursor);
  state.rows = rows;
}

async function loadAudit() {
  const a = await getJSON("/v1/audit?since=24h&limit=1000");
  state.frees = a.entries.filter((e) => e.decision === "free");
  const sweeps = a.entries.filter((e) => e.source && e.source.kind === "sweep");
  state.lastSweep = sweeps.length ? sweeps[sweeps.length - 1].at : null;
}

async function loadHealth() {
  try {
    const r = await fetch("/readyz", { credentials: "same-origin" });
    state.health = await r.json();
  } catch (e) {
    state.health = { status: "unreachable" };
  }
}

function countBy(items, f) {
  const m = new Map();
  for (const i of items) { const k = f(i); if (k) m.set(k, (m.get(k) || 0) + 1); }
  return [...m.entries()].map(([k, n]) => k + " " + n).join(", ") || "none";
}

function overview() {
  const rows = [...state.rows.values()];
  const held = rows.filter((v) => v.live);
  const files = rows.reduce((n, v) => n + (v.holds_files ? (v.held_paths || []).length : 0), 0);
  const backlog = rows.filter((v) => v.export && !["pr_opened", "has_pr", "refused", "dry_run"].includes(v.export.state));
  const refused = rows.filter((v) => v.export && v.export.refusal);
  const h = state.health || {};
  const failed = h.failed || {};
  const health = (name) => (h.status === "ready" ? "ok" : failed[name] ? failed[name] : h.status === "unreachable" ? "unknown" : "ok");
  const dl = el("dl", { id: "overview" });
  const item = (id, label, value) => { dl.append(el("dt", {}, label), el("dd", { id: id }, value)); };
  item("ov-claims", "claims held", held.length);
  item("ov-files", "files held", files);
  item("ov-frees", "frees in 24 h by rule", countBy(state.frees, (e) => e.rule));
  item("ov-backlog", "export backlog", backlog.length + (backlog.length ? " (" + countBy(backlog, (v) => v.export.state) + ")" : ""));
  item("ov-refusals", "export refusals by reason", countBy(refused, (v) => v.export.refusal));
  item("ov-sweep", "last sweep", state.lastSweep ? age(state.lastSweep) : "none in 24 h");
  item("ov-redis", "Redis", health("redis"));
  item("ov-github", "GitHub", health("github_app"));
  return dl;
}

function filters() {
  const q = new URLSearchParams(location.search);
  const repos = [...new Set([...state.rows.values()].map((v) => v.repo))].sort();
  const repo = el("select", { id: "filter-repo", name: "repo" }, el("option", { value: "" }, "every repository"),
    ...repos.map((r) => el("option", { value: r, selected: q.get("repo") === r }, r)));
  const claim = el("select", { id: "filter-state", name: "state" },
    ...[["", "every claim state"], ["live", "held (live)"], ["free", "freed"], ["would_free", "would free"]]
      .map(([v, t]) => el("option", { value: v, selected: (q.get("state") || "") === v }, t)));
  const onChange = () => {
    const p = new URLSearchParams();
    if (repo.value) p.set("repo", repo.value);
    if (claim.value) p.set("state", claim.value);
    history.replaceState(null, "", "/ui/" + (p.toString() ? "?" + p : ""));
    render();
  };
  repo.addEventListener("change", onChange);
  claim.addEventListener("change", onChange);
  return el("form", { id: "filters" }, repo, " ", claim);
}

function shown(v) {
  const q = new URLSearchParams(location.search);
  if (q.get("repo") && v.repo !== q.get("repo")) return false;
  switch (q.get("state")) {
    case "live": return v.live;
    case "free": return !v.live;
    case "would_free": return v.live && !!v.would_free;
  }
  return true;
}

function rowElement(v) {
  const d = lastDecision(v);
  const prs = v.prs ? [v.prs.open && "open " + v.prs.open, v.prs.merged && "merged " + v.prs.merged,
    v.prs.closed_unmerged && "closed " + v.prs.closed_unmerged].filter(Boolean).join(", ") || "none" : "unread";
  const tr = el("tr", { class: "row" + (v.live ? "" : " freed"), "data-repo": v.repo, "data-issue": v.issue,
    "data-claim": v.claim, "data-live": v.live });
  tr.append(el("td", {}, v.repo),
    el("td", {}, el("a", { href: "/ui/rows/" + v.repo + "/" + v.issue }, "#" + v.issue)),
    el("td", {}, v.claim + (v.live ? "" : " (freed)")), el("td", {}, v.stage),
    el("td", {}, v.holds_files ? (v.held_paths || []).length : 0), el("td", {}, prs),
    el("td", {}, v.export ? v.export.state + (v.export.refusal ? ": " + v.export.refusal : "") : ""),
    el("td", { class: "decision" }, d ? d.word + " · " + d.rule + " · " + (d.reason || "") + " · " + age(d.at) : ""));
  return tr;
}

function table() {
  const head = el("tr", {}, ...["repository", "issue", "claim", "stage", "files held", "PRs of the attempt", "export",
    "last decision"].map((h) => el("th", {}, h)));
  const body = el("tbody", { id: "rows" });
  for (const v of state.rows.values()) if (shown(v)) body.append(rowElement(v));
  return el("table", { id: "claims" }, el("thead", {}, head), body);
}

function render() {
  const main = document.getElementById("main");
  main.replaceChildren(overview(), filters(), table());
}

async function renderRow(repo, issue) {
  const main = document.getElementById("main");
  const d = await getJSON("/v1/repos/" + repo + "/claims/" + issue + "?history=50");
  const hist = el("tbody", {}, ...d.history.map((e) => el("tr", { class: "entry", "data-id": e.id || "" },
    el("td", {}, e.at), el("td", {}, e.action), el("td", {}, e.decision || ""), el("td", {}, e.rule || ""),
    el("td", {}, e.evidence || ""), el("td", {}, e.source ? e.source.kind : ""))));
  main.replaceChildren(
    el("h2", { id: "row-title", "data-repo": d.repo, "data-issue": d.issue, "data-claim": d.claim }, d.repo + "#" + d.issue),
    el("p", {}, el("a", { href: "/ui/" }, "← every claim")),
    el("h3", {}, "Explain"), el("ol", { id: "explain" }, ...d.explain.map((l) => el("li", {}, l))),
    el("h3", {}, "History"),
    el("table", { id: "history" }, el("thead", {}, el("tr", {}, ...["at", "action", "decision", "rule", "evidence", "source"]
      .map((h) => el("th", {}, h)))), hist));
}

function live(onChange) {
  const status = document.getElementById("live");
  const es = new EventSource("/v1/events" + (state.after ? "?after=" + encodeURIComponent(state.after) : ""));
  es.addEventListener("open", () => { status.dataset.state = "live"; status.textContent = "live"; });
  es.addEventListener("error", () => { status.dataset.state = "reconnecting"; status.textContent = "reconnecting…"; });
  es.addEventListener("change", (m) => onChange(JSON.parse(m.data)));
  es.addEventListener("reset", () => onChange(null));
}

async function start() {
  const m = location.pathname.match(/^\/ui\/rows\/([^/]+\/[^/]+)\/(\d+)$/);
  // The newest audit id first: the stream then gives every change after
  // the rows were read.
  const newest = await getJSON("/v1/audit?limit=1");
  state.after = newest.entries.length ? newest.entries[newest.entries.length - 1].id : "0-0";
  if (m) {
    await renderRow(m[1], m[2]);
    live((c) => { if (!c || (c.entry.repo === m[1] && String(c.entry.issue) === m[2])) renderRow(m[1], m[2]); });
    return;
  }
  await Promise.all([loadRows(), loadAudit(), loadHealth()]);
  render();
  live(async (c) => {
    if (!c) { await loadRows(); await loadAudit(); render(); return; }
    const k = key(c.entry.repo, c.entry.issue);
    if (c.claim) state.rows.set(k, c.claim); else if (!c.claim_error) state.rows.delete(k);
    if (c.entry.decision === "free") state.frees.push(c.entry);
    if (c.entry.source && c.entry.source.kind === "sweep") state.lastSweep = c.entry.at;
    render();
  });
  setInterval(async () => { await loadHealth(); render(); }, 30000);
}

document.addEventListener("DOMContentLoaded", () => {
  start().catch((e) => {
    const p = el("p", { class: "problem", id: "problem" }, String(e.message || e));
    document.getElementById("main").prepend(p);
  });
});
