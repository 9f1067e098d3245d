import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);

// src/config/parsers.ts
var durationUnits = { ms: 1, s: 1e3, m: 6e4, h: 36e5 };
function parseDuration(text) {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(text.trim());
  if (!match) throw new Error(`"${text}" is not a duration (use e.g. 500ms, 30s, 5m, 1h)`);
  const ms = Number(match[1]) * durationUnits[match[2]];
  if (!Number.isFinite(ms) || ms > 2 ** 31 - 1) throw new Error(`"${text}" is too long`);
  return Math.round(ms);
}
function parseDurationWithin(min, max) {
  return (text) => {
    const ms = parseDuration(text);
    if (ms < min || ms > max) {
      throw new Error(`"${text}" must be between ${formatDuration(min)} and ${formatDuration(max)}`);
    }
    return ms;
  };
}
function formatDuration(ms) {
  if (ms % 36e5 === 0 && ms > 0) return `${ms / 36e5}h`;
  if (ms % 6e4 === 0 && ms > 0) return `${ms / 6e4}m`;
  if (ms % 1e3 === 0 && ms > 0) return `${ms / 1e3}s`;
  return `${ms}ms`;
}
function parseListen(text) {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text.trim());
  if (!match) throw new Error(`"${text}" is not host:port`);
  const port = Number(match[3]);
  if (port > 65535) throw new Error(`port ${port} is out of range`);
  const host = match[1] ?? (match[2] === "" || match[2] === void 0 ? "0.0.0.0" : match[2]);
  return { host, port };
}
function parseBaseUrl(text) {
  let url;
  try {
    url = new URL(text.trim());
  } catch {
    throw new Error(`"${text}" is not a URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Error(`"${text}" must be an http:// or https:// URL`);
  }
  if (url.search || url.hash) throw new Error(`"${text}" must not carry a query or fragment`);
  if (url.username || url.password) throw new Error("credentials do not belong in the URL; use FLAG_SIDECAR_UPSTREAM_KEY");
  url.pathname = url.pathname.replace(/\/+$/, "");
  return url;
}
function parseRedisUrl(text) {
  let url;
  try {
    url = new URL(text.trim());
  } catch {
    throw new Error("is not a URL (expected redis://[user:password@]host:port[/db] or rediss://\u2026)");
  }
  if (url.protocol !== "redis:" && url.protocol !== "rediss:") throw new Error(`must be a redis:// or rediss:// URL, not ${url.protocol}//`);
  if (url.hostname === "") throw new Error("has no host");
  if (url.hash) throw new Error("must not carry a fragment");
  const db = url.pathname.replace(/^\//, "");
  if (db !== "" && !/^\d{1,5}$/.test(db)) throw new Error("the path must be a database number (e.g. /0)");
  return url;
}
function redactRedisUrl(url) {
  const copy = new URL(url.href);
  if (copy.password) copy.password = "***";
  else if (copy.username) copy.username = "***";
  return copy.href;
}
function parseRedisMode(text) {
  const mode = text.trim().toLowerCase();
  if (mode !== "standalone" && mode !== "cluster" && mode !== "sentinel") throw new Error(`"${text}" is not standalone, cluster or sentinel`);
  return mode;
}
function parseRedisPrefix(text) {
  const prefix = text.trim();
  if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(prefix)) throw new Error(`"${prefix.slice(0, 80)}" must be 1\u201364 letters, digits or -_.:`);
  return prefix;
}
function parseProjects(text) {
  const projects = [];
  for (const raw of text.split(",")) {
    const item = raw.trim();
    if (item === "") continue;
    const [idText, token, ...rest] = item.split(":");
    if (rest.length > 0 || idText === void 0 || !/^\d+$/.test(idText) || Number(idText) < 1) {
      throw new Error(`"${item}" is not "id" or "id:phc_token"`);
    }
    if (token !== void 0 && !/^phc_[A-Za-z0-9_-]+$/.test(token)) {
      throw new Error(`"${item}": the project token must look like phc_\u2026`);
    }
    const id = Number(idText);
    if (projects.some((p) => p.id === id)) throw new Error(`project ${id} is listed twice`);
    projects.push({ id, token: token ?? null });
  }
  if (projects.length === 0) throw new Error("lists no project");
  return projects;
}
function parseProjectSelection(text) {
  if (text.trim() === "*") return "all";
  const ids = /* @__PURE__ */ new Set();
  for (const raw of text.split(",")) {
    const item = raw.trim();
    if (item === "") continue;
    if (!/^\d+$/.test(item) || Number(item) < 1) throw new Error(`"${item}" is not a project id (or use * for every project)`);
    ids.add(Number(item));
  }
  return ids;
}
var logLevels = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];
function parseLogLevel(text) {
  const level = text.trim().toLowerCase();
  if (!logLevels.includes(level)) {
    throw new Error(`"${text}" is not one of ${logLevels.join(", ")}`);
  }
  return level;
}
var accessLogModes = ["off", "refusals", "all"];
function parseAccessLogMode(text) {
  const mode = text.trim().toLowerCase();
  if (!accessLogModes.includes(mode)) throw new Error(`"${text}" is not one of ${accessLogModes.join(", ")}`);
  return mode;
}
function parsePath(text) {
  const path = text.trim();
  if (path === "") throw new Error("is empty");
  return path;
}
function parseBytes(text) {
  const match = /^(\d+)\s*(B|KiB|MiB|GiB)?$/.exec(text.trim());
  if (!match) throw new Error(`"${text}" is not a size (use e.g. 512KiB, 64MiB)`);
  const factor = { B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 }[match[2] ?? "B"];
  const bytes = Number(match[1]) * factor;
  if (bytes < 1024) throw new Error(`"${text}" is below the minimum of 1KiB`);
  return bytes;
}
var parseBytesOrOff = (text) => text.trim() === "0" ? 0 : parseBytes(text);
function parseKey(text) {
  const key = text.trim();
  if (!/^[\x21-\x7e]+$/.test(key)) throw new Error("must be a single printable token without spaces");
  if (key.startsWith("phc_")) throw new Error("is a project token (phc_\u2026); the sidecar needs a secret (phs_\u2026) or personal (phx_\u2026) key");
  return key;
}
function parseCount(min, max) {
  return (text) => {
    const value = text.trim();
    if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
      throw new Error(`"${text}" must be a whole number from ${min} to ${max}`);
    }
    return Number(value);
  };
}
function parseBool(text) {
  const value = text.trim().toLowerCase();
  if (["true", "1", "yes", "on"].includes(value)) return true;
  if (["false", "0", "no", "off"].includes(value)) return false;
  throw new Error(`"${text}" must be true or false`);
}

export {
  parseDurationWithin,
  formatDuration,
  parseListen,
  parseBaseUrl,
  parseRedisUrl,
  redactRedisUrl,
  parseRedisMode,
  parseRedisPrefix,
  parseProjects,
  parseProjectSelection,
  parseLogLevel,
  parseAccessLogMode,
  parsePath,
  parseBytes,
  parseBytesOrOff,
  parseKey,
  parseCount,
  parseBool
};
//# sourceMappingURL=chunk-SETGV34Z.js.map
