import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);
import {
  parseRetryAfter
} from "./chunk-YOR4U57Q.js";
import {
  createUpstreamClient
} from "./chunk-Z7HLARSG.js";
import {
  Counter,
  Gauge,
  Histogram
} from "./chunk-STRLSS22.js";
import "./chunk-64F6AQPD.js";

// src/metrics/event-metrics.ts
function createEventMetrics(registry, depth, spoolBytes = () => 0) {
  const registers = [registry];
  return {
    received: new Counter({ name: "flag_sidecar_events_received_total", help: "Events accepted into the queue.", registers }),
    refused: new Counter({
      name: "flag_sidecar_events_refused_total",
      help: "Capture requests refused, by reason (decode, parse, empty, event_name, no_token, tokens, unknown_token, too_large, queue_full, offline).",
      labelNames: ["reason"],
      registers
    }),
    forwarded: new Counter({ name: "flag_sidecar_events_forwarded_total", help: "Events upstream accepted.", registers }),
    dropped: new Counter({
      name: "flag_sidecar_events_dropped_total",
      help: "Accepted events upstream refused for good (a 4xx for the event alone), by status; each is logged.",
      labelNames: ["reason"],
      registers
    }),
    retried: new Counter({
      name: "flag_sidecar_events_retried_total",
      help: "Events whose forwarding failed and is retried, by reason (status_<code> or a network cause).",
      labelNames: ["reason"],
      registers
    }),
    forwardDuration: new Histogram({
      name: "flag_sidecar_events_forward_duration_seconds",
      help: "Duration of successful batch forwards upstream.",
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers
    }),
    queueEvents: new Gauge({
      name: "flag_sidecar_events_queue_events",
      help: "Events accepted and not yet forwarded (waiting and in flight).",
      registers,
      collect() {
        this.set(depth().events);
      }
    }),
    queueBytes: new Gauge({
      name: "flag_sidecar_events_queue_bytes",
      help: "Bytes of the events in the queue.",
      registers,
      collect() {
        this.set(depth().bytes);
      }
    }),
    spoolBytes: new Gauge({
      name: "flag_sidecar_events_spool_bytes",
      help: "Bytes of the events spool segment files on disk (0 without FLAG_SIDECAR_SNAPSHOT_DIR).",
      registers,
      collect() {
        this.set(spoolBytes());
      }
    })
  };
}

