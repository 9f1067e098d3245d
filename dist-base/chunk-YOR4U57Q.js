import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);

// src/upstream/schedule.ts
var backoffCapFactor = 8;
var maxRetryAfterMs = 36e5;
function equalJitter(ms, random) {
  return Math.round(ms / 2 + random() * ms / 2);
}
function nextDelay(input) {
  const { outcome, intervalMs, random } = input;
  if (outcome === "ok") return Math.round(intervalMs * (0.9 + 0.2 * random()));
  const cap = intervalMs * backoffCapFactor;
  const exponent = Math.min(Math.max(input.failures, 1), 30);
  const backoff = outcome === "refused" ? Math.min(cap, intervalMs * 2 ** exponent) : Math.min(cap, (input.hasSnapshot ? intervalMs / 4 : Math.min(intervalMs, 1e3)) * 2 ** (exponent - 1));
  const delay = equalJitter(backoff, random);
  if (input.retryAfterMs === null) return delay;
  return Math.max(delay, Math.min(input.retryAfterMs, maxRetryAfterMs));
}
function initialDelay(intervalMs, random) {
  return Math.round(random() * Math.min(1e3, intervalMs / 10));
}
function parseRetryAfter(header, nowMs) {
  if (header === void 0) return null;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1e3;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - nowMs);
}

export {
  nextDelay,
  initialDelay,
  parseRetryAfter
};
//# sourceMappingURL=chunk-YOR4U57Q.js.map