// src/events/forwarder.ts
var batchBody = (token, events) => `{"api_key":${JSON.stringify(token)},"batch":[${events.join(",")}]}`;
var maxRetryAfterMs = 3e5;
var forwardConcurrency = 4;
function createForwarder(deps) {
  const { queue, logger, observer, now } = deps;
  let running = false;
  let flushing = false;
  let stopped = false;
  let last = null;
  let failures = 0;
  let resumeAt = 0;
  const abort = new AbortController();
  let loop = Promise.resolve();
  const idle = /* @__PURE__ */ new Set();
  const lingering = /* @__PURE__ */ new Set();
  const backingOff = /* @__PURE__ */ new Set();
  const wakeAll = (waiters) => {
    for (const wake of [...waiters]) wake();
  };
  queue.onAppend(() => {
    wakeAll(idle);
    if (flushing || queue.waiting() >= deps.batchMaxEvents) wakeAll(lingering);
  });
  function pause(waiters, ms) {
    return new Promise((resolve) => {
      const wake = () => {
        if (timer) clearTimeout(timer);
        waiters.delete(wake);
        resolve();
      };
      const timer = ms === null ? null : setTimeout(wake, ms);
      waiters.add(wake);
    });
  }
  function backoffMs(retryAfterMs) {
    const exponent = Math.min(failures, 20);
    const base = Math.min(deps.retryMaxMs, deps.retryMinMs * 2 ** (exponent - 1));
    const jittered = Math.round(base / 2 + deps.random() * base / 2);
    return retryAfterMs === null ? jittered : Math.max(jittered, Math.min(retryAfterMs, maxRetryAfterMs));
  }
  const note = (outcome, detail) => void (last = { at: now(), outcome, detail });
  async function deliver(token, events) {
    for (; ; ) {
      while (!stopped && performance.now() < resumeAt) await pause(backingOff, resumeAt - performance.now());
      if (stopped) return false;
      const started = performance.now();
      const result = await deps.send(batchBody(token, events), abort.signal);
      if (stopped && result.kind === "failure") return false;
      if (result.kind === "response" && result.status >= 200 && result.status < 300) {
        failures = 0;
        observer.forwarded(events.length, (performance.now() - started) / 1e3);
        note("ok", `${events.length} events forwarded (${result.status})`);
        return true;
      }
      if (result.kind === "response" && (result.status === 400 || result.status === 413) && events.length > 1) {
        const half = Math.ceil(events.length / 2);
        logger.warn({ status: result.status, events: events.length }, "events relay: upstream refused a batch; sending it again in halves");
        if (!await deliver(token, events.slice(0, half))) return false;
        return deliver(token, events.slice(half));
      }
      const status = result.kind === "response" ? result.status : 0;
      if (result.kind === "response" && status >= 400 && status < 500 && status !== 408 && status !== 429) {
        const detail = result.body.subarray(0, 200).toString("utf8");
        logger.error({ status, events: events.length, detail }, "events relay: upstream refused events for good; they are dropped");
        observer.dropped(events.length, `status_${status}`);
        note("dropped", `${events.length} events refused with ${status}: ${detail}`);
        return true;
      }
      failures += 1;
      const reason = result.kind === "response" ? `status_${status}` : result.cause;
      const retryAfter = result.kind === "response" ? parseRetryAfter(headerText(result.headers["retry-after"]), now()) : null;
      const delay = backoffMs(retryAfter);
      resumeAt = Math.max(resumeAt, performance.now() + delay);
      observer.retried(events.length, reason);
      note("retry", `${reason}; retrying in ${delay} ms`);
      if (failures === 1 || failures % 10 === 0) logger.warn({ reason, failures, delayMs: delay }, "events relay: forwarding failed; retrying");
    }
  }
  async function work() {
    while (!stopped) {
      if (queue.waiting() === 0) {
        if (flushing) return;
        await pause(idle, null);
        continue;
      }
      if (!flushing && queue.waiting() < deps.batchMaxEvents) await pause(lingering, deps.lingerMs);
      const batch = queue.take(deps.batchMaxEvents, deps.batchMaxBytes);
      if (batch === null) continue;
      if (await deliver(batch.token, batch.events)) queue.ack(batch);
      else queue.release(batch);
    }
  }
  const run = () => Promise.all(Array.from({ length: forwardConcurrency }, work));
  const wakeEveryone = () => [idle, lingering, backingOff].forEach(wakeAll);
  return {
    start() {
      if (running) return;
      running = true;
      loop = run();
    },
    /** The last delivery attempt, or null before the first. */
    last: () => last,
    /** Forward what can be within `budgetMs`, then stop; resolves with the events left unforwarded. */
    async stop(budgetMs) {
      flushing = true;
      if (!running) loop = run();
      wakeEveryone();
      let timer;
      await Promise.race([loop, new Promise((resolve) => timer = setTimeout(resolve, budgetMs))]);
      clearTimeout(timer);
      stopped = true;
      abort.abort();
      wakeEveryone();
      await loop;
      return queue.depth().events;
    }
  };
}
var headerText = (value) => Array.isArray(value) ? value[0] : value;

// src/events/queue.ts
var sizesOf = (events) => events.map((e) => Buffer.byteLength(e));
var sum = (sizes) => sizes.reduce((total, size) => total + size, 0);
function createMemoryQueue(limits) {
  const waitingByToken = /* @__PURE__ */ new Map();
  let waitingCount = 0;
  let events = 0;
  let bytes = 0;
  let inFlight = 0;
  const listeners = [];
  return {
    append(token, batch, known) {
      const sizes = known ?? sizesOf(batch);
      const size = sum(sizes);
      if (events + batch.length > limits.maxEvents || bytes + size > limits.maxBytes) return Promise.resolve(false);
      if (batch.length === 0) return Promise.resolve(true);
      const run = { texts: batch, sizes, next: 0 };
      const list = waitingByToken.get(token);
      if (list) list.push(run);
      else waitingByToken.set(token, [run]);
      waitingCount += batch.length;
      events += batch.length;
      bytes += size;
      for (const listener of listeners) listener();
      return Promise.resolve(true);
    },
    take(maxEvents, maxBytes) {
      for (const [token, list] of waitingByToken) {
        const taken = [];
        const sizes = [];
        let size = 0;
        while (list.length > 0 && taken.length < maxEvents) {
          const run = list[0];
          const next = run.sizes[run.next];
          if (taken.length > 0 && size + next > maxBytes) break;
          taken.push(run.texts[run.next]);
          run.next += 1;
          sizes.push(next);
          size += next;
          if (run.next === run.sizes.length) list.shift();
        }
        waitingByToken.delete(token);
        if (list.length > 0) waitingByToken.set(token, list);
        waitingCount -= taken.length;
        inFlight += taken.length;
        return { token, events: taken, sizes, bytes: size };
      }
      return null;
    },
    ack(batch) {
      inFlight -= batch.events.length;
      events -= batch.events.length;
      bytes -= batch.bytes;
    },
    release(batch) {
      inFlight -= batch.events.length;
      const run = { texts: batch.events, sizes: batch.sizes, next: 0 };
      const list = waitingByToken.get(batch.token);
      if (list) list.unshift(run);
      else waitingByToken.set(batch.token, [run]);
      waitingCount += batch.events.length;
      for (const listener of listeners) listener();
    },
    waiting: () => waitingCount,
    depth: () => ({ events, bytes, inFlight }),
    free: () => ({ events: limits.maxEvents - events, bytes: limits.maxBytes - bytes }),
    onAppend(listener) {
      listeners.push(listener);
    }
  };
}

// src/events/spool.ts
import { constants } from "node:fs";
import { access, mkdir, open as open2, readdir, stat, unlink } from "node:fs/promises";
import { join } from "node:path";

// src/events/spool-reader.ts
import { basename } from "node:path";
import { open, readFile } from "node:fs/promises";

// src/events/spool-record.ts
import { crc32 } from "node:zlib";
var recordHeaderBytes = 8;
var maxRecordPayloadBytes = 64 * 1024 * 1024;
var ackEntryBytes = 8;
function encodeRecord(record) {
  const payload = Buffer.from(`{"t":${JSON.stringify(record.token)},"e":[${record.events.join(",")}]}`);
  const header = Buffer.alloc(recordHeaderBytes);
  header.writeUInt32BE(payload.length, 0);
  header.writeUInt32BE(crc32(payload), 4);
  return Buffer.concat([header, payload]);
}
var isRecord = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
function parsePayload(payload) {
  let parsed;
  try {
    parsed = JSON.parse(payload.toString("utf8"));
  } catch {
    return null;
  }
  if (!isRecord(parsed) || typeof parsed.t !== "string" || parsed.t === "" || parsed.t.length > 200 || !Array.isArray(parsed.e) || parsed.e.length === 0) return null;
  if (!parsed.e.every((event) => isRecord(event) && typeof event.event === "string" && event.event !== "")) return null;
  return { token: parsed.t, events: parsed.e.map((event) => JSON.stringify(event)) };
}
function decodeRecords(bytes, final) {
  const records = [];
  let offset = 0;
  const stop = (damage, wanted = 0) => ({ records, validBytes: offset, damage, wanted });
  while (offset < bytes.length) {
    if (bytes.length - offset < recordHeaderBytes) return final ? stop("torn") : stop(null, recordHeaderBytes);
    const length = bytes.readUInt32BE(offset);
    if (length > maxRecordPayloadBytes) return stop("shape");
    const end = offset + recordHeaderBytes + length;
    if (end > bytes.length) return final ? stop("torn") : stop(null, recordHeaderBytes + length);
    const payload = bytes.subarray(offset + recordHeaderBytes, end);
    if (crc32(payload) !== bytes.readUInt32BE(offset + 4)) return stop("checksum");
    const record = parsePayload(payload);
    if (record === null) return stop("shape");
    records.push(record);
    offset = end;
  }
  return stop(null);
}
function encodeAck(index) {
  const entry = Buffer.alloc(ackEntryBytes);
  entry.writeUInt32BE(index, 0);
  entry.writeUInt32BE(crc32(entry.subarray(0, 4)), 4);
  return entry;
}
function decodeAcks(bytes) {
  const acked = /* @__PURE__ */ new Set();
  for (let offset = 0; offset + ackEntryBytes <= bytes.length; offset += ackEntryBytes) {
    const index = bytes.subarray(offset, offset + 4);
    if (crc32(index) === bytes.readUInt32BE(offset + 4)) acked.add(index.readUInt32BE(0));
  }
  return acked;
}

// src/events/spool-reader.ts
async function* readSegment(path, chunkBytes) {
  const file = await open(path, "r");
  try {
    const size = (await file.stat()).size;
    let position = 0;
    let first = 0;
    let want = chunkBytes;
    while (position < size) {
      const length = Math.min(Math.max(chunkBytes, want), size - position);
      const buffer = Buffer.allocUnsafe(length);
      let read = 0;
      while (read < length) {
        const { bytesRead } = await file.read(buffer, read, length - read, position + read);
        if (bytesRead === 0) break;
        read += bytesRead;
      }
      const final = position + read >= size || read < length;
      const decoded = decodeRecords(buffer.subarray(0, read), final);
      position += decoded.validBytes;
      const damaged = decoded.damage !== null;
      yield { first, records: decoded.records, damage: decoded.damage, skippedBytes: damaged ? size - position : 0, unread: damaged ? 0 : size - position };
      if (damaged) return;
      first += decoded.records.length;
      want = decoded.wanted;
    }
  } finally {
    await file.close();
  }
}
function createSpoolReplay(deps) {
  const { unread, logger } = deps;
  let current = null;
  let closed = false;
  let busy = Promise.resolve();
  async function read() {
    for (; ; ) {
      if (closed) return null;
      if (current === null) {
        const segment2 = unread.shift();
        if (segment2 === void 0) return null;
        const acks = await readFile(deps.ackPath(segment2.n)).catch(() => Buffer.alloc(0));
        current = { segment: segment2, parts: readSegment(deps.segmentPath(segment2.n), deps.chunkBytes), acked: decodeAcks(acks), unread: segment2.size };
      }
      const { segment, acked } = current;
      const name = basename(deps.segmentPath(segment.n));
      let step;
      try {
        step = await current.parts.next();
      } catch (error) {
        logger.error({ err: error.message, segment: name }, "events spool: cannot read a segment to replay; it is kept for the next start");
        current = null;
        continue;
      }
      if (step.done) {
        current = null;
        deps.done(segment);
        continue;
      }
      const part = step.value;
      current.unread = part.unread;
      if (part.damage !== null) {
        deps.damaged();
        logger.warn({ segment: name, damage: part.damage, skippedBytes: part.skippedBytes, records: part.first + part.records.length }, "events spool: a segment ends in a damaged record (an interrupted write?); the records after it are skipped");
      }
      const records = [];
      part.records.forEach((record, i) => {
        const index = part.first + i;
        if (acked.has(index)) return;
        segment.pending += 1;
        records.push({ ...record, ref: { segment: segment.n, index } });
      });
      if (records.length > 0) return records;
    }
  }
  return {
    /** The next records not acked, oldest first (one part's worth); null once all is read or after close. */
    next() {
      const result = read();
      busy = result.catch(() => void 0);
      return result;
    },
    /** Bytes of the segments not read yet. */
    unreadBytes: () => (current?.unread ?? 0) + unread.reduce((sum2, s) => sum2 + s.size, 0),
    /** Stop reading (waiting for a read under way): later calls of next() resolve null. */
    async close() {
      closed = true;
      await busy;
      await current?.parts.return();
      current = null;
    }
  };
}

// src/events/spool.ts
var segmentName = (n) => `${String(n).padStart(10, "0")}.seg`;
var ackName = (n) => `${String(n).padStart(10, "0")}.ack`;
var namePattern = /^(\d{10})\.(seg|ack)$/;
async function openSpool(deps) {
  const { dir, logger } = deps;
  const syncWindowMs = deps.syncWindowMs ?? 5;
  const segmentBytes = deps.segmentBytes ?? Math.min(64 * 1024 * 1024, Math.max(1024 * 1024, Math.floor(deps.maxBytes / 16)));
  await mkdir(dir, { recursive: true, mode: 448 });
  await access(dir, constants.R_OK | constants.W_OK);
  const segments = /* @__PURE__ */ new Map();
  let totalBytes = 0;
  let damaged = 0;
  const names = await readdir(dir);
  const numbers = /* @__PURE__ */ new Set();
  for (const name of names) {
    const match = namePattern.exec(name);
    if (match) numbers.add(Number(match[1]));
  }
  const unread = [];
  for (const n of [...numbers].sort((a, b) => a - b)) {
    const size = await stat(join(dir, segmentName(n))).then((s) => s.size, () => null);
    if (size === null || size === 0) {
      if (size === 0) await unlink(join(dir, segmentName(n))).catch(() => void 0);
      await unlink(join(dir, ackName(n))).catch(() => void 0);
      continue;
    }
    const segment = { n, size, next: 0, pending: 0, active: false, read: false };
    segments.set(n, segment);
    unread.push(segment);
    totalBytes += size;
  }
  const newSegment = (n) => {
    const segment = { n, size: 0, next: 0, pending: 0, active: true, read: true };
    segments.set(n, segment);
    return segment;
  };
  let active = newSegment(Math.max(0, ...numbers) + 1);
  const queued = [];
  let timer = null;
  let flushing = null;
  let handle = null;
  let ackChain = Promise.resolve();
  const chain = (step) => {
    ackChain = ackChain.then(step).then(
      () => void 0,
      (error) => logger.warn({ err: error.message }, "events spool: cannot update an ack file or remove a segment")
    );
  };
  const retireIfDone = (segment) => {
    if (segment.active || !segment.read || segment.pending > 0 || handle?.segment === segment || !segments.has(segment.n)) return;
    segments.delete(segment.n);
    totalBytes -= segment.size;
    chain(async () => {
      await unlink(join(dir, segmentName(segment.n))).catch(() => void 0);
      await unlink(join(dir, ackName(segment.n))).catch(() => void 0);
    });
  };
  const rotate = () => {
    active.active = false;
    const previous = active;
    active = newSegment(active.n + 1);
    retireIfDone(previous);
  };
  async function writeGroup(segment, bytes) {
    try {
      if (handle?.segment !== segment) {
        await closeHandle();
        handle = { segment, file: await open2(join(dir, segmentName(segment.n)), "a", 384) };
      }
      await handle.file.write(bytes);
      await handle.file.datasync();
      return true;
    } catch (error) {
      logger.error({ err: error.message, segment: segmentName(segment.n) }, "events spool: cannot write; the requests are answered 503");
      if (segment === active) rotate();
      await closeHandle();
      return false;
    }
  }
  async function closeHandle() {
    const current = handle;
    handle = null;
    if (current === null) return;
    await current.file.close().catch(() => void 0);
    retireIfDone(current.segment);
  }
  async function flush() {
    timer = null;
    while (queued.length > 0) {
      const writes = queued.splice(0);
      let start = 0;
      while (start < writes.length) {
        const segment = writes[start].segment;
        let end = start;
        while (end < writes.length && writes[end].segment === segment) end += 1;
        const group = writes.slice(start, end);
        const ok = await writeGroup(segment, Buffer.concat(group.map((w) => w.bytes)));
        for (const w of group) w.done(ok);
        start = end;
      }
    }
    if (handle !== null && !handle.segment.active) await closeHandle();
  }
  const schedule = () => {
    if (timer !== null || flushing !== null) return;
    timer = setTimeout(() => {
      flushing = flush().finally(() => {
        flushing = null;
        if (queued.length > 0) schedule();
      });
    }, syncWindowMs);
  };
  const spool = {
    /**
     * Reserve room for `record` and append it: null when the spool is full (nothing kept), else its place and a
     * promise that resolves true once the record is on disk (fsync'ed), false when the write failed.
     */
    append(record) {
      const bytes = encodeRecord(record);
      if (totalBytes + bytes.length > deps.maxBytes) return null;
      if (active.size > 0 && active.size + bytes.length > segmentBytes) rotate();
      const segment = active;
      const ref = { segment: segment.n, index: segment.next };
      segment.next += 1;
      segment.pending += 1;
      segment.size += bytes.length;
      totalBytes += bytes.length;
      const written = new Promise((resolve) => queued.push({ segment, bytes, done: resolve }));
      schedule();
      return { ref, written };
    },
    /** Mark a record done; its segment is deleted once all of it is. */
    ack(ref) {
      const segment = segments.get(ref.segment);
      if (!segment) return;
      segment.pending -= 1;
      if (segment.pending <= 0 && !segment.active && segment.read) {
        retireIfDone(segment);
        return;
      }
      const entry = encodeAck(ref.index);
      chain(() => segments.has(segment.n) ? appendAck(segment.n, entry) : Promise.resolve());
    },
    /** Bytes of segment files (acked records count until their segment is deleted). */
    bytes: () => totalBytes,
    /** Segments found damaged at open. */
    damaged: () => damaged,
    /** Write what is queued and the pending ack entries, then close the segment file (and stop replaying). */
    async close() {
      await replay.close();
      if (timer !== null) clearTimeout(timer);
      await flushing;
      if (timer !== null) clearTimeout(timer);
      await flush();
      await closeHandle();
      await ackChain;
    }
  };
  async function appendAck(n, entry) {
    const file = await open2(join(dir, ackName(n)), "a", 384);
    try {
      await file.write(entry);
    } finally {
      await file.close();
    }
  }
  const replay = createSpoolReplay({
    unread,
    segmentPath: (n) => join(dir, segmentName(n)),
    ackPath: (n) => join(dir, ackName(n)),
    chunkBytes: deps.replayChunkBytes ?? 1024 * 1024,
    logger,
    damaged: () => void (damaged += 1),
    done: (segment) => {
      segment.read = true;
      retireIfDone(segment);
    }
  });
  const reader = replay;
  return { spool, replay: reader };
}

// src/events/spooled-queue.ts
var sizeOf = (events) => events.reduce((sum2, e) => sum2 + Buffer.byteLength(e), 0);
var keyOf = (ref) => `${ref.segment}:${ref.index}`;
function createSpooledQueue(deps) {
  const { memory, limits, spool } = deps;
  const slicesByToken = /* @__PURE__ */ new Map();
  const leased = /* @__PURE__ */ new WeakMap();
  const remaining = /* @__PURE__ */ new Map();
  const backlog = [];
  let backlogEvents = 0;
  let backlogBytes = 0;
  let reading = false;
  let replayDone = false;
  const fits = (count, bytes) => {
    const depth = memory.depth();
    return depth.events + count <= limits.maxEvents && depth.bytes + bytes <= limits.maxBytes;
  };
  const enqueue = (token, events, ref, sizes) => {
    remaining.set(keyOf(ref), events.length);
    const list = slicesByToken.get(token);
    if (list) list.push({ ref, count: events.length });
    else slicesByToken.set(token, [{ ref, count: events.length }]);
    void memory.append(token, events, sizes);
  };
  const pump = () => {
    while (backlog.length > 0) {
      const next = backlog[0];
      const bytes = sizeOf(next.events);
      if (!fits(next.events.length, bytes)) {
        if (memory.depth().events > 0) return;
        deps.logger.error({ events: next.events.length, bytes }, "events spool: a spooled request is larger than the whole events queue; it is dropped");
        deps.dropped(next.events.length);
        spool.ack(next.ref);
      } else enqueue(next.token, next.events, next.ref);
      backlog.shift();
      backlogEvents -= next.events.length;
      backlogBytes -= bytes;
    }
    if (replayDone || reading) return;
    reading = true;
    deps.replay.next().then(
      (records) => {
        reading = false;
        if (records === null) replayDone = true;
        else {
          backlog.push(...records);
          backlogEvents += records.reduce((sum2, r) => sum2 + r.events.length, 0);
          backlogBytes += records.reduce((sum2, r) => sum2 + sizeOf(r.events), 0);
        }
        pump();
      },
      (error) => {
        reading = false;
        replayDone = true;
        deps.logger.error({ err: error.message }, "events spool: replay stopped; the records not read yet are kept for the next start");
      }
    );
  };
  pump();
  return {
    async append(token, events, known) {
      const sizes = known ?? sizesOf(events);
      if (!fits(backlogEvents + events.length, backlogBytes + sizes.reduce((sum2, size) => sum2 + size, 0))) return false;
      const appended = spool.append({ token, events });
      if (appended === null) return false;
      enqueue(token, events, appended.ref, sizes);
      return appended.written;
    },
    take(maxEvents, maxBytes) {
      const batch = memory.take(maxEvents, maxBytes);
      if (batch === null) return null;
      const list = slicesByToken.get(batch.token) ?? [];
      const taken = [];
      let left = batch.events.length;
      while (left > 0 && list.length > 0) {
        const first = list[0];
        if (first.count <= left) {
          taken.push(first);
          list.shift();
          left -= first.count;
        } else {
          taken.push({ ref: first.ref, count: left });
          list[0] = { ref: first.ref, count: first.count - left };
          left = 0;
        }
      }
      if (list.length === 0) slicesByToken.delete(batch.token);
      leased.set(batch, taken);
      return batch;
    },
    ack(batch) {
      memory.ack(batch);
      for (const slice of leased.get(batch) ?? []) {
        const key = keyOf(slice.ref);
        const left = (remaining.get(key) ?? 0) - slice.count;
        if (left > 0) remaining.set(key, left);
        else {
          remaining.delete(key);
          spool.ack(slice.ref);
        }
      }
      leased.delete(batch);
      pump();
    },
    release(batch) {
      const slices = leased.get(batch) ?? [];
      leased.delete(batch);
      const list = slicesByToken.get(batch.token);
      if (list) list.unshift(...slices);
      else slicesByToken.set(batch.token, [...slices]);
      memory.release(batch);
    },
    waiting: () => memory.waiting(),
    // The part of the replay held for room counts against new appends (as in append).
    free() {
      const free = memory.free();
      return { events: free.events - backlogEvents, bytes: free.bytes - backlogBytes };
    },
    depth() {
      const depth = memory.depth();
      return { events: depth.events + backlogEvents, bytes: depth.bytes + backlogBytes, inFlight: depth.inFlight };
    },
    onAppend: (listener) => memory.onAppend(listener)
  };
}

// src/events/relay.ts
async function createEventRelay(deps) {
  const { config, logger } = deps;
  const memory = createMemoryQueue(config.queue);
  let spool = null;
  let replay = null;
  let queue = memory;
  let dropReplayed = (_events) => void 0;
  const opened = config.spool ? await openSpool({ dir: config.spool.dir, maxBytes: config.spool.maxBytes, logger }).catch((error) => {
    logger.error({ err: error.message, dir: config.spool?.dir }, "events spool: cannot open the spool directory; accepted events are held in memory only");
    return null;
  }) : null;
  if (config.spool && opened) {
    spool = opened.spool;
    replay = opened.replay;
    const unread = opened.replay.unreadBytes();
    if (unread > 0) logger.info({ bytes: unread, dir: config.spool.dir }, "events relay: replaying events a previous run spooled and did not forward");
    queue = createSpooledQueue({ memory, limits: config.queue, spool, replay: opened.replay, logger, dropped: (events) => dropReplayed(events) });
  }
  const metrics = createEventMetrics(deps.registry, () => queue.depth(), () => spool?.bytes() ?? 0);
  dropReplayed = (events) => metrics.dropped.inc({ reason: "too_large" }, events);
  const client = createUpstreamClient({
    url: config.url,
    timeoutMs: deps.upstreamTimeoutMs,
    connectTimeoutMs: deps.connectTimeoutMs,
    maxBodyBytes: 1024 * 1024,
    userAgent: deps.userAgent,
    connections: forwardConcurrency,
    metrics: deps.metrics
  });
  const forwarder = createForwarder({
    queue,
    send: (body, signal) => client.request({ operation: "events_batch", method: "POST", path: "/batch/", headers: { "content-type": "application/json" }, body, signal }),
    batchMaxEvents: config.batch.maxEvents,
    batchMaxBytes: config.batch.maxBytes,
    lingerMs: config.batch.lingerMs,
    retryMinMs: 500,
    retryMaxMs: 1e4,
    logger,
    now: deps.now,
    random: deps.random,
    observer: {
      forwarded: (events, seconds) => {
        metrics.forwarded.inc(events);
        metrics.forwardDuration.observe(seconds);
      },
      dropped: (events, reason) => metrics.dropped.inc({ reason }, events),
      retried: (events, reason) => metrics.retried.inc({ reason }, events)
    }
  });
  forwarder.start();
  return {
    queue,
    metrics,
    /** The /status `events` block. */
    status: () => ({
      url: config.url.origin,
      queue: { ...queue.depth(), max_events: config.queue.maxEvents, max_bytes: config.queue.maxBytes },
      spool: spool && config.spool ? { bytes: spool.bytes(), max_bytes: config.spool.maxBytes, replay_bytes: replay?.unreadBytes() ?? 0 } : null,
      last_forward: forwarder.last()
    }),
    async stop(budgetMs) {
      const left = await forwarder.stop(budgetMs);
      if (spool) {
        const unread = replay?.unreadBytes() ?? 0;
        await spool.close();
        if (left > 0 || unread > 0) logger.warn({ events: left, unreadBytes: unread }, "events relay: stopped with accepted events not forwarded; they stay in the spool and are sent after the next start");
      } else if (left > 0) logger.error({ events: left }, "events relay: stopped with accepted events not forwarded (no FLAG_SIDECAR_SNAPSHOT_DIR, so no spool: they are lost)");
      await client.destroy();
    }
  };
}
function eventRelayFor(config, deps) {
  const url = config.events.url;
  if (url === null) return Promise.resolve(null);
  return createEventRelay({
    ...deps,
    config: { ...config.events, url },
    upstreamTimeoutMs: config.upstream?.timeoutMs ?? 1e4,
    connectTimeoutMs: config.upstream?.connectTimeoutMs ?? 5e3
  });
}
export {
  createEventRelay,
  eventRelayFor
};
//# sourceMappingURL=relay-7MEXX5XQ.js.map
