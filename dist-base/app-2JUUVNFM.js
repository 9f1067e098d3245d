import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);
import {
  endpointOf,
  writtenResource
} from "./chunk-BV2GPDZD.js";
import {
  KeyRecordsError,
  admitAll,
  maxRecordsFileBytes,
  parseKeyRecords,
  principalFacts,
  principalFromFacts,
  recordTimes,
  serializeKeyRecords
} from "./chunk-57D6XBJW.js";
import {
  initialDelay,
  nextDelay,
  parseRetryAfter
} from "./chunk-YOR4U57Q.js";
import {
  http,
  parseKeysFile
} from "./chunk-NK6ITCOZ.js";
import {
  extractCredential,
  keyKind,
  loadInitialSnapshots,
  resolveProjectTokens
} from "./chunk-XHKP5JT5.js";
import {
  ApiError,
  ConfigError,
  VerifierBusyError,
  bodyTooLarge,
  createPersistence,
  incorrectCredentials,
  invalidAccessToken,
  invalidPersonalKey,
  methodNotAllowed,
  missingScope,
  notAuthenticated,
  notFound,
  offline,
  parseError,
  permissionDenied,
  personalKeyNotSupported,
  projectNotFound,
  projectNotInKeyScope,
  serverError,
  shuttingDown,
  unavailable,
  upstreamAnswered,
  upstreamFailure,
  writeFileAtomic
} from "./chunk-NKODD5P7.js";
import {
  createMetrics
} from "./chunk-R6EN27N5.js";
import {
  Registry
} from "./chunk-STRLSS22.js";
import {
  createVariant,
  etagMatches,
  parseDefinitions,
  quotaRecoveryEtag,
  takeParsedDefinitions,
  withChanges
} from "./chunk-YXIUFDAM.js";
import "./chunk-64F6AQPD.js";

// src/app.ts
import { readFile } from "node:fs/promises";
import { performance as performance6 } from "node:perf_hooks";

// src/auth/key-verification.ts
import { performance as performance3 } from "node:perf_hooks";

// src/auth/introspect.ts
import { performance as performance2 } from "node:perf_hooks";

// node_modules/lru-cache/dist/esm/node/index.min.js
import { tracingChannel as G, channel as P } from "node:diagnostics_channel";
var S = P("lru-cache:metrics");
var W = G("lru-cache");
var L = typeof performance == "object" && performance && typeof performance.now == "function" ? performance : Date;
var R = () => S.hasSubscribers || W.hasSubscribers;
var U = /* @__PURE__ */ new Set();
var M = typeof process == "object" && process ? process : {};
var k = (d3, e, t, i) => {
  typeof M.emitWarning == "function" ? M.emitWarning(d3, e, t, i) : console.error(`[${t}] ${e}: ${d3}`);
};
var H = (d3) => !U.has(d3);
var T = (d3) => !!d3 && d3 === Math.floor(d3) && d3 > 0 && isFinite(d3);
var j = (d3) => T(d3) ? d3 <= Math.pow(2, 8) ? Uint8Array : d3 <= Math.pow(2, 16) ? Uint16Array : d3 <= Math.pow(2, 32) ? Uint32Array : d3 <= Number.MAX_SAFE_INTEGER ? O : null : null;
var O = class extends Array {
  constructor(e) {
    super(e), this.fill(0);
  }
};
var x = class d {
  heap;
  length;
  static #o = false;
  static create(e) {
    let t = j(e);
    if (!t) return [];
    d.#o = true;
    let i = new d(e, t);
    return d.#o = false, i;
  }
  constructor(e, t) {
    if (!d.#o) throw new TypeError("instantiate Stack using Stack.create(n)");
    this.heap = new t(e), this.length = 0;
  }
  push(e) {
    this.heap[this.length++] = e;
  }
  pop() {
    return this.heap[--this.length];
  }
};
var I = class d2 {
  #o;
  #c;
  #S;
  #O;
  #w;
  #M;
  #I;
  #m;
  get perf() {
    return this.#m;
  }
  ttl;
  ttlResolution;
  ttlAutopurge;
  updateAgeOnGet;
  updateAgeOnHas;
  allowStale;
  noDisposeOnSet;
  noUpdateTTL;
  maxEntrySize;
  sizeCalculation;
  noDeleteOnFetchRejection;
  noDeleteOnStaleGet;
  allowStaleOnFetchAbort;
  allowStaleOnFetchRejection;
  ignoreFetchAbort;
  backgroundFetchSize;
  #n;
  #b;
  #s;
  #i;
  #t;
  #l;
  #u;
  #a;
  #h;
  #y;
  #r;
  #_;
  #F;
  #d;
  #g;
  #T;
  #U;
  #f;
  #D;
  static unsafeExposeInternals(e) {
    return { starts: e.#F, ttls: e.#d, autopurgeTimers: e.#g, sizes: e.#_, keyMap: e.#s, keyList: e.#i, valList: e.#t, next: e.#l, prev: e.#u, get head() {
      return e.#a;
    }, get tail() {
      return e.#h;
    }, free: e.#y, isBackgroundFetch: (t) => e.#e(t), backgroundFetch: (t, i, s, n) => e.#P(t, i, s, n), moveToTail: (t) => e.#L(t), indexes: (t) => e.#A(t), rindexes: (t) => e.#z(t), isStale: (t) => e.#p(t) };
  }
  get max() {
    return this.#o;
  }
  get maxSize() {
    return this.#c;
  }
  get calculatedSize() {
    return this.#b;
  }
  get size() {
    return this.#n;
  }
  get fetchMethod() {
    return this.#M;
  }
  get memoMethod() {
    return this.#I;
  }
  get dispose() {
    return this.#S;
  }
  get onInsert() {
    return this.#O;
  }
  get disposeAfter() {
    return this.#w;
  }
  constructor(e) {
    let { max: t = 0, ttl: i, ttlResolution: s = 1, ttlAutopurge: n, updateAgeOnGet: o, updateAgeOnHas: l, allowStale: h, dispose: r, onInsert: c, disposeAfter: m, noDisposeOnSet: _, noUpdateTTL: u, maxSize: g = 0, maxEntrySize: f = 0, sizeCalculation: y, fetchMethod: a, memoMethod: w, noDeleteOnFetchRejection: F, noDeleteOnStaleGet: b, allowStaleOnFetchRejection: p, allowStaleOnFetchAbort: A, ignoreFetchAbort: z, backgroundFetchSize: C = 1, perf: E } = e;
    if (this.backgroundFetchSize = C, E !== void 0 && typeof E?.now != "function") throw new TypeError("perf option must have a now() method if specified");
    if (this.#m = E ?? L, t !== 0 && !T(t)) throw new TypeError("max option must be a nonnegative integer");
    let v = t ? j(t) : Array;
    if (!v) throw new Error("invalid max value: " + t);
    if (this.#o = t, this.#c = g, this.maxEntrySize = f || this.#c, this.sizeCalculation = y, this.sizeCalculation) {
      if (!this.#c && !this.maxEntrySize) throw new TypeError("cannot set sizeCalculation without setting maxSize or maxEntrySize");
      if (typeof this.sizeCalculation != "function") throw new TypeError("sizeCalculation set to non-function");
    }
    if (w !== void 0 && typeof w != "function") throw new TypeError("memoMethod must be a function if defined");
    if (this.#I = w, a !== void 0 && typeof a != "function") throw new TypeError("fetchMethod must be a function if specified");
    if (this.#M = a, this.#U = !!a, this.#s = /* @__PURE__ */ new Map(), this.#i = Array.from({ length: t }).fill(void 0), this.#t = Array.from({ length: t }).fill(void 0), this.#l = new v(t), this.#u = new v(t), this.#a = 0, this.#h = 0, this.#y = x.create(t), this.#n = 0, this.#b = 0, typeof r == "function" && (this.#S = r), typeof c == "function" && (this.#O = c), typeof m == "function" ? (this.#w = m, this.#r = []) : (this.#w = void 0, this.#r = void 0), this.#T = !!this.#S, this.#D = !!this.#O, this.#f = !!this.#w, this.noDisposeOnSet = !!_, this.noUpdateTTL = !!u, this.noDeleteOnFetchRejection = !!F, this.allowStaleOnFetchRejection = !!p, this.allowStaleOnFetchAbort = !!A, this.ignoreFetchAbort = !!z, this.maxEntrySize !== 0) {
      if (this.#c !== 0 && !T(this.#c)) throw new TypeError("maxSize must be a positive integer if specified");
      if (!T(this.maxEntrySize)) throw new TypeError("maxEntrySize must be a positive integer if specified");
      this.#X();
    }
    if (this.allowStale = !!h, this.noDeleteOnStaleGet = !!b, this.updateAgeOnGet = !!o, this.updateAgeOnHas = !!l, this.ttlResolution = T(s) || s === 0 ? s : 1, this.ttlAutopurge = !!n, this.ttl = i || 0, this.ttl) {
      if (!T(this.ttl)) throw new TypeError("ttl must be a positive integer if specified");
      this.#k();
    }
    if (this.#o === 0 && this.ttl === 0 && this.#c === 0) throw new TypeError("At least one of max, maxSize, or ttl is required");
    if (!this.ttlAutopurge && !this.#o && !this.#c) {
      let D = "LRU_CACHE_UNBOUNDED";
      H(D) && (U.add(D), k("TTL caching without ttlAutopurge, max, or maxSize can result in unbounded memory consumption.", "UnboundedCacheWarning", D, d2));
    }
  }
  getRemainingTTL(e) {
    return this.#s.has(e) ? 1 / 0 : 0;
  }
  #k() {
    let e = new O(this.#o), t = new O(this.#o);
    this.#d = e, this.#F = t;
    let i = this.ttlAutopurge ? Array.from({ length: this.#o }) : void 0;
    this.#g = i, this.#H = (h, r, c = this.#m.now()) => {
      t[h] = r !== 0 ? c : 0, e[h] = r, s(h, r);
    }, this.#R = (h) => {
      t[h] = e[h] !== 0 ? this.#m.now() : 0, s(h, e[h]);
    };
    let s = this.ttlAutopurge ? (h, r) => {
      if (i?.[h] && (clearTimeout(i[h]), i[h] = void 0), r && r !== 0 && i) {
        let c = setTimeout(() => {
          this.#p(h) ? (this.#E(this.#i[h], "expire"), i[h] = void 0) : s(h, l(h));
        }, r + 1);
        c.unref && c.unref(), i[h] = c;
      }
    } : () => {
    };
    this.#v = (h, r) => {
      if (e[r]) {
        let c = e[r], m = t[r];
        if (!c || !m) return;
        h.ttl = c, h.start = m, h.now = n || o();
        let _ = h.now - m;
        h.remainingTTL = c - _;
      }
    };
    let n = 0, o = () => {
      let h = this.#m.now();
      if (this.ttlResolution > 0) {
        n = h;
        let r = setTimeout(() => n = 0, this.ttlResolution);
        r.unref && r.unref();
      }
      return h;
    };
    this.getRemainingTTL = (h) => {
      let r = this.#s.get(h);
      return r === void 0 ? 0 : l(r);
    };
    let l = (h) => {
      let r = e[h], c = t[h];
      if (!r || !c) return 1 / 0;
      let m = (n || o()) - c;
      return r - m;
    };
    this.#p = (h) => {
      let r = t[h], c = e[h];
      return !!c && !!r && (n || o()) - r > c;
    };
  }
  #R = () => {
  };
  #v = () => {
  };
  #H = () => {
  };
  #p = () => false;
  #X() {
    let e = new O(this.#o);
    this.#b = 0, this.#_ = e, this.#x = (t) => {
      this.#b -= e[t], e[t] = 0;
    }, this.#N = (t, i, s, n) => {
      if (!T(s)) {
        if (this.#e(i)) return this.backgroundFetchSize;
        if (n) {
          if (typeof n != "function") throw new TypeError("sizeCalculation must be a function");
          if (s = n(i, t), !T(s)) throw new TypeError("sizeCalculation return invalid (expect positive integer)");
        } else throw new TypeError("invalid size value (must be positive integer). When maxSize or maxEntrySize is used, sizeCalculation or size must be set.");
      }
      return s;
    }, this.#j = (t, i, s) => {
      if (e[t] = i, this.#c) {
        let n = this.#c - e[t];
        for (; this.#b > n; ) this.#G(true);
      }
      this.#b += e[t], s && (s.entrySize = i, s.totalCalculatedSize = this.#b);
    };
  }
  #x = (e) => {
  };
  #j = (e, t, i) => {
  };
  #N = (e, t, i, s) => {
    if (i || s) throw new TypeError("cannot set size without setting maxSize or maxEntrySize on cache");
    return 0;
  };
  *#A({ allowStale: e = this.allowStale } = {}) {
    if (this.#n) for (let t = this.#h; this.#V(t) && ((e || !this.#p(t)) && (yield t), t !== this.#a); ) t = this.#u[t];
  }
  *#z({ allowStale: e = this.allowStale } = {}) {
    if (this.#n) for (let t = this.#a; this.#V(t) && ((e || !this.#p(t)) && (yield t), t !== this.#h); ) t = this.#l[t];
  }
  #V(e) {
    return e !== void 0 && this.#s.get(this.#i[e]) === e;
  }
  *entries() {
    for (let e of this.#A()) this.#t[e] !== void 0 && this.#i[e] !== void 0 && !this.#e(this.#t[e]) && (yield [this.#i[e], this.#t[e]]);
  }
  *rentries() {
    for (let e of this.#z()) this.#t[e] !== void 0 && this.#i[e] !== void 0 && !this.#e(this.#t[e]) && (yield [this.#i[e], this.#t[e]]);
  }
  *keys() {
    for (let e of this.#A()) {
      let t = this.#i[e];
      t !== void 0 && !this.#e(this.#t[e]) && (yield t);
    }
  }
  *rkeys() {
    for (let e of this.#z()) {
      let t = this.#i[e];
      t !== void 0 && !this.#e(this.#t[e]) && (yield t);
    }
  }
  *values() {
    for (let e of this.#A()) this.#t[e] !== void 0 && !this.#e(this.#t[e]) && (yield this.#t[e]);
  }
  *rvalues() {
    for (let e of this.#z()) this.#t[e] !== void 0 && !this.#e(this.#t[e]) && (yield this.#t[e]);
  }
  [Symbol.iterator]() {
    return this.entries();
  }
  [Symbol.toStringTag] = "LRUCache";
  find(e, t = {}) {
    for (let i of this.#A()) {
      let s = this.#t[i], n = this.#e(s) ? s.__staleWhileFetching : s;
      if (n !== void 0 && e(n, this.#i[i], this)) return this.#C(this.#i[i], t);
    }
  }
  forEach(e, t = this) {
    for (let i of this.#A()) {
      let s = this.#t[i], n = this.#e(s) ? s.__staleWhileFetching : s;
      n !== void 0 && e.call(t, n, this.#i[i], this);
    }
  }
  rforEach(e, t = this) {
    for (let i of this.#z()) {
      let s = this.#t[i], n = this.#e(s) ? s.__staleWhileFetching : s;
      n !== void 0 && e.call(t, n, this.#i[i], this);
    }
  }
  purgeStale() {
    let e = false;
    for (let t of this.#z({ allowStale: true })) this.#p(t) && (this.#E(this.#i[t], "expire"), e = true);
    return e;
  }
  info(e) {
    let t = this.#s.get(e);
    if (t === void 0) return;
    let i = this.#t[t], s = this.#e(i) ? i.__staleWhileFetching : i;
    if (s === void 0) return;
    let n = { value: s };
    if (this.#d && this.#F) {
      let o = this.#d[t], l = this.#F[t];
      if (o && l) {
        let h = o - (this.#m.now() - l);
        n.ttl = h, n.start = Date.now();
      }
    }
    return this.#_ && (n.size = this.#_[t]), n;
  }
  dump() {
    let e = [];
    for (let t of this.#A({ allowStale: true })) {
      let i = this.#i[t], s = this.#t[t], n = this.#e(s) ? s.__staleWhileFetching : s;
      if (n === void 0 || i === void 0) continue;
      let o = { value: n };
      if (this.#d && this.#F) {
        o.ttl = this.#d[t];
        let l = this.#m.now() - this.#F[t];
        o.start = Math.floor(Date.now() - l);
      }
      this.#_ && (o.size = this.#_[t]), e.unshift([i, o]);
    }
    return e;
  }
  load(e) {
    this.clear();
    for (let [t, i] of e) {
      if (i.start) {
        let s = Date.now() - i.start;
        i.start = this.#m.now() - s;
      }
      this.#W(t, i.value, i);
    }
  }
  set(e, t, i = {}) {
    let { status: s = S.hasSubscribers ? {} : void 0 } = i;
    i.status = s, s && (s.op = "set", s.key = e, t !== void 0 && (s.value = t), s.cache = this);
    let n = this.#W(e, t, i);
    return s && S.hasSubscribers && S.publish(s), n;
  }
  #W(e, t, i, s) {
    let { ttl: n = this.ttl, start: o, noDisposeOnSet: l = this.noDisposeOnSet, sizeCalculation: h = this.sizeCalculation, status: r } = i, c = this.#e(t);
    if (t === void 0) return r && (r.set = "deleted"), this.delete(e), this;
    let { noUpdateTTL: m = this.noUpdateTTL } = i;
    r && !c && (r.value = t);
    let _ = this.#N(e, t, i.size || 0, h, r);
    if (this.maxEntrySize && _ > this.maxEntrySize) return this.#E(e, "set"), r && (r.set = "miss", r.maxEntrySizeExceeded = true), this;
    let u = this.#n === 0 ? void 0 : this.#s.get(e);
    if (u === void 0) u = this.#n === 0 ? this.#h : this.#y.length !== 0 ? this.#y.pop() : this.#n === this.#o ? this.#G(false) : this.#n, this.#i[u] = e, this.#t[u] = t, this.#s.set(e, u), this.#l[this.#h] = u, this.#u[u] = this.#h, this.#h = u, this.#n++, this.#j(u, _, r), r && (r.set = "add"), m = false, this.#D && !c && this.#O?.(t, e, "add");
    else {
      this.#L(u);
      let g = this.#t[u];
      if (t !== g) {
        if (!l) if (this.#e(g)) {
          g !== s && g.__abortController.abort(new Error("replaced"));
          let { __staleWhileFetching: f } = g;
          f !== void 0 && f !== t && (this.#T && this.#S?.(f, e, "set"), this.#f && this.#r?.push([f, e, "set"]));
        } else this.#T && this.#S?.(g, e, "set"), this.#f && this.#r?.push([g, e, "set"]);
        if (this.#x(u), this.#j(u, _, r), this.#t[u] = t, !c) {
          let f = g && this.#e(g) ? g.__staleWhileFetching : g, y = f === void 0 ? "add" : t !== f ? "replace" : "update";
          r && (r.set = y, f !== void 0 && (r.oldValue = f)), this.#D && this.onInsert?.(t, e, y);
        }
      } else c || (r && (r.set = "update"), this.#D && this.onInsert?.(t, e, "update"));
    }
    if (n !== 0 && !this.#d && this.#k(), this.#d && (m || this.#H(u, n, o), r && this.#v(r, u)), !l && this.#f && this.#r) {
      let g = this.#r, f;
      for (; f = g?.shift(); ) this.#w?.(...f);
    }
    return this;
  }
  pop() {
    try {
      for (; this.#n; ) {
        let e = this.#t[this.#a];
        if (this.#G(true), this.#e(e)) {
          if (e.__staleWhileFetching) return e.__staleWhileFetching;
        } else if (e !== void 0) return e;
      }
    } finally {
      if (this.#f && this.#r) {
        let e = this.#r, t;
        for (; t = e?.shift(); ) this.#w?.(...t);
      }
    }
  }
  #G(e) {
    let t = this.#a, i = this.#i[t], s = this.#t[t], n = this.#e(s);
    n && s.__abortController.abort(new Error("evicted"));
    let o = n ? s.__staleWhileFetching : s;
    return (this.#T || this.#f) && o !== void 0 && (this.#T && this.#S?.(o, i, "evict"), this.#f && this.#r?.push([o, i, "evict"])), this.#x(t), this.#g?.[t] && (clearTimeout(this.#g[t]), this.#g[t] = void 0), e && (this.#i[t] = void 0, this.#t[t] = void 0, this.#y.push(t)), this.#n === 1 ? (this.#a = this.#h = 0, this.#y.length = 0) : this.#a = this.#l[t], this.#s.delete(i), this.#n--, t;
  }
  has(e, t = {}) {
    let { status: i = S.hasSubscribers ? {} : void 0 } = t;
    t.status = i, i && (i.op = "has", i.key = e, i.cache = this);
    let s = this.#Y(e, t);
    return S.hasSubscribers && S.publish(i), s;
  }
  #Y(e, t = {}) {
    let { updateAgeOnHas: i = this.updateAgeOnHas, status: s } = t, n = this.#s.get(e);
    if (n !== void 0) {
      let o = this.#t[n];
      if (this.#e(o) && o.__staleWhileFetching === void 0) return false;
      if (this.#p(n)) s && (s.has = "stale", this.#v(s, n));
      else return i && this.#R(n), s && (s.has = "hit", this.#v(s, n)), true;
    } else s && (s.has = "miss");
    return false;
  }
  peek(e, t = {}) {
    let { status: i = R() ? {} : void 0 } = t;
    i && (i.op = "peek", i.key = e, i.cache = this), t.status = i;
    let s = this.#J(e, t);
    return S.hasSubscribers && S.publish(i), s;
  }
  #J(e, t) {
    let { status: i, allowStale: s = this.allowStale } = t, n = this.#s.get(e);
    if (n === void 0 || !s && this.#p(n)) {
      i && (i.peek = n === void 0 ? "miss" : "stale");
      return;
    }
    let o = this.#t[n], l = this.#e(o) ? o.__staleWhileFetching : o;
    return i && (l !== void 0 ? (i.peek = "hit", i.value = l) : i.peek = "miss"), l;
  }
  #P(e, t, i, s) {
    let n = t === void 0 ? void 0 : this.#t[t];
    if (this.#e(n)) return n;
    let o = new AbortController(), { signal: l } = i;
    l?.addEventListener("abort", () => o.abort(l.reason), { signal: o.signal });
    let h = { signal: o.signal, options: i, context: s }, r = (f, y = false) => {
      let { aborted: a } = o.signal, w = i.ignoreFetchAbort && f !== void 0, F = i.ignoreFetchAbort || !!(i.allowStaleOnFetchAbort && f !== void 0);
      if (i.status && (a && !y ? (i.status.fetchAborted = true, i.status.fetchError = o.signal.reason, w && (i.status.fetchAbortIgnored = true)) : i.status.fetchResolved = true), a && !w && !y) return m(o.signal.reason, F);
      let b = u, p = this.#t[t];
      return (p === u || p === void 0 && w && y) && (f === void 0 ? b.__staleWhileFetching !== void 0 ? this.#t[t] = b.__staleWhileFetching : this.#E(e, "fetch") : (i.status && (i.status.fetchUpdated = true), this.#W(e, f, h.options, b))), f;
    }, c = (f) => (i.status && (i.status.fetchRejected = true, i.status.fetchError = f), m(f, false)), m = (f, y) => {
      let { aborted: a } = o.signal, w = a && i.allowStaleOnFetchAbort, F = w || i.allowStaleOnFetchRejection, b = F || i.noDeleteOnFetchRejection, p = u;
      if (this.#t[t] === u && (!b || !y && p.__staleWhileFetching === void 0 ? this.#E(e, "fetch") : w || (this.#t[t] = p.__staleWhileFetching)), F) return i.status && p.__staleWhileFetching !== void 0 && (i.status.returnedStale = true), p.__staleWhileFetching;
      if (p.__returned === p) throw f;
    }, _ = (f, y) => {
      let a = this.#M?.(e, n, h);
      o.signal.addEventListener("abort", () => {
        (!i.ignoreFetchAbort || i.allowStaleOnFetchAbort) && (f(void 0), i.allowStaleOnFetchAbort && (f = (w) => r(w, true)));
      }), a && a instanceof Promise ? a.then((w) => f(w === void 0 ? void 0 : w), y) : a !== void 0 && f(a);
    };
    i.status && (i.status.fetchDispatched = true);
    let u = new Promise(_).then(r, c), g = Object.assign(u, { __abortController: o, __staleWhileFetching: n, __returned: void 0 });
    return t === void 0 ? (this.#W(e, g, { ...h.options, status: void 0 }), t = this.#s.get(e)) : this.#t[t] = g, g;
  }
  #e(e) {
    if (!this.#U) return false;
    let t = e;
    return !!t && t instanceof Promise && t.hasOwnProperty("__staleWhileFetching") && t.__abortController instanceof AbortController;
  }
  fetch(e, t = {}) {
    let i = W.hasSubscribers, { status: s = R() ? {} : void 0 } = t;
    t.status = s, s && t.context && (s.context = t.context);
    let n = this.#B(e, t);
    return s && i && (s.trace = true, W.tracePromise(() => n, s).catch(() => {
    })), n;
  }
  async #B(e, t = {}) {
    let { allowStale: i = this.allowStale, updateAgeOnGet: s = this.updateAgeOnGet, noDeleteOnStaleGet: n = this.noDeleteOnStaleGet, ttl: o = this.ttl, noDisposeOnSet: l = this.noDisposeOnSet, size: h = 0, sizeCalculation: r = this.sizeCalculation, noUpdateTTL: c = this.noUpdateTTL, noDeleteOnFetchRejection: m = this.noDeleteOnFetchRejection, allowStaleOnFetchRejection: _ = this.allowStaleOnFetchRejection, ignoreFetchAbort: u = this.ignoreFetchAbort, allowStaleOnFetchAbort: g = this.allowStaleOnFetchAbort, context: f, forceRefresh: y = false, status: a, signal: w } = t;
    if (a && (a.op = "fetch", a.key = e, y && (a.forceRefresh = true), a.cache = this), !this.#U) return a && (a.fetch = "get"), this.#C(e, { allowStale: i, updateAgeOnGet: s, noDeleteOnStaleGet: n, status: a });
    let F = { allowStale: i, updateAgeOnGet: s, noDeleteOnStaleGet: n, ttl: o, noDisposeOnSet: l, size: h, sizeCalculation: r, noUpdateTTL: c, noDeleteOnFetchRejection: m, allowStaleOnFetchRejection: _, allowStaleOnFetchAbort: g, ignoreFetchAbort: u, status: a, signal: w }, b = this.#s.get(e);
    if (b === void 0) {
      a && (a.fetch = "miss");
      let p = this.#P(e, b, F, f);
      return p.__returned = p;
    } else {
      let p = this.#t[b];
      if (this.#e(p)) {
        let v = i && p.__staleWhileFetching !== void 0;
        return a && (a.fetch = "inflight", v && (a.returnedStale = true)), v ? p.__staleWhileFetching : p.__returned = p;
      }
      let A = this.#p(b);
      if (!y && !A) return a && (a.fetch = "hit"), this.#L(b), s && this.#R(b), a && this.#v(a, b), p;
      let z = this.#P(e, b, F, f), E = z.__staleWhileFetching !== void 0 && i;
      return a && (a.fetch = A ? "stale" : "refresh", E && A && (a.returnedStale = true)), E ? z.__staleWhileFetching : z.__returned = z;
    }
  }
  forceFetch(e, t = {}) {
    let i = W.hasSubscribers, { status: s = R() ? {} : void 0 } = t;
    t.status = s, s && t.context && (s.context = t.context);
    let n = this.#K(e, t);
    return s && i && (s.trace = true, W.tracePromise(() => n, s).catch(() => {
    })), n;
  }
  async #K(e, t = {}) {
    let i = await this.#B(e, t);
    if (i === void 0) throw new Error("fetch() returned undefined");
    return i;
  }
  memo(e, t = {}) {
    let { status: i = S.hasSubscribers ? {} : void 0 } = t;
    t.status = i, i && (i.op = "memo", i.key = e, t.context && (i.context = t.context), i.cache = this);
    let s = this.#Q(e, t);
    return i && (i.value = s), S.hasSubscribers && S.publish(i), s;
  }
  #Q(e, t = {}) {
    let i = this.#I;
    if (!i) throw new Error("no memoMethod provided to constructor");
    let { context: s, status: n, forceRefresh: o, ...l } = t;
    n && o && (n.forceRefresh = true);
    let h = this.#C(e, l), r = o || h === void 0;
    if (n && (n.memo = r ? "miss" : "hit", r || (n.value = h)), !r) return h;
    let c = i(e, h, { options: l, context: s });
    return n && (n.value = c), this.#W(e, c, l), c;
  }
  get(e, t = {}) {
    let { status: i = S.hasSubscribers ? {} : void 0 } = t;
    t.status = i, i && (i.op = "get", i.key = e, i.cache = this);
    let s = this.#C(e, t);
    return i && (s !== void 0 && (i.value = s), S.hasSubscribers && S.publish(i)), s;
  }
  #C(e, t = {}) {
    let { allowStale: i = this.allowStale, updateAgeOnGet: s = this.updateAgeOnGet, noDeleteOnStaleGet: n = this.noDeleteOnStaleGet, status: o } = t, l = this.#s.get(e);
    if (l === void 0) {
      o && (o.get = "miss");
      return;
    }
    let h = this.#t[l], r = this.#e(h);
    return o && this.#v(o, l), this.#p(l) ? r ? (o && (o.get = "stale-fetching"), i && h.__staleWhileFetching !== void 0 ? (o && (o.returnedStale = true), h.__staleWhileFetching) : void 0) : (n || this.#E(e, "expire"), o && (o.get = "stale"), i ? (o && (o.returnedStale = true), h) : void 0) : (o && (o.get = r ? "fetching" : "hit"), this.#L(l), s && this.#R(l), r ? h.__staleWhileFetching : h);
  }
  #$(e, t) {
    this.#u[t] = e, this.#l[e] = t;
  }
  #L(e) {
    e !== this.#h && (e === this.#a ? this.#a = this.#l[e] : this.#$(this.#u[e], this.#l[e]), this.#$(this.#h, e), this.#h = e);
  }
  delete(e) {
    return this.#E(e, "delete");
  }
  #E(e, t) {
    S.hasSubscribers && S.publish({ op: "delete", delete: t, key: e, cache: this });
    let i = false;
    if (this.#n !== 0) {
      let s = this.#s.get(e);
      if (s !== void 0) if (this.#g?.[s] && (clearTimeout(this.#g[s]), this.#g[s] = void 0), i = true, this.#n === 1) this.#q(t);
      else {
        this.#x(s);
        let n = this.#t[s];
        if (this.#e(n) ? n.__abortController.abort(new Error("deleted")) : (this.#T || this.#f) && (this.#T && this.#S?.(n, e, t), this.#f && this.#r?.push([n, e, t])), this.#s.delete(e), this.#i[s] = void 0, this.#t[s] = void 0, s === this.#h) this.#h = this.#u[s];
        else if (s === this.#a) this.#a = this.#l[s];
        else {
          let o = this.#u[s];
          this.#l[o] = this.#l[s];
          let l = this.#l[s];
          this.#u[l] = this.#u[s];
        }
        this.#n--, this.#y.push(s);
      }
    }
    if (this.#f && this.#r?.length) {
      let s = this.#r, n;
      for (; n = s?.shift(); ) this.#w?.(...n);
    }
    return i;
  }
  clear() {
    return this.#q("delete");
  }
  #q(e) {
    for (let t of this.#z({ allowStale: true })) {
      let i = this.#t[t];
      if (this.#e(i)) i.__abortController.abort(new Error("deleted"));
      else {
        let s = this.#i[t];
        this.#T && this.#S?.(i, s, e), this.#f && this.#r?.push([i, s, e]);
      }
    }
    if (this.#s.clear(), this.#t.fill(void 0), this.#i.fill(void 0), this.#d && this.#F) {
      this.#d.fill(0), this.#F.fill(0);
      for (let t of this.#g ?? []) t !== void 0 && clearTimeout(t);
      this.#g?.fill(void 0);
    }
    if (this.#_ && this.#_.fill(0), this.#a = 0, this.#h = 0, this.#y.length = 0, this.#b = 0, this.#n = 0, this.#f && this.#r) {
      let t = this.#r, i;
      for (; i = t?.shift(); ) this.#w?.(...i);
    }
  }
};

// src/store/entry-bound.ts
function entryBound(max) {
  return { maxSize: max, sizeCalculation: () => 1 };
}

// src/auth/verify-queue.ts
var verifyQueueDefaults = { maxInFlight: 8, maxQueued: 1024, maxPerFlow: 8, maxWaitMs: 3e3 };
function createVerifyQueue(options) {
  const { maxInFlight, maxQueued, maxPerFlow, maxWaitMs, now } = options;
  const clean = /* @__PURE__ */ new Map();
  const dirty = /* @__PURE__ */ new Map();
  const marked = /* @__PURE__ */ new WeakSet();
  let running = 0;
  let queued = 0;
  let averageMs = 100;
  const retryAfterSeconds = () => Math.min(60, Math.max(1, Math.ceil((queued + running) / maxInFlight * averageMs / 1e3)));
  const busy = () => ({ kind: "busy", retryAfterSeconds: retryAfterSeconds() });
  function remove(entry2) {
    const ring = marked.has(entry2.waiter.flow) ? [dirty, clean] : [clean, dirty];
    for (const map of ring) {
      const state = map.get(entry2.waiter.flow);
      const at = state ? state.entries.indexOf(entry2) : -1;
      if (state === void 0 || at < 0) continue;
      state.entries.splice(at, 1);
      if (state.entries.length === 0) map.delete(entry2.waiter.flow);
      queued -= 1;
      return;
    }
  }
  function begin(entry2) {
    if (entry2.timer !== null) clearTimeout(entry2.timer);
    running += 1;
    const started = now();
    entry2.start().then(
      (value) => finish(entry2, started, value),
      (error) => finish(entry2, started, Promise.reject(error))
    );
  }
  function finish(entry2, started, value) {
    running -= 1;
    averageMs = averageMs * 0.8 + (now() - started) * 0.2;
    entry2.settle(value);
    pump();
  }
  function next() {
    for (const ring of [clean, dirty]) {
      const first = ring.entries().next();
      if (first.done === true) continue;
      const [flow, state] = first.value;
      const entry2 = state.entries.shift();
      ring.delete(flow);
      if (state.entries.length > 0) ring.set(flow, state);
      queued -= 1;
      return entry2;
    }
    return void 0;
  }
  function pump() {
    while (running < maxInFlight) {
      const entry2 = next();
      if (entry2 === void 0) return;
      if (entry2.waiter.live()) begin(entry2);
      else {
        if (entry2.timer !== null) clearTimeout(entry2.timer);
        entry2.settle(busy());
      }
    }
  }
  function evictFor(flow) {
    const mine = (clean.get(flow) ?? dirty.get(flow))?.entries.length ?? 0;
    let fullest = null;
    for (const ring of [dirty, clean]) {
      for (const state of ring.values()) if (fullest === null || state.entries.length > fullest.entries.length) fullest = state;
      if (fullest !== null && fullest.entries.length > mine + 1) break;
    }
    if (fullest === null || fullest.entries.length <= mine + 1) return false;
    const victim = fullest.entries[fullest.entries.length - 1];
    remove(victim);
    if (victim.timer !== null) clearTimeout(victim.timer);
    victim.settle(busy());
    return true;
  }
  return {
    /**
     * Run `start` (one upstream verification) when a slot is free: its result, or `Busy` when it could not
     * start within the bounds. Never rejects unless `start` does.
     */
    run(waiter, start) {
      return new Promise((resolve) => {
        const entry2 = { waiter, start, settle: resolve, timer: null };
        if (running < maxInFlight && queued === 0) return begin(entry2);
        const ring = marked.has(waiter.flow) ? dirty : clean;
        const state = ring.get(waiter.flow);
        if ((state?.entries.length ?? 0) >= maxPerFlow) return resolve(busy());
        if (queued >= maxQueued && !evictFor(waiter.flow)) return resolve(busy());
        if (state === void 0) ring.set(waiter.flow, { entries: [entry2] });
        else state.entries.push(entry2);
        queued += 1;
        entry2.timer = setTimeout(() => {
          entry2.timer = null;
          remove(entry2);
          resolve(busy());
        }, maxWaitMs);
        entry2.timer.unref();
      });
    },
    /** Mark `flow` as one that sent a key upstream rejected: from now on it is served after clean flows. */
    penalize(flow) {
      if (marked.has(flow)) return;
      marked.add(flow);
      const state = clean.get(flow);
      if (state === void 0) return;
      clean.delete(flow);
      dirty.set(flow, state);
    },
    /** Verifications running and waiting now. */
    size: () => ({ running, queued })
  };
}
function sharedVerification(pending2, queue, id, waiter, ask, rejected) {
  const running = pending2.get(id);
  if (running !== void 0) {
    running.waiters.push(waiter);
    return running.promise;
  }
  const waiters = [waiter];
  const asked = () => ask().then((outcome) => {
    if (rejected(outcome)) for (const w of waiters) queue.penalize(w.flow);
    return outcome;
  });
  const promise = queue.run({ flow: waiter.flow, live: () => waiters.some((w) => w.live()) }, asked).finally(() => pending2.delete(id));
  pending2.set(id, { promise, waiters });
  return promise;
}

// src/auth/introspect.ts
var keyExpiresInHeader = "x-flag-sidecar-key-expires-in";
function answerTtlMs(header3, ttlMs) {
  const text2 = (Array.isArray(header3) ? header3[0] : header3)?.trim();
  if (text2 === void 0 || !/^-?\d{1,12}$/.test(text2)) return ttlMs;
  return Math.min(ttlMs, Number(text2) * 1e3);
}
var isObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
var isListOf = (value, item) => Array.isArray(value) && value.every(item);
var isString = (v) => typeof v === "string";
var isId = (v) => Number.isInteger(v);
function principalFromRecord(record, digest) {
  if (!isObject(record)) return null;
  const { scopes, scoped_teams: teams, scoped_organizations: orgs } = record;
  if (scopes !== null && !isListOf(scopes, isString)) return null;
  if (teams !== void 0 && teams !== null && !isListOf(teams, isId)) return null;
  if (orgs !== void 0 && orgs !== null && !isListOf(orgs, isString)) return null;
  if (Array.isArray(orgs) && orgs.length > 0) return "refused";
  const label = typeof record.label === "string" && record.label !== "" ? record.label : "personal API key";
  return Object.freeze({
    label,
    keyPrefix: digest.slice(0, 12),
    scopes: new Set(scopes !== null && scopes.length > 0 ? scopes : ["*"]),
    projects: Array.isArray(teams) && teams.length > 0 ? new Set(teams) : null,
    kind: "introspected",
    legacy: scopes === null || scopes.length === 0
  });
}
function createIntrospector(deps) {
  const { client, metrics, logger, now } = deps;
  const known = new I(entryBound(deps.maxEntries));
  const rejected = new I(entryBound(deps.maxEntries));
  const inFlight = /* @__PURE__ */ new Map();
  function recordOf(digest, { result, expiresAt }) {
    const times = { digest, ...recordTimes(expiresAt, deps.ttlMs, deps.graceMs) };
    return result.kind === "principal" ? { type: "principal", ...times, principal: principalFacts(result.principal) } : { type: "refused", ...times };
  }
  function remember2(digest, entry2) {
    (entry2.result.kind === "invalid" ? rejected : known).set(digest, entry2);
    if (entry2.result.kind !== "invalid") rejected.delete(digest);
    if (entry2.result.kind !== "invalid" || known.delete(digest)) deps.onChange?.();
  }
  function keep(digest, result, ttlMs) {
    const at = now();
    const entry2 = { result, expiresAt: at + ttlMs };
    remember2(digest, entry2);
    if (result.kind === "invalid") deps.shared?.write({ kind: "unknown", digest, projectId: null, vouchedAt: at, expiresAt: entry2.expiresAt });
    else deps.shared?.write({ kind: "record", record: recordOf(digest, entry2) });
    return result;
  }
  function adopt(digest, shared) {
    if (shared.kind === "unknown") {
      remember2(digest, { result: { kind: "invalid" }, expiresAt: shared.expiresAt });
      return true;
    }
    if (shared.kind !== "record" || shared.record.type === "grant") return false;
    const { record } = shared;
    const result = record.type === "principal" ? { kind: "principal", principal: principalFromFacts(digest, record.principal) } : { kind: "refused" };
    const mine = known.get(digest);
    if (mine === void 0 || mine.expiresAt < record.expiresAt) remember2(digest, { result, expiresAt: record.expiresAt });
    return now() < record.expiresAt;
  }
  function fresh(digest) {
    const entry2 = rejected.get(digest) ?? known.get(digest);
    return entry2 && now() < entry2.expiresAt ? entry2 : void 0;
  }
  async function ask(key, digest) {
    const started = performance2.now();
    const result = await client.request({
      operation: "introspect_key",
      method: "GET",
      path: "/api/personal_api_keys/@current/",
      headers: { authorization: `Bearer ${key}`, accept: "application/json" }
    });
    const observe = (outcome) => {
      metrics.introspections.inc({ outcome });
      metrics.introspectionDuration.observe((performance2.now() - started) / 1e3);
    };
    if (result.kind === "response" && result.status === 200) {
      const ttlMs = answerTtlMs(result.headers[keyExpiresInHeader], deps.ttlMs);
      let record = null;
      try {
        record = JSON.parse(result.body.toString("utf8"));
      } catch {
      }
      const principal = principalFromRecord(record, digest);
      if (principal === "refused") {
        observe("valid");
        return keep(digest, { kind: "refused" }, ttlMs);
      }
      if (principal) {
        observe("valid");
        return keep(digest, { kind: "principal", principal }, ttlMs);
      }
      observe("invalid_body");
      return fallback(digest, "upstream sent an unreadable key record");
    }
    if (result.kind === "response" && result.status === 401) {
      observe("rejected");
      return keep(digest, { kind: "invalid" }, deps.negativeTtlMs);
    }
    if (result.kind === "response" && result.status === 403) {
      observe("refused");
      return keep(digest, { kind: "refused" }, deps.ttlMs);
    }
    if (result.kind === "response" && result.status === 429) {
      observe("failed");
      const retryAfterMs = parseRetryAfter(typeof result.headers["retry-after"] === "string" ? result.headers["retry-after"] : void 0, now());
      const busy = { kind: "busy", retryAfterSeconds: Math.min(60, Math.max(1, Math.ceil((retryAfterMs ?? 1e3) / 1e3))) };
      return busy;
    }
    const reason = result.kind === "response" ? `upstream answered ${result.status}` : `${result.cause} (${result.code})`;
    observe("failed");
    logger.warn({ keyPrefix: digest.slice(0, 12), cause: reason }, "key introspection failed");
    return fallback(digest, reason);
  }
  function stale(digest) {
    const entry2 = known.get(digest);
    if (!entry2 || now() - entry2.expiresAt > deps.graceMs) return null;
    metrics.principalCache.inc({ result: "stale" });
    return entry2.result;
  }
  function fallback(digest, reason) {
    return stale(digest) ?? { kind: "unavailable", reason };
  }
  return {
    /** What is known about `key`, whose SHA-256 hex is `digest`, asked for by `waiter`. */
    lookup(key, digest, waiter) {
      const entry2 = fresh(digest);
      if (entry2) {
        metrics.principalCache.inc({ result: "hit" });
        return entry2.result;
      }
      metrics.principalCache.inc({ result: "miss" });
      const verify = () => {
        const result = sharedVerification(inFlight, deps.queue, digest, waiter, () => ask(key, digest), (outcome) => outcome.kind === "invalid");
        return result.then((outcome) => outcome.kind === "busy" ? stale(digest) ?? outcome : outcome);
      };
      const shared = deps.shared;
      if (!shared) return verify();
      return shared.readKey(digest).then((found) => {
        const answered = fresh(digest) ?? (found !== null && adopt(digest, found) ? fresh(digest) : void 0);
        return answered ? answered.result : verify();
      });
    },
    /**
     * Milliseconds until the remembered answer describing `digest` (a principal) expires - negative once past its
     * TTL, while it is kept for the grace period - or null when none is remembered.
     */
    expiresIn(digest) {
      const entry2 = known.peek(digest);
      return entry2 === void 0 || entry2.result.kind !== "principal" ? null : entry2.expiresAt - now();
    },
    /** The remembered positive answers as key records, most recently used first. */
    records: () => [...known.entries()].map(([digest, entry2]) => recordOf(digest, entry2)),
    /** Remember answers from key records (admitted ones: see key-records.ts), the first as most recently used. */
    restore(records) {
      for (const r of [...records].reverse()) {
        if (r.type === "principal") known.set(r.digest, { result: { kind: "principal", principal: principalFromFacts(r.digest, r.principal) }, expiresAt: r.expiresAt });
        if (r.type === "refused") known.set(r.digest, { result: { kind: "refused" }, expiresAt: r.expiresAt });
      }
    }
  };
}

// src/auth/key-record-file.ts
import { mkdir, open } from "node:fs/promises";
import { join } from "node:path";
var keyRecordsFileName = "key-records.json";
function createKeyRecordFile(deps) {
  const { dir, logger, metrics } = deps;
  const file = join(dir, keyRecordsFileName);
  const write = deps.write ?? writeFileAtomic;
  async function read2() {
    const handle = await open(file, "r").catch((error) => {
      if (error.code === "ENOENT") return null;
      throw error;
    });
    if (handle === null) return null;
    try {
      const info = await handle.stat();
      if (!info.isFile()) throw new KeyRecordsError("not a regular file");
      if ((info.mode & 18) !== 0) throw new KeyRecordsError(`others may write it (mode ${(info.mode & 511).toString(8)})`);
      const limit = maxRecordsFileBytes(deps.maxRecords);
      if (info.size > limit) throw new KeyRecordsError(`${info.size} bytes, more than ${limit}`);
      return await handle.readFile("utf8");
    } finally {
      await handle.close();
    }
  }
  return {
    async load() {
      try {
        const text2 = await read2();
        if (text2 === null) return [];
        const records = parseKeyRecords(text2, deps.maxRecords);
        metrics.keyRecordFile.inc({ operation: "load", outcome: "ok" });
        return records;
      } catch (error) {
        metrics.keyRecordFile.inc({ operation: "load", outcome: "ignored" });
        logger.warn({ file, err: error.message }, "ignoring unusable key records");
        return [];
      }
    },
    async save(records) {
      try {
        await mkdir(dir, { recursive: true });
        await write(file, serializeKeyRecords(records, deps.now(), deps.maxRecords));
        metrics.keyRecordFile.inc({ operation: "save", outcome: "ok" });
      } catch (error) {
        metrics.keyRecordFile.inc({ operation: "save", outcome: "failed" });
        throw error;
      }
    }
  };
}

// src/auth/key-record-sync.ts
function createKeyRecordSync(deps) {
  const { store, sources, logger } = deps;
  let dirty = false;
  let timer = null;
  let writing = null;
  function collect() {
    const now = deps.now();
    return sources.flatMap((s) => s.records()).filter((r) => r.graceUntil >= now).sort((a, b) => b.vouchedAt - a.vouchedAt);
  }
  function schedule() {
    if (timer !== null) return;
    timer = setTimeout(() => void write(), deps.intervalMs);
    timer.unref();
  }
  function write() {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    writing ??= (async () => {
      while (dirty) {
        dirty = false;
        try {
          await store.save(collect());
        } catch (error) {
          dirty = true;
          logger.error({ err: error.message }, "could not persist key records");
          schedule();
          return;
        }
      }
    })().finally(() => {
      writing = null;
    });
    return writing;
  }
  return {
    /** Load the stored records into the sources; returns how many were restored. Never rejects. */
    async restore() {
      const stored = await store.load();
      let records;
      try {
        records = admitAll(stored, { now: deps.now(), ttlMs: deps.ttlMs, graceMs: deps.graceMs });
      } catch (error) {
        logger.warn({ err: error.message }, "ignoring unusable key records");
        return 0;
      }
      for (const source of sources) source.restore(records);
      if (stored.length > 0) logger.info({ restored: records.length, expired: stored.length - records.length }, "restored verified key records");
      return records.length;
    },
    /** Note that a source's records changed: written within `intervalMs`. */
    changed() {
      dirty = true;
      schedule();
    },
    /** Write pending changes now (at shutdown); resolves when written or failed. Never rejects. */
    async flush() {
      if (timer !== null) clearTimeout(timer);
      timer = null;
      if (writing) await writing;
      if (dirty) await write();
      if (timer !== null) clearTimeout(timer);
      timer = null;
    }
  };
}

// src/auth/principal.ts
import { hash } from "node:crypto";
var digestKey = (key) => hash("sha256", key, "hex");
function digestsEqual(a, b) {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}
function createPrincipalResolver(sources) {
  const entry2 = (digest, principal) => ({
    digest,
    principal: Object.freeze({ ...principal, keyPrefix: digest.slice(0, 12) })
  });
  const entries = sources.staticKeys.map(
    (k2) => entry2(k2.digest, {
      label: k2.label,
      scopes: new Set(k2.scopes),
      projects: k2.projects === null ? null : new Set(k2.projects),
      kind: "static"
    })
  );
  if (sources.ownKey !== null) {
    entries.unshift(
      entry2(digestKey(sources.ownKey), {
        label: "sidecar upstream key",
        scopes: /* @__PURE__ */ new Set(["feature_flag:read"]),
        projects: new Set(sources.ownProjects),
        kind: "own"
      })
    );
  }
  function resolveDigest(digest) {
    let found = null;
    for (const e of entries) {
      if (digestsEqual(e.digest, digest) && found === null) found = e.principal;
    }
    return found;
  }
  return {
    /** Label and digest prefix of every known key, for /status (never the key). */
    describe: () => entries.map((e) => ({ label: e.principal.label, keyPrefix: e.principal.keyPrefix })),
    /** The known principal for `key`, or null. */
    resolve: (key) => resolveDigest(digestKey(key)),
    resolveDigest
  };
}

// src/auth/secret-keys.ts
function refusalFrom(body) {
  try {
    const value = JSON.parse(body.toString("utf8"));
    if (value.type === "authentication_error" && typeof value.code === "string" && typeof value.detail === "string") {
      return new ApiError(403, "authentication_error", value.code, value.detail, typeof value.attr === "string" ? value.attr : null);
    }
  } catch {
  }
  return permissionDenied();
}
function passedThrough(status, body) {
  try {
    const value = JSON.parse(body.toString("utf8"));
    const types = ["invalid_request", "throttled_error"];
    if (typeof value.type === "string" && types.includes(value.type) && typeof value.code === "string" && typeof value.detail === "string") {
      return new ApiError(status, value.type, value.code, value.detail, typeof value.attr === "string" ? value.attr : null);
    }
  } catch {
  }
  return status === 404 ? projectNotFound() : new ApiError(429, "throttled_error", "throttled", "Request was throttled.");
}
function createSecretKeyVerifier(deps) {
  const { client, store, metrics, logger, now } = deps;
  const granted = new I(entryBound(deps.maxEntries));
  const refused = new I(entryBound(deps.maxEntries));
  const inFlight = /* @__PURE__ */ new Map();
  const principalFor = (digest, projectId) => Object.freeze({
    label: "key granted by upstream",
    keyPrefix: digest.slice(0, 12),
    scopes: /* @__PURE__ */ new Set(["feature_flag:read"]),
    projects: /* @__PURE__ */ new Set([projectId]),
    kind: "introspected"
  });
  async function ask(key, digest, projectId) {
    const etag = store.get(projectId)?.cohorts?.upstreamEtag;
    const result = await client.request({
      operation: "verify_secret_key",
      method: "GET",
      path: `/api/projects/${projectId}/feature_flags/local_evaluation/?send_cohorts`,
      headers: { authorization: `Bearer ${key}`, accept: "application/json", ...etag ? { "if-none-match": etag } : {} }
    });
    const at = now();
    const status = result.kind === "response" ? result.status : null;
    const shared = deps.shared;
    if (result.kind === "response" && (status === 404 || status === 429)) {
      metrics.introspections.inc({ outcome: "failed" });
      return passedThrough(result.status === 404 ? 404 : 429, result.body);
    }
    if (status === 200 || status === 304 || status === 402) {
      metrics.introspections.inc({ outcome: "valid" });
      const entry2 = { principal: principalFor(digest, projectId), refusal: null, expiresAt: at + deps.ttlMs };
      granted.set(`${digest}:${projectId}`, entry2);
      refused.delete(`${digest}:${projectId}`);
      deps.onChange?.();
      shared?.write({ kind: "record", record: { type: "grant", digest, projectId, ...recordTimes(entry2.expiresAt, deps.ttlMs, deps.graceMs) } });
      return entry2;
    }
    if (result.kind === "response" && (status === 401 || status === 403)) {
      metrics.introspections.inc({ outcome: "rejected" });
      const refusal2 = status === 401 ? 401 : refusalFrom(result.body);
      const entry2 = { principal: null, refusal: refusal2, expiresAt: at + deps.negativeTtlMs };
      refused.set(`${digest}:${projectId}`, entry2);
      if (granted.delete(`${digest}:${projectId}`)) deps.onChange?.();
      if (shared) {
        const times = { digest, vouchedAt: at, expiresAt: entry2.expiresAt };
        if (refusal2 === 401) {
          shared.write({ kind: "unknown", ...times, projectId });
          shared.write({ kind: "unknown", ...times, projectId: null });
        } else {
          shared.write({ kind: "denied", ...times, projectId, denial: { code: refusal2.code, detail: refusal2.detail, attr: refusal2.attr } });
        }
      }
      return entry2;
    }
    metrics.introspections.inc({ outcome: "failed" });
    logger.warn(
      { keyPrefix: digest.slice(0, 12), project: projectId, cause: result.kind === "response" ? `upstream answered ${result.status}` : result.cause },
      "secret key verification failed"
    );
    return null;
  }
  function fresh(cacheKey) {
    const entry2 = refused.get(cacheKey) ?? granted.get(cacheKey);
    return entry2 && now() < entry2.expiresAt ? entry2 : void 0;
  }
  function adopt(cacheKey, projectId, shared) {
    if (shared.kind === "unknown" || shared.kind === "denied") {
      const refusal2 = shared.kind === "unknown" ? 401 : new ApiError(403, "authentication_error", shared.denial.code, shared.denial.detail, shared.denial.attr);
      refused.set(cacheKey, { principal: null, refusal: refusal2, expiresAt: shared.expiresAt });
      if (granted.delete(cacheKey)) deps.onChange?.();
      return true;
    }
    const { record } = shared;
    if (record.type !== "grant" || record.projectId !== projectId) return false;
    const mine = granted.get(cacheKey);
    if (mine === void 0 || mine.expiresAt < record.expiresAt) {
      granted.set(cacheKey, { principal: principalFor(record.digest, projectId), refusal: null, expiresAt: record.expiresAt });
      refused.delete(cacheKey);
      deps.onChange?.();
    }
    return now() < record.expiresAt;
  }
  function settle(entry2, cacheKey, source) {
    if (entry2 instanceof ApiError) return entry2;
    if (entry2 === null || "kind" in entry2) {
      const old = granted.get(cacheKey);
      if (old?.principal && now() - old.expiresAt <= deps.graceMs) {
        metrics.principalCache.inc({ result: "stale" });
        return old.principal;
      }
      if (entry2 !== null) return new VerifierBusyError(entry2.retryAfterSeconds);
      return unavailable("This API key cannot be verified right now: upstream is unreachable. Try again shortly.");
    }
    if (entry2.principal) return entry2.principal;
    return entry2.refusal === 401 || entry2.refusal === null ? invalidPersonalKey(source) : entry2.refusal;
  }
  return {
    /** Whether `key` (SHA-256 hex `digest`) may read `projectId`, per upstream; `waiter` is the caller. */
    verify(key, digest, projectId, source, waiter) {
      const cacheKey = `${digest}:${projectId}`;
      const entry2 = fresh(cacheKey);
      if (entry2) {
        metrics.principalCache.inc({ result: "hit" });
        return settle(entry2, cacheKey, source);
      }
      metrics.principalCache.inc({ result: "miss" });
      const unknownKey = (result) => result !== null && !(result instanceof ApiError) && result.refusal === 401;
      const verify = () => sharedVerification(inFlight, deps.queue, cacheKey, waiter, () => ask(key, digest, projectId), unknownKey).then(
        (result) => settle(result, cacheKey, source)
      );
      const shared = deps.shared;
      if (!shared) return verify();
      return shared.readGrant(digest, projectId).then((found) => {
        const answered = fresh(cacheKey) ?? (found !== null && adopt(cacheKey, projectId, found) ? fresh(cacheKey) : void 0);
        return answered ? settle(answered, cacheKey, source) : verify();
      });
    },
    /** The grants as key records, most recently used first. */
    records: () => [...granted.entries()].map(([cacheKey, { expiresAt }]) => {
      const [digest = "", project = ""] = cacheKey.split(":");
      return { type: "grant", digest, projectId: Number(project), ...recordTimes(expiresAt, deps.ttlMs, deps.graceMs) };
    }),
    /** Remember grants from key records (admitted ones: see key-records.ts), the first as most recently used. */
    restore(records) {
      for (const r of [...records].reverse()) {
        if (r.type === "grant") granted.set(`${r.digest}:${r.projectId}`, { principal: principalFor(r.digest, r.projectId), refusal: null, expiresAt: r.expiresAt });
      }
    }
  };
}

// src/auth/key-verification.ts
var keyRecordsWriteIntervalMs = 5e3;
async function createKeyVerification(deps) {
  const { config, store, upstream, shared, metrics, logger, now } = deps;
  const resolver = createPrincipalResolver({
    ownKey: config.upstream?.key ?? null,
    ownProjects: store.projectIds(),
    staticKeys: deps.staticKeys
  });
  let keyRecords = null;
  const onChange = () => keyRecords?.changed();
  const queue = createVerifyQueue({ ...verifyQueueDefaults, now: () => performance3.now() });
  const introspector = upstream && config.upstream ? createIntrospector({ client: upstream, metrics, logger, now, queue, onChange, shared, ...config.auth }) : null;
  const secretKeys = upstream && config.upstream ? createSecretKeyVerifier({ client: upstream, store, metrics, logger, now, queue, onChange, shared, ...config.auth }) : null;
  if (config.snapshotDir && introspector && secretKeys) {
    keyRecords = createKeyRecordSync({
      store: createKeyRecordFile({ dir: config.snapshotDir, maxRecords: config.auth.maxEntries, logger, metrics, now }),
      sources: [introspector, secretKeys],
      logger,
      now,
      ttlMs: config.auth.ttlMs,
      graceMs: config.auth.graceMs,
      intervalMs: keyRecordsWriteIntervalMs
    });
    await keyRecords.restore();
  }
  return { resolver, introspector, secretKeys, keyRecords };
}

// src/http/access-log.ts
import { createHash } from "node:crypto";
function codeOf(body) {
  if (body === null || body.length === 0 || body.length > 4096) return null;
  try {
    const parsed = JSON.parse(body.toString("utf8"));
    const code = typeof parsed?.code === "string" ? parsed.code : typeof parsed?.type === "string" ? parsed.type : null;
    return code !== null && /^[A-Za-z0-9_.:-]{1,64}$/.test(code) ? code : null;
  } catch {
    return null;
  }
}
function keyFields(headers, query) {
  const credential = extractCredential(headers.authorization, query);
  if (credential === null) return { keyKind: "none" };
  const kind = credential.key.startsWith("phc_") ? "project_token" : keyKind(credential.key);
  return { keyKind: kind, keySha256: createHash("sha256").update(credential.key).digest("hex").slice(0, 8) };
}
function createAccessLog(options) {
  const { logger, mode, now } = options;
  const capacity = Math.max(1, options.ratePerSecond);
  const refusalLevel = options.listener === "ops" ? "debug" : "info";
  const successLevel = options.listener === "api" && mode === "all" ? "info" : "debug";
  let tokens = capacity;
  let filledAt = now();
  let suppressed = 0;
  function take() {
    const at = now();
    tokens = Math.min(capacity, tokens + (at - filledAt) / 1e3 * options.ratePerSecond);
    filledAt = at;
    if (tokens >= 1) {
      tokens -= 1;
      return true;
    }
    if (suppressed++ === 0) setTimeout(report, 1e3).unref();
    return false;
  }
  function report() {
    const count = suppressed;
    suppressed = 0;
    if (count > 0) logger.warn({ access: true, suppressed: count, ratePerSecond: options.ratePerSecond }, "access log lines suppressed (FLAG_SIDECAR_ACCESS_LOG_RATE)");
  }
  return {
    /** Whether refusals (status > 400) are logged. */
    refusals: mode !== "off" && logger.isLevelEnabled(refusalLevel),
    /** Whether successes are logged. */
    successes: mode !== "off" && logger.isLevelEnabled(successLevel),
    /** Log one request (the caller checked `refusals` / `successes` first). */
    write(entry2) {
      if (!take()) return;
      const refused = entry2.status >= 400;
      const line2 = {
        access: true,
        requestId: entry2.requestId,
        route: entry2.route,
        method: entry2.method,
        status: entry2.status,
        durationMs: Math.round(entry2.durationMs * 100) / 100,
        ...keyFields(entry2.headers, entry2.query),
        ...refused ? { reason: entry2.reason ?? codeOf(entry2.body) ?? `status_${entry2.status}` } : {}
      };
      logger[refused ? refusalLevel : successLevel](line2, refused ? "request refused" : "request");
    }
  };
}

// src/http/drain.ts
function createDrain() {
  const inFlight = /* @__PURE__ */ new Set();
  let wake = [];
  const drain = {
    draining: false,
    begin() {
      drain.draining = true;
    },
    track(work) {
      inFlight.add(work);
      const done = () => {
        inFlight.delete(work);
        if (inFlight.size === 0) {
          const waiting = wake;
          wake = [];
          for (const w of waiting) w();
        }
      };
      work.then(done, done);
      return work;
    },
    settled(timeoutMs) {
      if (inFlight.size === 0) return Promise.resolve();
      return new Promise((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        wake.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  };
  return drain;
}

// src/http/router.ts
var later = /* @__PURE__ */ Symbol("answered later");
var trimSlash = (path) => path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
var newNode = () => ({ literal: /* @__PURE__ */ new Map(), param: null, byMethod: /* @__PURE__ */ new Map(), first: null });
function createRouter(routes) {
  const fixed = /* @__PURE__ */ new Map();
  const fixedFirst = /* @__PURE__ */ new Map();
  const root = newNode();
  for (const route of routes) {
    const methods = route.methods.includes("GET") ? [...route.methods, "HEAD"] : route.methods;
    const segments = trimSlash(route.template).split("/");
    if (!route.template.includes(":")) {
      const key = segments.join("/");
      const byMethod = fixed.get(key) ?? /* @__PURE__ */ new Map();
      const found = Object.freeze({ kind: "found", route, params: Object.freeze([]) });
      for (const method of methods) if (!byMethod.has(method)) byMethod.set(method, found);
      fixed.set(key, byMethod);
      if (!fixedFirst.has(key)) fixedFirst.set(key, route);
      continue;
    }
    let node = root;
    for (const segment of segments) {
      if (segment.charCodeAt(0) === 58) node = node.param ??= newNode();
      else {
        let next = node.literal.get(segment);
        if (next === void 0) node.literal.set(segment, next = newNode());
        node = next;
      }
    }
    for (const method of methods) if (!node.byMethod.has(method)) node.byMethod.set(method, route);
    node.first ??= route;
  }
  function walk(node, parts, i, params) {
    if (i === parts.length) return node.first === null ? null : node;
    const part = parts[i];
    const literal = node.literal.get(part);
    if (literal !== void 0) {
      const found = walk(literal, parts, i + 1, params);
      if (found !== null) return found;
    }
    if (node.param !== null && part !== "") {
      params.push(part);
      const found = walk(node.param, parts, i + 1, params);
      if (found !== null) return found;
      params.pop();
    }
    return null;
  }
  const recent = /* @__PURE__ */ new Map();
  const recentMax = 512;
  function walkMatch(method, trimmed) {
    const params = [];
    const node = walk(root, trimmed.split("/"), 0, params);
    if (node === null) return { kind: "not_found" };
    const route = node.byMethod.get(method);
    if (route === void 0) return { kind: "method_not_allowed", route: node.first };
    for (let i = 0; i < params.length; i++) params[i] = decodeURIComponent(params[i]);
    return Object.freeze({ kind: "found", route, params: Object.freeze(params) });
  }
  return function match(method, path) {
    const trimmed = trimSlash(path);
    const exact = fixed.get(trimmed);
    if (exact !== void 0) {
      return exact.get(method) ?? { kind: "method_not_allowed", route: fixedFirst.get(trimmed) };
    }
    const key = `${method} ${trimmed}`;
    let found = recent.get(key);
    if (found === void 0) {
      found = walkMatch(method, trimmed);
      if (recent.size >= recentMax) recent.clear();
      recent.set(key, found);
    }
    return found;
  };
}

// src/auth/key-shape.ts
var prefixedBody = /^[A-Za-z0-9]{1,64}$/;
var legacy = /^[A-Za-z0-9_-]{1,50}$/;
var bearerToken = /^[A-Za-z0-9\-._~+/]+=*$/;
var maxTokenLength = 4096;
function plausibleKey(key, kind) {
  if (kind === "secret") return key.startsWith("phs_") && prefixedBody.test(key.slice(4));
  if (legacy.test(key)) return true;
  if (key.startsWith("phx_") || key.startsWith("phs_")) return prefixedBody.test(key.slice(4));
  return key.length <= maxTokenLength && bearerToken.test(key);
}

// src/auth/authenticate.ts
var unverifiedPrincipal = Object.freeze({
  label: "unverified key",
  keyPrefix: "",
  scopes: /* @__PURE__ */ new Set(),
  projects: /* @__PURE__ */ new Set(),
  kind: "introspected"
});
var newAuthMemo = () => ({ authorization: null, caller: null, at: 0, decision: null });
var authMemoMs = 5e3;
function deny(metrics, reason, error) {
  metrics.authDenials.inc({ reason });
  error.denial = reason;
  throw error;
}
function remember(memo, authorization, caller, now) {
  if (caller.source === "header" && authorization !== void 0) {
    memo.authorization = authorization;
    memo.caller = caller;
    memo.at = now;
  }
  return caller;
}
var waiterOf = (memo, socket) => ({
  flow: memo,
  live: () => socket === void 0 || !socket.destroyed
});
function authenticate(authorization, query, memo, deps, bodyKey, socket) {
  const now = deps.now();
  if (memo.caller !== null) {
    if (now - memo.at < authMemoMs) {
      if (authorization !== void 0 && memo.authorization === authorization) return memo.caller;
    } else {
      memo.authorization = null;
      memo.caller = null;
      memo.decision = null;
    }
  }
  const credential = extractCredential(authorization, query, bodyKey);
  if (credential === null) deny(deps.metrics, "no_credential", notAuthenticated());
  const digest = digestKey(credential.key);
  const kind = credential.source === "header" ? keyKind(credential.key) : "personal";
  const known = deps.resolver.resolveDigest(digest);
  if (known !== null) return remember(memo, authorization, { principal: known, kind, source: credential.source, digest }, now);
  if (kind !== "oauth" && !plausibleKey(credential.key, kind)) deny(deps.metrics, "malformed_key", invalidPersonalKey(credential.source));
  if (kind === "secret" && deps.introspector !== null) {
    return { principal: unverifiedPrincipal, kind, source: credential.source, digest, pendingGrant: { key: credential.key, digest } };
  }
  if (kind === "oauth") deny(deps.metrics, "unknown_key", invalidAccessToken());
  if (deps.introspector === null || kind !== "personal") deny(deps.metrics, "unknown_key", invalidPersonalKey(credential.source));
  const settle = (result) => {
    if (result.kind === "invalid") deny(deps.metrics, "unknown_key", invalidPersonalKey(credential.source));
    if (result.kind === "refused") {
      return { principal: unverifiedPrincipal, kind, source: credential.source, digest, pendingGrant: { key: credential.key, digest } };
    }
    if (result.kind === "busy") deny(deps.metrics, "verifier_busy", new VerifierBusyError(result.retryAfterSeconds));
    if (result.kind === "unavailable") {
      deny(deps.metrics, "unverifiable", unavailable("This API key cannot be verified right now: upstream is unreachable. Try again shortly."));
    }
    return { principal: result.principal, kind, source: credential.source, digest, pendingGrant: { key: credential.key, digest } };
  };
  const looked = deps.introspector.lookup(credential.key, digest, waiterOf(memo, socket));
  return looked instanceof Promise ? looked.then(settle) : settle(looked);
}

// src/auth/scopes.ts
var read = (scope, secretKeyAllowed = false) => ({ scope, secretKeyAllowed });
var none = { scope: null, secretKeyAllowed: false };
var routeAccess = {
  flag_list: read("feature_flag:read"),
  // 1
  flag_create: read("feature_flag:write"),
  // 2
  flag_retrieve: read("feature_flag:read"),
  // 3
  flag_update: read("feature_flag:write"),
  // 4 (PATCH, PUT)
  flag_delete: read("feature_flag:write"),
  // 5 (then 405)
  flag_activity: read("activity_log:read"),
  // 6
  flag_create_static_cohort: none,
  // 7
  flag_dashboard: none,
  // 8
  flag_enrich_usage_dashboard: none,
  // 9
  flag_has_active_dependents: none,
  // 10
  flag_remote_config: read("feature_flag:read", true),
  // 11
  flag_status: read("feature_flag:read"),
  // 12
  flags_activity: read("activity_log:read"),
  // 13
  flag_bulk_keys: read("feature_flag:read"),
  // 14 (served from the snapshot)
  flag_evaluation_reasons: read("feature_flag:read"),
  // 15 (evaluated locally)
  local_evaluation: read("feature_flag:read", true),
  // 16
  flag_my_flags: none,
  // 17
  flag_user_blast_radius: none,
  // 18
  endpoint_update: read("endpoint:write"),
  // 19
  endpoint_delete: read("endpoint:write"),
  // 20
  endpoint_materialization_status: read("endpoint:read"),
  // 21
  endpoint_openapi: read("endpoint:read"),
  // 22
  endpoint_run: read("endpoint:read"),
  // 23, 24 (GET and POST)
  endpoint_versions: read("endpoint:read"),
  // 25
  endpoint_version: read("endpoint:read"),
  // 26
  endpoint_last_execution_times: read("endpoint:read"),
  // 27
  endpoint_list: read("endpoint:read"),
  endpoint_create: read("endpoint:write"),
  endpoint_retrieve: read("endpoint:read"),
  legacy_local_evaluation: read("feature_flag:read", true),
  flag_definitions: read("feature_flag:read", true),
  // OpenFeature (OFREP): checked only for projects that require a key (FLAG_SIDECAR_OFREP_REQUIRE_KEY); the key
  // kinds that may read the definitions may read their values.
  ofrep_evaluate_flag: read("feature_flag:read", true),
  ofrep_evaluate_flags: read("feature_flag:read", true),
  ofrep_configuration: read("feature_flag:read", true),
  // `/api/personal_api_keys/@current/`: older upstreams ask this scope; newer ones (and the sidecar,
  // routes/key-introspection.ts) let any valid personal key read its own record.
  key_introspection: read("personal_api_key:read"),
  // A method the route does not map: upstream finds no action, hence no scope, before it answers 405.
  method_not_allowed: none
};
function hasScope(scopes, required) {
  if (scopes.has("*") || scopes.has(required)) return true;
  return required.endsWith(":read") && scopes.has(`${required.slice(0, -":read".length)}:write`);
}
function checkAccess(principal, key, route, projectId) {
  const access = routeAccess[route];
  if (key.kind === "secret") {
    if (!access.secretKeyAllowed) return invalidPersonalKey(key.source);
    if (projectId !== null && principal.projects !== null && !principal.projects.has(projectId)) return permissionDenied();
    return access.scope === null || hasScope(principal.scopes, access.scope) ? null : permissionDenied();
  }
  if (access.scope === null) return principal.legacy === true ? null : personalKeyNotSupported();
  if (projectId !== null && principal.projects !== null && !principal.projects.has(projectId)) return projectNotInKeyScope(projectId);
  if (!hasScope(principal.scopes, access.scope)) return missingScope(access.scope);
  return null;
}

// src/http/routes/access.ts
function resolveProject(ctx, store, caller, pathId) {
  const token = ctx.method === "GET" || ctx.method === "HEAD" ? ctx.query.get("token") || ctx.query.get("api_key") : void 0;
  if (token) {
    const id = store.projectIdForToken(token);
    if (id === void 0) throw incorrectCredentials();
    return id;
  }
  if (pathId !== null && pathId !== "@current") {
    if (!/^\d+$/.test(pathId) || store.get(Number(pathId)) === void 0) throw projectNotFound();
    return Number(pathId);
  }
  const served = store.projectIds();
  if (served.length === 1) return served[0];
  const own = caller.principal.projects ? served.filter((id) => caller.principal.projects?.has(id)) : [];
  if (own.length === 1) return own[0];
  return null;
}
var denialReason = (error) => error instanceof VerifierBusyError ? "verifier_busy" : { 503: "unverifiable", 401: "unknown_key", 404: "unknown_project", 429: "throttled" }[error.status] ?? "forbidden";
function createAccess(deps) {
  const { store, metrics } = deps;
  function refuse2(caller, route, projectId) {
    const refusal2 = checkAccess(caller.principal, caller, route, projectId);
    if (refusal2) deny(metrics, refusal2.status === 401 ? "wrong_key_kind" : "forbidden", refusal2);
  }
  function local(route, ctx, pathId, caller) {
    const projectId = resolveProject(ctx, store, caller, pathId);
    if (projectId === null) throw projectNotFound();
    const pending2 = caller.pendingGrant;
    if (pending2 === void 0 || deps.secretKeys === null) {
      refuse2(caller, route, projectId);
      return { caller, projectId };
    }
    if (caller.kind === "secret" ? !routeAccess[route].secretKeyAllowed : caller.principal !== unverifiedPrincipal) {
      refuse2(caller, route, projectId);
    }
    const settle = (result2) => {
      if (result2 instanceof ApiError) deny(metrics, denialReason(result2), result2);
      const granted = { principal: result2, kind: caller.kind, source: caller.source, digest: caller.digest };
      refuse2(granted, route, projectId);
      return { caller: granted, projectId };
    };
    const result = deps.secretKeys.verify(pending2.key, pending2.digest, projectId, caller.source, waiterOf(ctx.authMemo, ctx.request.socket));
    return result instanceof Promise ? result.then(settle) : settle(result);
  }
  function upstream(route, ctx, pathId, caller) {
    const projectId = resolveProject(ctx, store, caller, pathId);
    if (caller.principal !== unverifiedPrincipal || caller.kind === "secret" && !routeAccess[route].secretKeyAllowed) {
      refuse2(caller, route, projectId);
    }
    return { caller, projectId };
  }
  return {
    /**
     * Authenticate a request's credential alone - no route, project or scope check - or throw upstream's refusal
     * (as `authorize` does): for the one route every valid personal key may call, the key's own record.
     */
    identify: (ctx) => authenticate(ctx.headers.authorization, ctx.query, ctx.authMemo, deps, void 0, ctx.request.socket),
    /**
     * Authenticate and authorize a request for `route` about the project in the path (`pathId`, or null for
     * routes without one) or throw upstream's refusal. `bodyKey`: a `personal_api_key` from the JSON body.
     */
    authorize(route, mode, ctx, pathId, bodyKey) {
      const caller = authenticate(ctx.headers.authorization, ctx.query, ctx.authMemo, deps, bodyKey, ctx.request.socket);
      const decide = mode === "local" ? local : upstream;
      if (caller instanceof Promise) return caller.then((c) => decide(route, ctx, pathId, c));
      const memo = ctx.authMemo;
      const last = memo.decision;
      if (last !== null && last.caller === caller && last.route === route && last.mode === mode && last.method === ctx.method && last.pathId === pathId && last.query === ctx.query) {
        return last;
      }
      const decided = decide(route, ctx, pathId, caller);
      if (memo.caller === caller && caller.pendingGrant === void 0 && !(decided instanceof Promise) && decided.caller === caller && !ctx.query.has("personal_api_key")) {
        memo.decision = { caller, projectId: decided.projectId, route, mode, method: ctx.method, pathId, query: ctx.query };
      }
      return decided;
    }
  };
}

// src/eval/seen-once.ts
var SeenOnce = class {
  /** `slots`: the table's places (a power of two). */
  constructor(slots = 4096) {
    this.slots = slots;
    this.recent = new Int32Array(slots);
  }
  slots;
  recent;
  /** Whether `key` was met before and its place still holds its hash; its hash is put there now if not. */
  again(key) {
    let h = key.length;
    for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 1540483477);
    h ^= h >>> 15;
    const at = h & this.slots - 1;
    if (this.recent[at] === h) return true;
    this.recent[at] = h;
    return false;
  }
};

// src/http/answer-cache.ts
var maxKeptBodyBytes = 16 * 1024;
var entryOverhead = 400;
var AnswerCache = class {
  constructor(maxBytes) {
    this.maxBytes = maxBytes;
    this.kept = new I({
      maxSize: maxBytes,
      // One answer may take a quarter of the bound at most: one project's large answers never hold all of it.
      maxEntrySize: Math.max(1, Math.floor(maxBytes / 4)),
      sizeCalculation: (answer, key) => answer.head.length + key.length + answer.path.length + answer.rawQuery.length + entryOverhead
    });
  }
  maxBytes;
  kept;
  seen = new SeenOnce(4096);
  /** The answer kept for `key`, if any (checking it still holds is the caller's). */
  get(key) {
    return this.kept.get(key);
  }
  /** Keep `answer` for `key` if this key was met before (or is kept already, then replaced). */
  offer(key, answer) {
    if (!this.kept.has(key) && !this.seen.again(key)) return;
    this.kept.set(key, answer());
  }
  /** Drop a kept answer that no longer holds. */
  drop(key) {
    this.kept.delete(key);
  }
  get size() {
    return this.kept.size;
  }
  get bytes() {
    return this.kept.calculatedSize;
  }
};

// src/eval/absent-keys.ts
var scopeKey = (scope, key) => `${scope.runtime ?? ""}\0${scope.contexts === null ? "" : [...scope.contexts].sort().join("")}\0${key}`;
function createAbsentKeys(options) {
  const byDefinitions = /* @__PURE__ */ new WeakMap();
  return {
    /** Whether upstream answered `key` absent under `scope` for these definitions less than `ttlMs` ago. */
    has(defs, scope, key, nowMs) {
      const keys = byDefinitions.get(defs);
      if (keys === void 0) return false;
      const id = scopeKey(scope, key);
      const expires = keys.get(id);
      if (expires === void 0) return false;
      if (expires > nowMs) return true;
      keys.delete(id);
      return false;
    },
    /** Remember `keys` (none of them in `defs`) as answered absent now. */
    remember(defs, scope, keys, nowMs) {
      if (keys.length === 0 || options.maxKeys <= 0) return;
      let known = byDefinitions.get(defs);
      if (known === void 0) {
        known = /* @__PURE__ */ new Map();
        byDefinitions.set(defs, known);
      }
      for (const key of keys) {
        const id = scopeKey(scope, key);
        known.delete(id);
        known.set(id, nowMs + options.ttlMs);
        if (known.size > options.maxKeys) known.delete(known.keys().next().value);
      }
    }
  };
}

// src/store/read-through.ts
function newEntry(response, fetchedAt, expiresAt, generation) {
  let last = null;
  return {
    response,
    fetchedAt,
    expiresAt,
    generation,
    served(at) {
      const ageMs = at - fetchedAt;
      if (last === null || Math.floor(last.ageMs / 1e3) !== Math.floor(ageMs / 1e3)) last = { response, source: "cache", ageMs };
      return last;
    }
  };
}
var entryOverhead2 = 512;
function createReadThroughCache(options) {
  const { now } = options;
  const sizeOf = (entry2, key) => entry2.response.body.length + key.length * 2 + entryOverhead2;
  const entries = new I({ maxSize: options.maxBytes, sizeCalculation: sizeOf });
  const store = (key, entry2) => {
    if (entries.size >= options.maxEntries && !entries.has(key) && sizeOf(entry2, key) <= options.maxBytes) entries.pop();
    entries.set(key, entry2);
  };
  const inFlight = /* @__PURE__ */ new Map();
  const generations = /* @__PURE__ */ new Map();
  let globalGeneration = 0;
  const generationOf = (project) => project === null ? globalGeneration : generations.get(project) ?? 0;
  async function load(key, generation, project, fetch) {
    const fetched = await fetch();
    const at = now();
    const current = entries.get(key);
    const usable = current !== void 0 && current.generation === generation ? current : void 0;
    const failed = fetched.kind === "failure" || fetched.failed === true;
    if (failed && usable !== void 0 && at - usable.fetchedAt <= options.staleMaxMs) {
      options.observe?.("stale");
      return { response: usable.response, source: "stale", ageMs: at - usable.fetchedAt };
    }
    if (fetched.kind === "failure") return fetched.error;
    const fetchedAt = Math.min(fetched.fetchedAt ?? at, at);
    if (fetched.ttlMs > 0 && generationOf(project) === generation) {
      store(key, newEntry(fetched.response, fetchedAt, at + fetched.ttlMs, generation));
    }
    return { response: fetched.response, source: fetched.fetchedAt === void 0 ? "upstream" : "cache", ageMs: at - fetchedAt };
  }
  function hit(key, project, at = now()) {
    const entry2 = entries.get(key);
    if (entry2 === void 0 || entry2.generation !== generationOf(project) || at >= entry2.expiresAt) return void 0;
    options.observe?.("hit");
    return entry2.served(at);
  }
  return {
    /**
     * The answer for `key`: a fresh entry, or the result of `fetch` (shared with concurrent callers of the same
     * key); synchronous for a fresh entry. Rejects with the fetch's error when there is neither an answer nor
     * a usable stale entry.
     */
    get(key, project, fetch) {
      const fresh = hit(key, project);
      if (fresh !== void 0) return fresh;
      const generation = generationOf(project);
      const entry2 = entries.peek(key);
      if (entry2 !== void 0 && entry2.generation !== generation) entries.delete(key);
      const flightKey = `${generation}\0${key}`;
      let running = inFlight.get(flightKey);
      if (running === void 0) {
        options.observe?.("miss");
        running = load(key, generation, project, fetch).finally(() => inFlight.delete(flightKey));
        inFlight.set(flightKey, running);
      } else options.observe?.("coalesced");
      return running.then((result) => {
        if (result instanceof Error) throw result;
        return result;
      });
    },
    hit,
    /** Store an answer fetched outside get() (a forced refresh), replacing what the key held. */
    set(key, project, response, ttlMs) {
      const at = now();
      if (ttlMs > 0) store(key, newEntry(response, at, at + ttlMs, generationOf(project)));
      else entries.delete(key);
    },
    /** Drop every entry of `project` (and every entry whose project is unknown). */
    invalidate(project) {
      generations.set(project, (generations.get(project) ?? 0) + 1);
      globalGeneration += 1;
    },
    /** Entries and bytes held, for metrics. */
    size: () => ({ entries: entries.size, bytes: entries.calculatedSize })
  };
}

// src/upstream/remote-config-warmer.ts
var credentialClass = (kind) => kind;
function createRemoteConfigWarmer(deps) {
  const { client, now } = deps;
  const ownClass = credentialClass(keyKind(deps.ownKey));
  const entries = new I(entryBound(deps.maxEntries));
  const keyOf = (projectId, flag) => `${projectId}\0${flag}`;
  const keepable = (status) => status === 200 || status === 404;
  const generations = /* @__PURE__ */ new Map();
  const fetching = /* @__PURE__ */ new Set();
  const refreshing = /* @__PURE__ */ new Set();
  async function fetchOne(projectId, flag, readAt) {
    const key = keyOf(projectId, flag);
    const generation = generations.get(projectId) ?? 0;
    const result = await client.request({
      operation: "remote_config_refresh",
      method: "GET",
      path: `/api/projects/${projectId}/feature_flags/${encodeURIComponent(flag)}/remote_config/`,
      headers: { authorization: `Bearer ${deps.ownKey}`, accept: "application/json" }
    });
    if ((generations.get(projectId) ?? 0) !== generation) return;
    if (result.kind === "response" && keepable(result.status)) {
      const headers = { "content-length": String(result.body.length) };
      const type = result.headers["content-type"];
      if (typeof type === "string") headers["content-type"] = type;
      const response = { status: result.status, headers, body: result.body };
      entries.set(key, { projectId, flag, response, fetchedAt: now(), readAt: entries.peek(key)?.readAt ?? readAt });
      return;
    }
    if (result.kind === "response" && (result.status === 401 || result.status === 403)) {
      entries.delete(key);
      deps.logger.warn({ project: projectId, status: result.status }, "own key refused for remote_config; flag not kept warm");
    }
  }
  return {
    /** The kind of caller whose answers are kept. */
    ownClass,
    /** A warm answer for `flag` (id or key as the caller wrote it) of `projectId`, if one may be served now. */
    get(projectId, flag, cls) {
      if (cls !== ownClass) return void 0;
      const key = keyOf(projectId, flag);
      const entry2 = entries.get(key);
      if (entry2 === void 0) return void 0;
      const at = now();
      if (at - entry2.fetchedAt > deps.staleMaxMs) {
        entries.delete(key);
        return void 0;
      }
      if (at - entry2.readAt > 1e3) entries.set(key, { ...entry2, readAt: at });
      return entry2;
    },
    /** Start keeping `flag` of `projectId` warm (a fetch with the own key), unless it is already or being fetched. */
    want(projectId, flag) {
      const key = keyOf(projectId, flag);
      if (entries.has(key) || fetching.has(key) || fetching.size >= 16) return;
      fetching.add(key);
      void fetchOne(projectId, flag, now()).finally(() => fetching.delete(key));
    },
    /** Refresh every entry of `projectId` read within the idle time; forget the others. Never two at once per project. */
    async refresh(projectId) {
      if (refreshing.has(projectId)) return;
      refreshing.add(projectId);
      try {
        const at = now();
        const due = [];
        for (const [key, entry2] of [...entries.entries()]) {
          if (entry2.projectId !== projectId) continue;
          if (at - entry2.readAt > deps.idleMs) entries.delete(key);
          else due.push(entry2);
        }
        for (const entry2 of due) if (entries.has(keyOf(projectId, entry2.flag))) await fetchOne(projectId, entry2.flag, entry2.readAt);
      } finally {
        refreshing.delete(projectId);
      }
    },
    /** Forget a project's entries (after a write through the sidecar: the next read asks upstream). */
    drop(projectId) {
      generations.set(projectId, (generations.get(projectId) ?? 0) + 1);
      for (const [key, entry2] of [...entries.entries()]) if (entry2.projectId === projectId) entries.delete(key);
    },
    /** Entries held. */
    size: () => entries.size
  };
}

// src/upstream/write-sync.ts
var isRecord = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
function shows(definitions, id, version, deleted) {
  const flag = definitions.flags.find((f) => f.id === id);
  if (deleted) return flag === void 0;
  if (flag === void 0) return false;
  const seen = flag.version;
  return version === null || seen === null || seen >= version;
}
function writeCheck(body, before) {
  let reply = null;
  try {
    reply = JSON.parse(body.toString("utf8"));
  } catch {
  }
  const etagBefore = before?.cohorts?.etag;
  if (!isRecord(reply) || typeof reply.id !== "number") return (project) => project.cohorts?.etag !== etagBefore;
  const id = reply.id;
  if (reply.is_remote_configuration === true) {
    const held = before?.cohorts?.definitions.flags.some((f) => f.id === id) ?? false;
    if (reply.has_encrypted_payloads === true || !held) return null;
  }
  const version = typeof reply.version === "number" ? reply.version : null;
  const deleted = reply.deleted === true;
  return (project) => project.cohorts !== null && shows(project.cohorts.definitions, id, version, deleted) && (!project.plainWanted || project.plain === null || shows(project.plain.definitions, id, version, deleted));
}
function createWriteSync(deps) {
  const sleep = deps.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  return async function sync(projectId, check) {
    const deadline = deps.now() + deps.timeoutMs;
    let pause = 50;
    for (; ; ) {
      const project = deps.store.get(projectId);
      if (project !== void 0 && check(project)) return true;
      if (deps.now() >= deadline) return false;
      await deps.pollNow(projectId);
      const after = deps.store.get(projectId);
      if (after !== void 0 && check(after)) return true;
      const left = deadline - deps.now();
      if (left <= 0) return false;
      await sleep(Math.min(pause, left));
      pause = Math.min(pause * 2, 500);
    }
  };
}

// src/upstream/static-cohorts.ts
var none2 = /* @__PURE__ */ new Map();
var pageSize = 1e3;
function missingCohortIds(defs) {
  const missing = /* @__PURE__ */ new Set();
  const seen = /* @__PURE__ */ new Set();
  const visitFilter = (filter) => {
    if (filter.kind !== "cohort" || seen.has(filter.id)) return;
    seen.add(filter.id);
    const group = defs.cohorts.get(filter.id);
    if (group === void 0) missing.add(filter.id);
    else visitGroup(group);
  };
  const visitGroup = (group) => {
    for (const nested of group.groups ?? []) visitGroup(nested);
    for (const leaf of group.leaves ?? []) visitFilter(leaf);
  };
  for (const flag of defs.flags) for (const condition of flag.conditions) for (const filter of condition.filters) visitFilter(filter);
  return [...missing].sort();
}
var isObject2 = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
function parse(body) {
  try {
    const value = JSON.parse(body.toString("utf8"));
    return isObject2(value) ? value : null;
  } catch {
    return null;
  }
}
function createStaticCohorts(deps) {
  const { client, logger } = deps;
  const byProject = /* @__PURE__ */ new Map();
  const refusedFor = /* @__PURE__ */ new Map();
  const refreshing = /* @__PURE__ */ new Set();
  async function get(path) {
    const result = await client.request({ operation: "static_cohort", method: "GET", path, headers: { authorization: `Bearer ${deps.ownKey}`, accept: "application/json" } });
    if (result.kind !== "response") return null;
    return { status: result.status, body: result.status === 200 ? parse(result.body) : null };
  }
  async function pull(projectId, id) {
    const base = `/api/projects/${projectId}/cohorts/${encodeURIComponent(id)}/`;
    const cohort = await get(base);
    if (cohort === null) return { kind: "failed" };
    if (cohort.status === 401 || cohort.status === 403) return { kind: "refused", status: cohort.status };
    if (cohort.status === 404) return { kind: "unknown" };
    if (cohort.body === null) return { kind: "failed" };
    const count = cohort.body.count;
    if (cohort.body.is_static !== true || cohort.body.deleted === true || typeof count !== "number" || count > deps.maxPersons) return { kind: "unknown" };
    const members = /* @__PURE__ */ new Set();
    let persons = 0;
    let path = `${base}persons/?limit=${pageSize}`;
    while (path !== null) {
      const page = await get(path);
      if (page === null) return { kind: "failed" };
      if (page.status === 401 || page.status === 403) return { kind: "refused", status: page.status };
      if (page.body === null || !Array.isArray(page.body.results)) return { kind: "failed" };
      for (const person of page.body.results) {
        if (++persons > deps.maxPersons) return { kind: "unknown" };
        const ids = isObject2(person) && Array.isArray(person.distinct_ids) ? person.distinct_ids : [];
        for (const distinctId of ids) if (typeof distinctId === "string") members.add(distinctId);
      }
      path = typeof page.body.next === "string" ? nextPath(page.body.next, deps.upstreamPath) : null;
    }
    return { kind: "members", members };
  }
  return {
    /** The static cohorts of `projectId` known now (empty when off, refused or not pulled yet). */
    membership(projectId) {
      return byProject.get(projectId) ?? none2;
    },
    /** Pull the static cohorts the project's definitions reference; never two at once per project. */
    async refresh(projectId) {
      const defs = deps.definitions(projectId);
      if (deps.maxPersons <= 0 || defs === null || refreshing.has(projectId) || refusedFor.get(projectId) === defs) return;
      refreshing.add(projectId);
      try {
        const previous = byProject.get(projectId) ?? none2;
        const next = /* @__PURE__ */ new Map();
        for (const id of missingCohortIds(defs)) {
          const pulled = await pull(projectId, id);
          if (pulled.kind === "refused") {
            refusedFor.set(projectId, defs);
            byProject.delete(projectId);
            logger.warn({ project: projectId, status: pulled.status }, "upstream key may not read static cohorts (needs cohort:read and person:read); their flags go upstream");
            return;
          }
          if (pulled.kind === "members") next.set(id, pulled.members);
          else if (pulled.kind === "failed") {
            const kept = previous.get(id);
            if (kept !== void 0) next.set(id, kept);
          }
        }
        refusedFor.delete(projectId);
        byProject.set(projectId, sameMembers(previous, next) ? previous : next);
      } finally {
        refreshing.delete(projectId);
      }
    }
  };
}
function nextPath(link2, prefix) {
  try {
    const url = new URL(link2, "http://upstream");
    const path = prefix !== "" && url.pathname.startsWith(`${prefix}/`) ? url.pathname.slice(prefix.length) : url.pathname;
    return `${path}${url.search}`;
  } catch {
    return null;
  }
}
function sameMembers(a, b) {
  if (a.size !== b.size) return false;
  for (const [id, members] of b) {
    const known = a.get(id);
    if (known === void 0 || known.size !== members.size) return false;
    for (const member of members) if (!known.has(member)) return false;
  }
  return true;
}

// src/eval/flag-fragments.ts
var noValueSlots = /* @__PURE__ */ new Map();
function flagFragments(flag) {
  const name = JSON.stringify(flag.key);
  let valueSlots = noValueSlots;
  if (flag.variants.length > 0 || flag.holdout !== null) {
    const slots = /* @__PURE__ */ new Map();
    for (const variant of flag.variants) if (!slots.has(variant.key)) slots.set(variant.key, slots.size + 2);
    if (flag.holdout !== null && !slots.has(flag.holdout.variant)) slots.set(flag.holdout.variant, slots.size + 2);
    valueSlots = slots;
  }
  return {
    name,
    id: flag.id,
    version: flag.version,
    description: flag.name,
    hasExperiment: flag.hasExperiment,
    payloads: flag.payloads,
    valueSlots,
    conditionSlots: flag.conditions.length + 1,
    built: null,
    lastSlot: -1,
    lastBytes: null
  };
}
function reasonSlot(reason) {
  switch (reason) {
    case "condition_match":
      return 0;
    case "no_condition_match":
      return 1;
    case "out_of_rollout_bound":
      return 2;
    case "no_group_type":
      return 3;
    case "holdout_condition_value":
      return 4;
    default:
      return 5;
  }
}
var descriptions = {
  condition_match: "",
  // per condition: "Matched condition set N"
  no_condition_match: "No matching condition set",
  out_of_rollout_bound: "Out of rollout bound",
  no_group_type: "No group type",
  holdout_condition_value: "Holdout condition value",
  flag_disabled: "Feature flag is disabled"
};
var payloadText = (f, value) => value === false ? void 0 : f.payloads.get(value === true ? "true" : value)?.json;
var v2Kind = 0;
var reasonsKind = 1;
var legacyValueKind = 2;
var legacyPayloadKind = 3;
function slotOf(f, o, kind) {
  const value = o.value === false ? 0 : o.value === true ? 1 : f.valueSlots.get(o.value);
  if (value === void 0) return -1;
  if (kind >= legacyValueKind) return value * 4 + kind;
  const index = o.conditionIndex;
  if (index !== null && !(Number.isInteger(index) && index >= 0 && index < f.conditionSlots - 1)) return -1;
  return ((value * 6 + reasonSlot(o.reason)) * f.conditionSlots + (index === null ? 0 : index + 1)) * 4 + kind;
}
function entry(f, o, kind, build2) {
  const slot = slotOf(f, o, kind);
  if (slot < 0) return Buffer.from(`,${build2(f, o)}`);
  if (slot === f.lastSlot) return f.lastBytes;
  let built = f.built;
  if (built === null) built = f.built = /* @__PURE__ */ new Map();
  let bytes2 = built.get(slot);
  if (bytes2 === void 0) {
    const text2 = `,${build2(f, o)}`;
    bytes2 = Buffer.allocUnsafeSlow(Buffer.byteLength(text2));
    bytes2.write(text2);
    built.set(slot, bytes2);
  }
  f.lastSlot = slot;
  f.lastBytes = bytes2;
  return bytes2;
}
function buildV2(f, o) {
  const description = o.reason === "condition_match" ? `Matched condition set ${(o.conditionIndex ?? 0) + 1}` : descriptions[o.reason];
  const variant = typeof o.value === "string" ? JSON.stringify(o.value) : "null";
  const reason = `{"code":${JSON.stringify(o.reason)},"condition_index":${JSON.stringify(o.conditionIndex)},"description":${JSON.stringify(description)}}`;
  const metadata = `"metadata":{"id":${JSON.stringify(f.id)},"version":${JSON.stringify(f.version)},"description":${JSON.stringify(f.description)},"has_experiment":${f.hasExperiment},"payload":`;
  return `${f.name}:{"key":${f.name},"enabled":${o.value !== false},"variant":${variant},"reason":${reason},${metadata}${payloadText(f, o.value) ?? "null"}}}`;
}
var buildReasons = (f, o) => `${f.name}:{"value":${JSON.stringify(o.value)},"evaluation":{"reason":${JSON.stringify(o.reason === "flag_disabled" ? "disabled" : o.reason)},"condition_index":${JSON.stringify(o.conditionIndex)}}}`;
var buildLegacyValue = (f, o) => `${f.name}:${JSON.stringify(o.value)}`;
var buildLegacyPayload = (f, o) => `${f.name}:${payloadText(f, o.value)}`;
var v2Entry = (f, o) => entry(f, o, v2Kind, buildV2);
var reasonsEntry = (f, o) => entry(f, o, reasonsKind, buildReasons);
var legacyValueEntry = (f, o) => entry(f, o, legacyValueKind, buildLegacyValue);
function legacyPayloadEntry(f, o) {
  return payloadText(f, o.value) === void 0 ? null : entry(f, o, legacyPayloadKind, buildLegacyPayload);
}

// src/eval/hash.ts
import { hash as hash2 } from "node:crypto";

// src/eval/sha1-block.ts
function sha1Compress(message2, words) {
  let h0 = 1732584193;
  let h1 = 4023233417 | 0;
  let h2 = 2562383102 | 0;
  let h3 = 271733878;
  let h4 = 3285377520 | 0;
  for (let block = 0; block < words; block += 16) {
    let a = h0;
    let b = h1;
    let c = h2;
    let d3 = h3;
    let e = h4;
    let x2 = 0;
    let w0 = message2[block + 0];
    let w1 = message2[block + 1];
    let w2 = message2[block + 2];
    let w3 = message2[block + 3];
    let w4 = message2[block + 4];
    let w5 = message2[block + 5];
    let w6 = message2[block + 6];
    let w7 = message2[block + 7];
    let w8 = message2[block + 8];
    let w9 = message2[block + 9];
    let w10 = message2[block + 10];
    let w11 = message2[block + 11];
    let w12 = message2[block + 12];
    let w13 = message2[block + 13];
    let w14 = message2[block + 14];
    let w15 = message2[block + 15];
    e = (a << 5 | a >>> 27) + (b & c | ~b & d3) + e + 1518500249 + w0 | 0;
    b = b << 30 | b >>> 2;
    d3 = (e << 5 | e >>> 27) + (a & b | ~a & c) + d3 + 1518500249 + w1 | 0;
    a = a << 30 | a >>> 2;
    c = (d3 << 5 | d3 >>> 27) + (e & a | ~e & b) + c + 1518500249 + w2 | 0;
    e = e << 30 | e >>> 2;
    b = (c << 5 | c >>> 27) + (d3 & e | ~d3 & a) + b + 1518500249 + w3 | 0;
    d3 = d3 << 30 | d3 >>> 2;
    a = (b << 5 | b >>> 27) + (c & d3 | ~c & e) + a + 1518500249 + w4 | 0;
    c = c << 30 | c >>> 2;
    e = (a << 5 | a >>> 27) + (b & c | ~b & d3) + e + 1518500249 + w5 | 0;
    b = b << 30 | b >>> 2;
    d3 = (e << 5 | e >>> 27) + (a & b | ~a & c) + d3 + 1518500249 + w6 | 0;
    a = a << 30 | a >>> 2;
    c = (d3 << 5 | d3 >>> 27) + (e & a | ~e & b) + c + 1518500249 + w7 | 0;
    e = e << 30 | e >>> 2;
    b = (c << 5 | c >>> 27) + (d3 & e | ~d3 & a) + b + 1518500249 + w8 | 0;
    d3 = d3 << 30 | d3 >>> 2;
    a = (b << 5 | b >>> 27) + (c & d3 | ~c & e) + a + 1518500249 + w9 | 0;
    c = c << 30 | c >>> 2;
    e = (a << 5 | a >>> 27) + (b & c | ~b & d3) + e + 1518500249 + w10 | 0;
    b = b << 30 | b >>> 2;
    d3 = (e << 5 | e >>> 27) + (a & b | ~a & c) + d3 + 1518500249 + w11 | 0;
    a = a << 30 | a >>> 2;
    c = (d3 << 5 | d3 >>> 27) + (e & a | ~e & b) + c + 1518500249 + w12 | 0;
    e = e << 30 | e >>> 2;
    b = (c << 5 | c >>> 27) + (d3 & e | ~d3 & a) + b + 1518500249 + w13 | 0;
    d3 = d3 << 30 | d3 >>> 2;
    a = (b << 5 | b >>> 27) + (c & d3 | ~c & e) + a + 1518500249 + w14 | 0;
    c = c << 30 | c >>> 2;
    e = (a << 5 | a >>> 27) + (b & c | ~b & d3) + e + 1518500249 + w15 | 0;
    b = b << 30 | b >>> 2;
    x2 = w13 ^ w8 ^ w2 ^ w0;
    w0 = x2 << 1 | x2 >>> 31;
    d3 = (e << 5 | e >>> 27) + (a & b | ~a & c) + d3 + 1518500249 + w0 | 0;
    a = a << 30 | a >>> 2;
    x2 = w14 ^ w9 ^ w3 ^ w1;
    w1 = x2 << 1 | x2 >>> 31;
    c = (d3 << 5 | d3 >>> 27) + (e & a | ~e & b) + c + 1518500249 + w1 | 0;
    e = e << 30 | e >>> 2;
    x2 = w15 ^ w10 ^ w4 ^ w2;
    w2 = x2 << 1 | x2 >>> 31;
    b = (c << 5 | c >>> 27) + (d3 & e | ~d3 & a) + b + 1518500249 + w2 | 0;
    d3 = d3 << 30 | d3 >>> 2;
    x2 = w0 ^ w11 ^ w5 ^ w3;
    w3 = x2 << 1 | x2 >>> 31;
    a = (b << 5 | b >>> 27) + (c & d3 | ~c & e) + a + 1518500249 + w3 | 0;
    c = c << 30 | c >>> 2;
    x2 = w1 ^ w12 ^ w6 ^ w4;
    w4 = x2 << 1 | x2 >>> 31;
    e = (a << 5 | a >>> 27) + (b ^ c ^ d3) + e + 1859775393 + w4 | 0;
    b = b << 30 | b >>> 2;
    x2 = w2 ^ w13 ^ w7 ^ w5;
    w5 = x2 << 1 | x2 >>> 31;
    d3 = (e << 5 | e >>> 27) + (a ^ b ^ c) + d3 + 1859775393 + w5 | 0;
    a = a << 30 | a >>> 2;
    x2 = w3 ^ w14 ^ w8 ^ w6;
    w6 = x2 << 1 | x2 >>> 31;
    c = (d3 << 5 | d3 >>> 27) + (e ^ a ^ b) + c + 1859775393 + w6 | 0;
    e = e << 30 | e >>> 2;
    x2 = w4 ^ w15 ^ w9 ^ w7;
    w7 = x2 << 1 | x2 >>> 31;
    b = (c << 5 | c >>> 27) + (d3 ^ e ^ a) + b + 1859775393 + w7 | 0;
    d3 = d3 << 30 | d3 >>> 2;
    x2 = w5 ^ w0 ^ w10 ^ w8;
    w8 = x2 << 1 | x2 >>> 31;
    a = (b << 5 | b >>> 27) + (c ^ d3 ^ e) + a + 1859775393 + w8 | 0;
    c = c << 30 | c >>> 2;
    x2 = w6 ^ w1 ^ w11 ^ w9;
    w9 = x2 << 1 | x2 >>> 31;
    e = (a << 5 | a >>> 27) + (b ^ c ^ d3) + e + 1859775393 + w9 | 0;
    b = b << 30 | b >>> 2;
    x2 = w7 ^ w2 ^ w12 ^ w10;
    w10 = x2 << 1 | x2 >>> 31;
    d3 = (e << 5 | e >>> 27) + (a ^ b ^ c) + d3 + 1859775393 + w10 | 0;
    a = a << 30 | a >>> 2;
    x2 = w8 ^ w3 ^ w13 ^ w11;
    w11 = x2 << 1 | x2 >>> 31;
    c = (d3 << 5 | d3 >>> 27) + (e ^ a ^ b) + c + 1859775393 + w11 | 0;
    e = e << 30 | e >>> 2;
    x2 = w9 ^ w4 ^ w14 ^ w12;
    w12 = x2 << 1 | x2 >>> 31;
    b = (c << 5 | c >>> 27) + (d3 ^ e ^ a) + b + 1859775393 + w12 | 0;
    d3 = d3 << 30 | d3 >>> 2;
    x2 = w10 ^ w5 ^ w15 ^ w13;
    w13 = x2 << 1 | x2 >>> 31;
    a = (b << 5 | b >>> 27) + (c ^ d3 ^ e) + a + 1859775393 + w13 | 0;
    c = c << 30 | c >>> 2;
    x2 = w11 ^ w6 ^ w0 ^ w14;
    w14 = x2 << 1 | x2 >>> 31;
    e = (a << 5 | a >>> 27) + (b ^ c ^ d3) + e + 1859775393 + w14 | 0;
    b = b << 30 | b >>> 2;
    x2 = w12 ^ w7 ^ w1 ^ w15;
    w15 = x2 << 1 | x2 >>> 31;
    d3 = (e << 5 | e >>> 27) + (a ^ b ^ c) + d3 + 1859775393 + w15 | 0;
    a = a << 30 | a >>> 2;
    x2 = w13 ^ w8 ^ w2 ^ w0;
    w0 = x2 << 1 | x2 >>> 31;
    c = (d3 << 5 | d3 >>> 27) + (e ^ a ^ b) + c + 1859775393 + w0 | 0;
    e = e << 30 | e >>> 2;
    x2 = w14 ^ w9 ^ w3 ^ w1;
    w1 = x2 << 1 | x2 >>> 31;
    b = (c << 5 | c >>> 27) + (d3 ^ e ^ a) + b + 1859775393 + w1 | 0;
    d3 = d3 << 30 | d3 >>> 2;
    x2 = w15 ^ w10 ^ w4 ^ w2;
    w2 = x2 << 1 | x2 >>> 31;
    a = (b << 5 | b >>> 27) + (c ^ d3 ^ e) + a + 1859775393 + w2 | 0;
    c = c << 30 | c >>> 2;
    x2 = w0 ^ w11 ^ w5 ^ w3;
    w3 = x2 << 1 | x2 >>> 31;
    e = (a << 5 | a >>> 27) + (b ^ c ^ d3) + e + 1859775393 + w3 | 0;
    b = b << 30 | b >>> 2;
    x2 = w1 ^ w12 ^ w6 ^ w4;
    w4 = x2 << 1 | x2 >>> 31;
    d3 = (e << 5 | e >>> 27) + (a ^ b ^ c) + d3 + 1859775393 + w4 | 0;
    a = a << 30 | a >>> 2;
    x2 = w2 ^ w13 ^ w7 ^ w5;
    w5 = x2 << 1 | x2 >>> 31;
    c = (d3 << 5 | d3 >>> 27) + (e ^ a ^ b) + c + 1859775393 + w5 | 0;
    e = e << 30 | e >>> 2;
    x2 = w3 ^ w14 ^ w8 ^ w6;
    w6 = x2 << 1 | x2 >>> 31;
    b = (c << 5 | c >>> 27) + (d3 ^ e ^ a) + b + 1859775393 + w6 | 0;
    d3 = d3 << 30 | d3 >>> 2;
    x2 = w4 ^ w15 ^ w9 ^ w7;
    w7 = x2 << 1 | x2 >>> 31;
    a = (b << 5 | b >>> 27) + (c ^ d3 ^ e) + a + 1859775393 + w7 | 0;
    c = c << 30 | c >>> 2;
    x2 = w5 ^ w0 ^ w10 ^ w8;
    w8 = x2 << 1 | x2 >>> 31;
    e = (a << 5 | a >>> 27) + (b & c | b & d3 | c & d3) + e - 1894007588 + w8 | 0;
    b = b << 30 | b >>> 2;
    x2 = w6 ^ w1 ^ w11 ^ w9;
    w9 = x2 << 1 | x2 >>> 31;
    d3 = (e << 5 | e >>> 27) + (a & b | a & c | b & c) + d3 - 1894007588 + w9 | 0;
    a = a << 30 | a >>> 2;
    x2 = w7 ^ w2 ^ w12 ^ w10;
    w10 = x2 << 1 | x2 >>> 31;
    c = (d3 << 5 | d3 >>> 27) + (e & a | e & b | a & b) + c - 1894007588 + w10 | 0;
    e = e << 30 | e >>> 2;
    x2 = w8 ^ w3 ^ w13 ^ w11;
    w11 = x2 << 1 | x2 >>> 31;
    b = (c << 5 | c >>> 27) + (d3 & e | d3 & a | e & a) + b - 1894007588 + w11 | 0;
    d3 = d3 << 30 | d3 >>> 2;
    x2 = w9 ^ w4 ^ w14 ^ w12;
    w12 = x2 << 1 | x2 >>> 31;
    a = (b << 5 | b >>> 27) + (c & d3 | c & e | d3 & e) + a - 1894007588 + w12 | 0;
    c = c << 30 | c >>> 2;
    x2 = w10 ^ w5 ^ w15 ^ w13;
    w13 = x2 << 1 | x2 >>> 31;
    e = (a << 5 | a >>> 27) + (b & c | b & d3 | c & d3) + e - 1894007588 + w13 | 0;
    b = b << 30 | b >>> 2;
    x2 = w11 ^ w6 ^ w0 ^ w14;
    w14 = x2 << 1 | x2 >>> 31;
    d3 = (e << 5 | e >>> 27) + (a & b | a & c | b & c) + d3 - 1894007588 + w14 | 0;
    a = a << 30 | a >>> 2;
    x2 = w12 ^ w7 ^ w1 ^ w15;
    w15 = x2 << 1 | x2 >>> 31;
    c = (d3 << 5 | d3 >>> 27) + (e & a | e & b | a & b) + c - 1894007588 + w15 | 0;
    e = e << 30 | e >>> 2;
    x2 = w13 ^ w8 ^ w2 ^ w0;
    w0 = x2 << 1 | x2 >>> 31;
    b = (c << 5 | c >>> 27) + (d3 & e | d3 & a | e & a) + b - 1894007588 + w0 | 0;
    d3 = d3 << 30 | d3 >>> 2;
    x2 = w14 ^ w9 ^ w3 ^ w1;
    w1 = x2 << 1 | x2 >>> 31;
    a = (b << 5 | b >>> 27) + (c & d3 | c & e | d3 & e) + a - 1894007588 + w1 | 0;
    c = c << 30 | c >>> 2;
    x2 = w15 ^ w10 ^ w4 ^ w2;
    w2 = x2 << 1 | x2 >>> 31;
    e = (a << 5 | a >>> 27) + (b & c | b & d3 | c & d3) + e - 1894007588 + w2 | 0;
    b = b << 30 | b >>> 2;
    x2 = w0 ^ w11 ^ w5 ^ w3;
    w3 = x2 << 1 | x2 >>> 31;
    d3 = (e << 5 | e >>> 27) + (a & b | a & c | b & c) + d3 - 1894007588 + w3 | 0;
    a = a << 30 | a >>> 2;
    x2 = w1 ^ w12 ^ w6 ^ w4;
    w4 = x2 << 1 | x2 >>> 31;
    c = (d3 << 5 | d3 >>> 27) + (e & a | e & b | a & b) + c - 1894007588 + w4 | 0;
    e = e << 30 | e >>> 2;
    x2 = w2 ^ w13 ^ w7 ^ w5;
    w5 = x2 << 1 | x2 >>> 31;
    b = (c << 5 | c >>> 27) + (d3 & e | d3 & a | e & a) + b - 1894007588 + w5 | 0;
    d3 = d3 << 30 | d3 >>> 2;
    x2 = w3 ^ w14 ^ w8 ^ w6;
    w6 = x2 << 1 | x2 >>> 31;
    a = (b << 5 | b >>> 27) + (c & d3 | c & e | d3 & e) + a - 1894007588 + w6 | 0;
    c = c << 30 | c >>> 2;
    x2 = w4 ^ w15 ^ w9 ^ w7;
    w7 = x2 << 1 | x2 >>> 31;
    e = (a << 5 | a >>> 27) + (b & c | b & d3 | c & d3) + e - 1894007588 + w7 | 0;
    b = b << 30 | b >>> 2;
    x2 = w5 ^ w0 ^ w10 ^ w8;
    w8 = x2 << 1 | x2 >>> 31;
    d3 = (e << 5 | e >>> 27) + (a & b | a & c | b & c) + d3 - 1894007588 + w8 | 0;
    a = a << 30 | a >>> 2;
    x2 = w6 ^ w1 ^ w11 ^ w9;
    w9 = x2 << 1 | x2 >>> 31;
    c = (d3 << 5 | d3 >>> 27) + (e & a | e & b | a & b) + c - 1894007588 + w9 | 0;
    e = e << 30 | e >>> 2;
    x2 = w7 ^ w2 ^ w12 ^ w10;
    w10 = x2 << 1 | x2 >>> 31;
    b = (c << 5 | c >>> 27) + (d3 & e | d3 & a | e & a) + b - 1894007588 + w10 | 0;
    d3 = d3 << 30 | d3 >>> 2;
    x2 = w8 ^ w3 ^ w13 ^ w11;
    w11 = x2 << 1 | x2 >>> 31;
    a = (b << 5 | b >>> 27) + (c & d3 | c & e | d3 & e) + a - 1894007588 + w11 | 0;
    c = c << 30 | c >>> 2;
    x2 = w9 ^ w4 ^ w14 ^ w12;
    w12 = x2 << 1 | x2 >>> 31;
    e = (a << 5 | a >>> 27) + (b ^ c ^ d3) + e - 899497514 + w12 | 0;
    b = b << 30 | b >>> 2;
    x2 = w10 ^ w5 ^ w15 ^ w13;
    w13 = x2 << 1 | x2 >>> 31;
    d3 = (e << 5 | e >>> 27) + (a ^ b ^ c) + d3 - 899497514 + w13 | 0;
    a = a << 30 | a >>> 2;
    x2 = w11 ^ w6 ^ w0 ^ w14;
    w14 = x2 << 1 | x2 >>> 31;
    c = (d3 << 5 | d3 >>> 27) + (e ^ a ^ b) + c - 899497514 + w14 | 0;
    e = e << 30 | e >>> 2;
    x2 = w12 ^ w7 ^ w1 ^ w15;
    w15 = x2 << 1 | x2 >>> 31;
    b = (c << 5 | c >>> 27) + (d3 ^ e ^ a) + b - 899497514 + w15 | 0;
    d3 = d3 << 30 | d3 >>> 2;
    x2 = w13 ^ w8 ^ w2 ^ w0;
    w0 = x2 << 1 | x2 >>> 31;
    a = (b << 5 | b >>> 27) + (c ^ d3 ^ e) + a - 899497514 + w0 | 0;
    c = c << 30 | c >>> 2;
    x2 = w14 ^ w9 ^ w3 ^ w1;
    w1 = x2 << 1 | x2 >>> 31;
    e = (a << 5 | a >>> 27) + (b ^ c ^ d3) + e - 899497514 + w1 | 0;
    b = b << 30 | b >>> 2;
    x2 = w15 ^ w10 ^ w4 ^ w2;
    w2 = x2 << 1 | x2 >>> 31;
    d3 = (e << 5 | e >>> 27) + (a ^ b ^ c) + d3 - 899497514 + w2 | 0;
    a = a << 30 | a >>> 2;
    x2 = w0 ^ w11 ^ w5 ^ w3;
    w3 = x2 << 1 | x2 >>> 31;
    c = (d3 << 5 | d3 >>> 27) + (e ^ a ^ b) + c - 899497514 + w3 | 0;
    e = e << 30 | e >>> 2;
    x2 = w1 ^ w12 ^ w6 ^ w4;
    w4 = x2 << 1 | x2 >>> 31;
    b = (c << 5 | c >>> 27) + (d3 ^ e ^ a) + b - 899497514 + w4 | 0;
    d3 = d3 << 30 | d3 >>> 2;
    x2 = w2 ^ w13 ^ w7 ^ w5;
    w5 = x2 << 1 | x2 >>> 31;
    a = (b << 5 | b >>> 27) + (c ^ d3 ^ e) + a - 899497514 + w5 | 0;
    c = c << 30 | c >>> 2;
    x2 = w3 ^ w14 ^ w8 ^ w6;
    w6 = x2 << 1 | x2 >>> 31;
    e = (a << 5 | a >>> 27) + (b ^ c ^ d3) + e - 899497514 + w6 | 0;
    b = b << 30 | b >>> 2;
    x2 = w4 ^ w15 ^ w9 ^ w7;
    w7 = x2 << 1 | x2 >>> 31;
    d3 = (e << 5 | e >>> 27) + (a ^ b ^ c) + d3 - 899497514 + w7 | 0;
    a = a << 30 | a >>> 2;
    x2 = w5 ^ w0 ^ w10 ^ w8;
    w8 = x2 << 1 | x2 >>> 31;
    c = (d3 << 5 | d3 >>> 27) + (e ^ a ^ b) + c - 899497514 + w8 | 0;
    e = e << 30 | e >>> 2;
    x2 = w6 ^ w1 ^ w11 ^ w9;
    w9 = x2 << 1 | x2 >>> 31;
    b = (c << 5 | c >>> 27) + (d3 ^ e ^ a) + b - 899497514 + w9 | 0;
    d3 = d3 << 30 | d3 >>> 2;
    x2 = w7 ^ w2 ^ w12 ^ w10;
    w10 = x2 << 1 | x2 >>> 31;
    a = (b << 5 | b >>> 27) + (c ^ d3 ^ e) + a - 899497514 + w10 | 0;
    c = c << 30 | c >>> 2;
    x2 = w8 ^ w3 ^ w13 ^ w11;
    w11 = x2 << 1 | x2 >>> 31;
    e = (a << 5 | a >>> 27) + (b ^ c ^ d3) + e - 899497514 + w11 | 0;
    b = b << 30 | b >>> 2;
    x2 = w9 ^ w4 ^ w14 ^ w12;
    w12 = x2 << 1 | x2 >>> 31;
    d3 = (e << 5 | e >>> 27) + (a ^ b ^ c) + d3 - 899497514 + w12 | 0;
    a = a << 30 | a >>> 2;
    x2 = w10 ^ w5 ^ w15 ^ w13;
    w13 = x2 << 1 | x2 >>> 31;
    c = (d3 << 5 | d3 >>> 27) + (e ^ a ^ b) + c - 899497514 + w13 | 0;
    e = e << 30 | e >>> 2;
    x2 = w11 ^ w6 ^ w0 ^ w14;
    w14 = x2 << 1 | x2 >>> 31;
    b = (c << 5 | c >>> 27) + (d3 ^ e ^ a) + b - 899497514 + w14 | 0;
    d3 = d3 << 30 | d3 >>> 2;
    x2 = w12 ^ w7 ^ w1 ^ w15;
    w15 = x2 << 1 | x2 >>> 31;
    a = (b << 5 | b >>> 27) + (c ^ d3 ^ e) + a - 899497514 + w15 | 0;
    c = c << 30 | c >>> 2;
    h0 = h0 + a | 0;
    h1 = h1 + b | 0;
    h2 = h2 + c | 0;
    h3 = h3 + d3 | 0;
    h4 = h4 + e | 0;
  }
  return (h0 >>> 0) * 268435456 + (h1 >>> 4 & 268435455);
}

// src/eval/wasm-encode.ts
function sleb(value) {
  const out = [];
  let v = value | 0;
  for (; ; ) {
    const byte = v & 127;
    v >>= 7;
    if (v === 0 && (byte & 64) === 0 || v === -1 && (byte & 64) !== 0) {
      out.push(byte);
      return out;
    }
    out.push(byte | 128);
  }
}
function uleb(value) {
  const out = [];
  let v = value >>> 0;
  do {
    const byte = v & 127;
    v >>>= 7;
    out.push(v === 0 ? byte : byte | 128);
  } while (v !== 0);
  return out;
}
var op = {
  block: 2,
  if: 4,
  else: 5,
  loop: 3,
  br: 12,
  brIf: 13,
  end: 11,
  call: 16,
  select: 27,
  store: 54,
  i32GeU: 79,
  i32GtU: 75,
  i32GtS: 74,
  i32LtS: 72,
  i32Eqz: 69,
  f64Store: 57,
  i32Sub: 107,
  i32Shl: 116,
  i32ShrS: 117,
  get: 32,
  set: 33,
  tee: 34,
  load: 40,
  i32Const: 65,
  f64Const: 68,
  i32LtU: 73,
  i32Add: 106,
  i32Mul: 108,
  i32And: 113,
  i32Or: 114,
  i32Xor: 115,
  i32ShrU: 118,
  i32Rotl: 119,
  f64Add: 160,
  f64Mul: 162,
  f64ConvertI32U: 184
};
var simd = {
  load: 0,
  store: 11,
  const: 12,
  shuffle: 13,
  i32x4Splat: 17,
  i32x4ReplaceLane: 28,
  i32x4Eq: 55,
  and: 78,
  or: 80,
  xor: 81,
  bitselect: 82,
  i32x4Shl: 171,
  i32x4ShrU: 173,
  i32x4Add: 174,
  f64x2Add: 240,
  f64x2Mul: 242,
  f64x2Div: 243,
  f64x2Splat: 20,
  f64x2ConvertLowI32x4U: 255
};
var section = (id, content) => [id].concat(uleb(content.length), content);
var f64Bytes = (value) => [...new Uint8Array(new Float64Array([value]).buffer)];

// src/eval/sha1-wasm.ts
var tailMemoAt = 4 * 64;
var tailStrideBytes = 64 * 4;
var tailSlotBytes = 4 * tailStrideBytes;
function compressBody() {
  const h = [1, 2, 3, 4, 5];
  const work = [6, 7, 8, 9, 10];
  const w = (i) => 11 + (i & 15);
  const at = 27;
  const code = [];
  const get = (local) => void code.push(op.get, local);
  const set = (local) => void code.push(op.set, local);
  const i32 = (value) => void code.push(op.i32Const, ...sleb(value));
  const initial = [1732584193, 4023233417, 2562383102, 271733878, 3285377520];
  for (let i = 0; i < 5; i++) {
    i32(initial[i]);
    set(h[i]);
  }
  i32(0);
  set(at);
  code.push(op.loop, 64);
  for (let i = 0; i < 16; i++) {
    get(at);
    code.push(op.load, 2, ...uleb(i * 4));
    set(w(i));
  }
  for (let i = 0; i < 5; i++) {
    get(h[i]);
    set(work[i]);
  }
  let [a, b, c, d3, e] = work;
  for (let t = 0; t < 80; t++) {
    if (t >= 16) {
      get(w(t - 3));
      get(w(t - 8));
      code.push(op.i32Xor);
      get(w(t - 14));
      code.push(op.i32Xor);
      get(w(t - 16));
      code.push(op.i32Xor);
      i32(1);
      code.push(op.i32Rotl);
      set(w(t));
    }
    get(a);
    i32(5);
    code.push(op.i32Rotl);
    if (t < 20) {
      get(d3);
      get(b);
      get(c);
      get(d3);
      code.push(op.i32Xor, op.i32And, op.i32Xor);
    } else if (t >= 40 && t < 60) {
      get(b);
      get(c);
      code.push(op.i32And);
      get(d3);
      get(b);
      get(c);
      code.push(op.i32Or, op.i32And, op.i32Or);
    } else {
      get(b);
      get(c);
      code.push(op.i32Xor);
      get(d3);
      code.push(op.i32Xor);
    }
    code.push(op.i32Add);
    get(e);
    code.push(op.i32Add);
    i32(t < 20 ? 1518500249 : t < 40 ? 1859775393 : t < 60 ? 2400959708 : 3395469782);
    code.push(op.i32Add);
    get(w(t));
    code.push(op.i32Add);
    set(e);
    get(b);
    i32(30);
    code.push(op.i32Rotl);
    set(b);
    [a, b, c, d3, e] = [e, a, b, c, d3];
  }
  for (let i = 0; i < 5; i++) {
    get(h[i]);
    get(work[i]);
    code.push(op.i32Add);
    set(h[i]);
  }
  get(at);
  i32(64);
  code.push(op.i32Add);
  code.push(op.tee, at);
  get(0);
  i32(4);
  code.push(op.i32Mul, op.i32LtU, op.brIf, 0, op.end);
  get(h[0]);
  code.push(op.f64ConvertI32U, op.f64Const, ...f64Bytes(268435456), op.f64Mul);
  get(h[1]);
  i32(4);
  code.push(op.i32ShrU);
  i32(268435455);
  code.push(op.i32And, op.f64ConvertI32U, op.f64Add, op.end);
  return [1, 27, 127].concat(code);
}
var littleEndian = () => new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
var laneMessageAt = tailMemoAt + 4 * tailSlotBytes;
function spliceBody(lane) {
  const first = lane ? 8 : 7;
  const [headLength, slot, tailLength, whole, tail, length, words, j2, tailEnd2, base] = [0, 1, 2, first, first + 1, first + 2, first + 3, first + 4, first + 5, first + 6];
  const shift = lane ? 4 : 2;
  const code = [];
  const get = (local) => void code.push(op.get, local);
  const set = (local) => void code.push(op.set, local);
  const i32 = (value) => void code.push(op.i32Const, ...sleb(value));
  const address = (local) => {
    get(local);
    i32(shift);
    code.push(op.i32Shl);
    if (lane) {
      get(base);
      code.push(op.i32Add);
    }
  };
  if (lane) {
    i32(laneMessageAt);
    get(7);
    i32(2);
    code.push(op.i32Shl, op.i32Add);
    set(base);
  }
  for (let i = 0; i < 4; i++) {
    if (lane) get(base);
    else i32(0);
    get(3 + i);
    code.push(op.store, 2, ...uleb(i << shift));
  }
  get(headLength);
  i32(2);
  code.push(op.i32ShrS);
  set(whole);
  i32(tailMemoAt);
  get(slot);
  i32(tailSlotBytes);
  code.push(op.i32Mul, op.i32Add);
  get(headLength);
  i32(3);
  code.push(op.i32And);
  i32(tailStrideBytes);
  code.push(op.i32Mul, op.i32Add);
  set(tail);
  get(headLength);
  get(tailLength);
  code.push(op.i32Add);
  set(length);
  get(length);
  i32(9 + 63);
  code.push(op.i32Add);
  i32(6);
  code.push(op.i32ShrS);
  i32(4);
  code.push(op.i32Shl);
  set(words);
  address(whole);
  address(whole);
  code.push(op.load, 2, 0);
  i32(0);
  get(headLength);
  i32(3);
  code.push(op.i32And, op.select);
  get(tail);
  code.push(op.load, 2, 0, op.i32Or, op.store, 2, 0);
  get(whole);
  get(headLength);
  i32(3);
  code.push(op.i32And);
  get(tailLength);
  code.push(op.i32Add);
  i32(4);
  code.push(op.i32Add);
  i32(2);
  code.push(op.i32ShrS, op.i32Add);
  set(tailEnd2);
  get(whole);
  i32(1);
  code.push(op.i32Add);
  set(j2);
  code.push(op.block, 64, op.loop, 64);
  get(j2);
  get(tailEnd2);
  code.push(op.i32GeU, op.brIf, 1);
  address(j2);
  get(tail);
  get(j2);
  get(whole);
  code.push(op.i32Sub);
  i32(2);
  code.push(op.i32Shl, op.i32Add, op.load, 2, 0, op.store, 2, 0);
  get(j2);
  i32(1);
  code.push(op.i32Add);
  set(j2);
  code.push(op.br, 0, op.end, op.end);
  code.push(op.block, 64, op.loop, 64);
  get(j2);
  get(words);
  i32(1);
  code.push(op.i32Sub, op.i32GeU, op.brIf, 1);
  address(j2);
  i32(0);
  code.push(op.store, 2, 0);
  get(j2);
  i32(1);
  code.push(op.i32Add);
  set(j2);
  code.push(op.br, 0, op.end, op.end);
  get(words);
  i32(1);
  code.push(op.i32Sub);
  set(j2);
  address(j2);
  get(length);
  i32(3);
  code.push(op.i32Shl, op.store, 2, 0);
  get(words);
  if (!lane) code.push(op.call, 0);
  code.push(op.end);
  return [1, lane ? 7 : 6, 127].concat(code);
}
function moduleBytes() {
  const compress = compressBody();
  const splice = spliceBody(false);
  return Uint8Array.from(
    [0, 97, 115, 109, 1, 0, 0, 0].concat(
      section(1, [2, 96, 1, 127, 1, 124, 96, 7, 127, 127, 127, 127, 127, 127, 127, 1, 124]),
      // types: (i32) > f64, (i32 x7) > f64
      section(3, [2, 0, 1]),
      // function 0 of type 0, function 1 of type 1
      section(5, [1, 0, 1]),
      // memory 0: one page, no maximum
      section(7, [3, 1, 109, 2, 0, 1, 99, 0, 0, 1, 115, 0, 1]),
      // exports "m", "c", "s"
      section(10, [2].concat(uleb(compress.length), compress, uleb(splice.length), splice))
    )
  );
}
var wasmSha1Unavailable = null;
function instantiate() {
  const wasm = globalThis.WebAssembly;
  if (wasm === void 0) {
    wasmSha1Unavailable = "no WebAssembly in this process (node --jitless?)";
    return null;
  }
  if (!littleEndian()) {
    wasmSha1Unavailable = "a big-endian host";
    return null;
  }
  try {
    const instance = new wasm.Instance(new wasm.Module(moduleBytes()));
    const memory = instance.exports.m;
    return {
      memory,
      message: new Int32Array(memory.buffer, 0, 4 * 16),
      tails: [0, 1, 2, 3].map((slot) => new Int32Array(memory.buffer, tailMemoAt + slot * tailSlotBytes, tailSlotBytes / 4)),
      compress: instance.exports.c,
      splice: instance.exports.s
    };
  } catch (error) {
    wasmSha1Unavailable = `WebAssembly failed: ${error.message}`;
    return null;
  }
}
var wasmSha1 = instantiate();

// src/eval/sha1-simd.ts
var resultsAt = laneMessageAt + 4 * 64 * 4;
var v128 = 123;
var i32Type = 127;
var f64Type = 124;
var i32x4Bytes = (value) => {
  const bytes2 = [value & 255, value >>> 8 & 255, value >>> 16 & 255, value >>> 24];
  return bytes2.concat(bytes2, bytes2, bytes2);
};
function compress4Body() {
  const divisor = 4;
  const [at, most2] = [5, 6];
  const h = [7, 8, 9, 10, 11];
  const work = [12, 13, 14, 15, 16];
  const w = (i) => 17 + (i & 15);
  const [r0, r1, counts] = [33, 34, 35];
  const code = [];
  const get = (local) => void code.push(op.get, local);
  const set = (local) => void code.push(op.set, local);
  const i32 = (value) => void code.push(op.i32Const, ...sleb(value));
  const vec = (instruction, immediates) => {
    if (instruction < 128) code.push(253, instruction);
    else code.push(253, instruction & 127 | 128, instruction >> 7);
    if (immediates !== void 0) for (const byte of immediates) code.push(byte);
  };
  const constants = /* @__PURE__ */ new Map();
  const splat = (value) => {
    let bytes2 = constants.get(value);
    if (bytes2 === void 0) constants.set(value, bytes2 = i32x4Bytes(value));
    vec(simd.const, bytes2);
  };
  const rotl = (local, n) => {
    get(local);
    i32(n);
    vec(simd.i32x4Shl);
    get(local);
    i32(32 - n);
    vec(simd.i32x4ShrU);
    vec(simd.or);
  };
  get(0);
  vec(simd.i32x4Splat);
  for (let lane = 1; lane < 4; lane++) {
    get(lane);
    vec(simd.i32x4ReplaceLane, [lane]);
  }
  set(counts);
  get(0);
  set(most2);
  for (let lane = 1; lane < 4; lane++) {
    get(lane);
    get(most2);
    get(lane);
    get(most2);
    code.push(op.i32GtU, op.select);
    set(most2);
  }
  const initial = [1732584193, 4023233417, 2562383102, 271733878, 3285377520];
  for (let i = 0; i < 5; i++) {
    splat(initial[i]);
    set(h[i]);
  }
  i32(0);
  set(at);
  code.push(op.loop, 64);
  for (let i = 0; i < 16; i++) {
    get(at);
    i32(4);
    code.push(op.i32Shl);
    vec(simd.load, [4, ...uleb(laneMessageAt + i * 16)]);
    set(w(i));
  }
  for (let i = 0; i < 5; i++) {
    get(h[i]);
    set(work[i]);
  }
  let [a, b, c, d3, e] = work;
  for (let t = 0; t < 80; t++) {
    if (t >= 16) {
      get(w(t - 3));
      get(w(t - 8));
      vec(simd.xor);
      get(w(t - 14));
      vec(simd.xor);
      get(w(t - 16));
      vec(simd.xor);
      set(w(t));
      rotl(w(t), 1);
      set(w(t));
    }
    rotl(a, 5);
    if (t < 20) {
      get(c);
      get(d3);
      get(b);
      vec(simd.bitselect);
    } else if (t >= 40 && t < 60) {
      get(d3);
      get(b);
      get(b);
      get(c);
      vec(simd.xor);
      vec(simd.bitselect);
    } else {
      get(b);
      get(c);
      vec(simd.xor);
      get(d3);
      vec(simd.xor);
    }
    vec(simd.i32x4Add);
    get(e);
    vec(simd.i32x4Add);
    splat(t < 20 ? 1518500249 : t < 40 ? 1859775393 : t < 60 ? 2400959708 : 3395469782);
    vec(simd.i32x4Add);
    get(w(t));
    vec(simd.i32x4Add);
    set(e);
    rotl(b, 30);
    set(b);
    [a, b, c, d3, e] = [e, a, b, c, d3];
  }
  for (let i = 0; i < 5; i++) {
    get(h[i]);
    get(work[i]);
    vec(simd.i32x4Add);
    set(h[i]);
  }
  get(at);
  i32(16);
  code.push(op.i32Add);
  set(at);
  for (const [result, state] of [
    [r0, h[0]],
    [r1, h[1]]
  ]) {
    get(state);
    get(result);
    get(counts);
    get(at);
    vec(simd.i32x4Splat);
    vec(simd.i32x4Eq);
    vec(simd.bitselect);
    set(result);
  }
  get(at);
  get(most2);
  code.push(op.i32LtU, op.brIf, 0, op.end);
  const high = [8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15];
  for (let pair = 0; pair < 2; pair++) {
    i32(resultsAt);
    get(r0);
    if (pair === 1) {
      get(r0);
      vec(simd.shuffle, high);
    }
    vec(simd.f64x2ConvertLowI32x4U);
    vec(simd.const, [...f64Bytes(268435456), ...f64Bytes(268435456)]);
    vec(simd.f64x2Mul);
    get(r1);
    if (pair === 1) {
      get(r1);
      vec(simd.shuffle, high);
    }
    i32(4);
    vec(simd.i32x4ShrU);
    splat(268435455);
    vec(simd.and);
    vec(simd.f64x2ConvertLowI32x4U);
    vec(simd.f64x2Add);
    get(divisor);
    vec(simd.f64x2Splat);
    vec(simd.f64x2Div);
    vec(simd.store, [4, ...uleb(pair * 16)]);
  }
  code.push(op.end);
  return [2, 2, i32Type, 29, v128].concat(code);
}
function batchBody(maxBytes) {
  const n = [23, 24, 25, 26];
  const code = [];
  const get = (local) => void code.push(op.get, local);
  const i32 = (value) => void code.push(op.i32Const, ...sleb(value));
  for (let lane = 0; lane < 4; lane++) {
    const length = 2 + 5 * lane;
    get(length);
    i32(0);
    code.push(op.i32LtS);
    get(length);
    get(1);
    code.push(op.i32Add);
    i32(maxBytes);
    code.push(op.i32GtS, op.i32Or, op.if, i32Type);
    i32(0);
    code.push(op.else);
    get(length);
    get(0);
    get(1);
    for (let i = 1; i <= 4; i++) get(length + i);
    i32(lane);
    code.push(op.call, 0, op.end, op.set, n[lane]);
  }
  for (const local of n) get(local);
  get(22);
  code.push(op.call, 1);
  const nan = f64Bytes(NaN);
  for (let lane = 0; lane < 4; lane++) {
    get(n[lane]);
    code.push(op.i32Eqz, op.if, 64);
    i32(resultsAt + 8 * lane);
    code.push(op.f64Const, ...nan, op.f64Store, 3, 0, op.end);
  }
  code.push(op.end);
  return [1, 4, i32Type].concat(code);
}
function moduleBytes2() {
  const splice = spliceBody(true);
  const compress = compress4Body();
  const batch = batchBody(4 * 64 - 9);
  return Uint8Array.from(
    [0, 97, 115, 109, 1, 0, 0, 0].concat(
      section(1, [3, 96, 8, ...Array(8).fill(i32Type), 1, i32Type, 96, 5, ...Array(4).fill(i32Type), f64Type, 0, 96, 23, ...Array(22).fill(i32Type), f64Type, 0]),
      // types
      section(2, [1, 1, 101, 1, 109, 2, 0, 1]),
      // one import, e.m: a memory of at least one page
      section(3, [3, 0, 1, 2]),
      section(7, [2, 1, 120, 0, 1, 1, 98, 0, 2]),
      // exports "x", "b"
      section(10, [3].concat(uleb(splice.length), splice, uleb(compress.length), compress, uleb(batch.length), batch))
    )
  );
}
function instantiateSha1x4(wasm, memory) {
  try {
    const instance = new wasm.Instance(new wasm.Module(moduleBytes2()), { e: { m: memory } });
    const buffer = memory.buffer;
    return {
      lanes: new Int32Array(buffer, laneMessageAt, 4 * 64),
      compress: instance.exports.x,
      batch: instance.exports.b,
      results: new Float64Array(buffer, resultsAt, 4)
    };
  } catch (error) {
    return `WebAssembly SIMD failed: ${error.message}`;
  }
}
var made = wasmSha1 === null ? "no WebAssembly hash" : instantiateSha1x4(globalThis.WebAssembly, wasmSha1.memory);
var wasmSha1x4 = typeof made === "string" ? null : made;
var wasmSha1x4Unavailable = typeof made === "string" ? made : null;

// src/eval/sha1.ts
var maxShortBytes = 4 * 64 - 9;
var bytes = new Uint8Array(3 + 4 * 64 + 4);
var message = wasmSha1 !== null ? wasmSha1.message : new Int32Array(4 * 16);
var wasmSplice = wasmSha1 !== null ? wasmSha1.splice : null;
var tailStride = 64;
var tailText = ["", "", "", ""];
var tailSalt = ["", "", "", ""];
var tailLengths = new Int32Array(4);
var lastUsed = new Int32Array([0, 2]);
var tailWords = wasmSha1 !== null ? wasmSha1.tails : [0, 1, 2, 3].map(() => new Int32Array(4 * tailStride));
for (const words of tailWords) for (let a = 0; a < 4; a++) words[a * tailStride] = 128 << 24 - 8 * a;
function encode(text2, at, limit) {
  let n = at;
  for (let i = 0; i < text2.length; i++) {
    let c = text2.charCodeAt(i);
    if (c < 128) {
      if (n === limit) return -1;
      bytes[n++] = c;
    } else if (c < 2048) {
      if (n + 2 > limit) return -1;
      bytes[n++] = 192 | c >> 6;
      bytes[n++] = 128 | c & 63;
    } else {
      const next = text2.charCodeAt(i + 1);
      if (c >= 55296 && c <= 56319 && next >= 56320 && next <= 57343) {
        if (n + 4 > limit) return -1;
        c = 65536 + (c - 55296 << 10) + (next - 56320);
        i++;
        bytes[n++] = 240 | c >> 18;
        bytes[n++] = 128 | c >> 12 & 63;
        bytes[n++] = 128 | c >> 6 & 63;
        bytes[n++] = 128 | c & 63;
        continue;
      }
      if (n + 3 > limit) return -1;
      if (c >= 55296 && c <= 57343) c = 65533;
      bytes[n++] = 224 | c >> 12;
      bytes[n++] = 128 | c >> 6 & 63;
      bytes[n++] = 128 | c & 63;
    }
  }
  return n;
}
var wordAt = (i) => bytes[i] << 24 | bytes[i + 1] << 16 | bytes[i + 2] << 8 | bytes[i + 3];
function messageHeads(texts) {
  const words = [];
  const at = texts.map((text2) => {
    const start = words.length;
    const end = encode(text2, 3, 3 + maxShortBytes);
    if (end < 0) {
      words.push(maxShortBytes + 1);
      return start;
    }
    bytes.fill(0, end, end + 4);
    words.push(end - 3);
    for (let i = 3; i < end; i += 4) words.push(wordAt(i));
    return start;
  });
  words.push(0, 0, 0, 0);
  return { words: Int32Array.from(words), at };
}
function tailSlot(value, salt) {
  const pair = salt === "" ? 0 : 2;
  if (tailText[pair] === value && tailSalt[pair] === salt) {
    tailText[pair] = value;
    return lastUsed[pair >> 1] = pair;
  }
  if (tailText[pair + 1] === value && tailSalt[pair + 1] === salt) {
    tailText[pair + 1] = value;
    return lastUsed[pair >> 1] = pair + 1;
  }
  let end = encode(value, 3, 3 + maxShortBytes);
  if (end >= 0 && salt !== "") end = encode(salt, end, 3 + maxShortBytes);
  if (end < 0) return -1;
  bytes[end] = 128;
  bytes.fill(0, end + 1, end + 8);
  const slot = lastUsed[pair >> 1] === pair ? pair + 1 : pair;
  const words = tailWords[slot];
  const count = end - 3 + 1 + 3 + 3 >> 2;
  for (let a = 0; a < 4; a++) for (let j2 = 0; j2 < count; j2++) words[a * tailStride + j2] = wordAt(3 - a + 4 * j2);
  tailText[slot] = value;
  tailSalt[slot] = salt;
  tailLengths[slot] = end - 3;
  lastUsed[pair >> 1] = slot;
  return slot;
}
function sha1First60Of(heads, at, value, salt) {
  const headLength = heads[at];
  if (headLength > maxShortBytes) return null;
  const slot = tailSlot(value, salt);
  if (slot < 0) return null;
  const tailLength = tailLengths[slot];
  const length = headLength + tailLength;
  if (length > maxShortBytes) return null;
  const w = message;
  if (wasmSplice !== null) {
    const headWords = headLength + 3 >> 2;
    const first2 = at + 1;
    for (let j3 = 4; j3 < headWords; j3++) w[j3] = heads[first2 + j3];
    return wasmSplice(
      headLength,
      slot,
      tailLength,
      headWords > 0 ? heads[first2] : 0,
      headWords > 1 ? heads[first2 + 1] : 0,
      headWords > 2 ? heads[first2 + 2] : 0,
      headWords > 3 ? heads[first2 + 3] : 0
    );
  }
  const tail = tailWords[slot];
  const words = (length + 9 + 63 >> 6) * 16;
  const whole = headLength >> 2;
  for (let j3 = 0; j3 < whole; j3++) w[j3] = heads[at + 1 + j3];
  const offset = (headLength & 3) * tailStride;
  const first = offset === 0 ? 0 : heads[at + 1 + whole];
  w[whole] = first | tail[offset];
  const tailEnd2 = whole + ((headLength & 3) + tailLength + 4 >> 2);
  let j2 = whole + 1;
  for (; j2 < tailEnd2; j2++) w[j2] = tail[offset + j2 - whole];
  for (; j2 < words - 1; j2++) w[j2] = 0;
  w[words - 1] = length * 8;
  return sha1Compress(w, words);
}
function laneHead(lanes, heads, at, lane) {
  const headLength = heads[at];
  const headWords = headLength > maxShortBytes ? 0 : headLength + 3 >> 2;
  for (let j2 = 4; j2 < headWords; j2++) lanes[4 * j2 + lane] = heads[at + 1 + j2];
  return headLength;
}
function sha1First60Of4(heads, at, others, value, salt, divisor, out) {
  const x4 = wasmSha1x4;
  if (x4 === null) return false;
  const slot = tailSlot(value, salt);
  if (slot < 0) return false;
  const lanes = x4.lanes;
  const count = others.length;
  const at1 = count > 0 ? others[0] : 0;
  const at2 = count > 1 ? others[1] : 0;
  const at3 = count > 2 ? others[2] : 0;
  x4.batch(
    slot,
    tailLengths[slot],
    laneHead(lanes, heads, at, 0),
    heads[at + 1],
    heads[at + 2],
    heads[at + 3],
    heads[at + 4],
    count > 0 ? laneHead(lanes, heads, at1, 1) : -1,
    heads[at1 + 1],
    heads[at1 + 2],
    heads[at1 + 3],
    heads[at1 + 4],
    count > 1 ? laneHead(lanes, heads, at2, 2) : -1,
    heads[at2 + 1],
    heads[at2 + 2],
    heads[at2 + 3],
    heads[at2 + 4],
    count > 2 ? laneHead(lanes, heads, at3, 3) : -1,
    heads[at3 + 1],
    heads[at3 + 2],
    heads[at3 + 3],
    heads[at3 + 4],
    divisor
  );
  const results = x4.results;
  out[0] = results[0];
  if (count > 0) out[1] = results[1];
  if (count > 1) out[2] = results[2];
  if (count > 2) out[3] = results[3];
  return true;
}
var noHead = new Int32Array([0]);

// src/eval/hash.ts
var longScale = 1152921504606847e3;
function longSha1(text2) {
  const digest = hash2("sha1", text2, "buffer");
  const high = digest.readUInt32BE(0);
  const low = digest.readUInt32BE(4) >>> 4 & 268435455;
  return (high * 268435456 + low) / longScale;
}
var flagHashHeads = (keys) => messageHeads(keys.map((key) => `${key}.`));
function flagHashOf(key, heads, at, bucketingValue, salt = "") {
  const short = sha1First60Of(heads, at, bucketingValue, salt);
  return short !== null ? short / longScale : longSha1(`${key}.${bucketingValue}${salt}`);
}
function flagHashesOf(heads, at, others, bucketingValue, salt, out) {
  return sha1First60Of4(heads, at, others, bucketingValue, salt, longScale, out);
}
var holdoutHead = messageHeads(["holdout-"]).words;
function holdoutHash(bucketingValue) {
  const short = sha1First60Of(holdoutHead, 0, bucketingValue, "");
  return short !== null ? short / longScale : longSha1(`holdout-${bucketingValue}`);
}

// src/eval/hash-memo.ts
var memoBytes = 2 * 1024 * 1024;
var maxValueLength = 200;
var entryOverhead3 = 160;
var recentSlots = 4096;
var pageBytes = 64 * 1024;
var BucketHashMemo = class {
  /** Each kept value's row, numbered from 0 (row r is at (r % rowsPerPage) ? rowSize of page r / rowsPerPage). */
  rows = /* @__PURE__ */ new Map();
  /**
   * The kept values in a ring, by row: `next` is the oldest once it is full. (A Map's own order is no queue: its
   * first key is found by walking past the slots of the keys deleted before it.)
   */
  ring = [];
  next = 0;
  pages = [];
  /**
   * Values met once (in a loose row), by hash. A value is kept from its second request on: a stream of one-off
   * values (a new person each request) then never touches the Map, whose deletions and insertions at that rate
   * rehashed it over and over (~14 MiB more RSS under such load at 30 flags), and no such value is held past the
   * next two (held strings were promoted to the old generation: ~5 MiB).
   */
  recent = new SeenOnce(recentSlots);
  /** Where values not kept (met once, or too long) are hashed: two rows, and the value each is for. */
  loose;
  looseValues = [null, null];
  lastLoose = 0;
  tenancies = 0;
  rowSize;
  rowsPerPage;
  maxEntries;
  /** The row `find` gave: its page and where it starts. */
  page;
  base = 0;
  /** `bytes`: the bound (tests give less). */
  constructor(slots, bytes2 = memoBytes) {
    this.rowSize = 1 + 2 * slots;
    this.maxEntries = Math.max(1, Math.floor(bytes2 / (8 * this.rowSize + entryOverhead3)));
    this.rowsPerPage = Math.min(this.maxEntries, Math.max(1, Math.floor(pageBytes / (8 * this.rowSize))));
    this.loose = [new Float64Array(this.rowSize), new Float64Array(this.rowSize)];
    this.page = this.loose[0];
  }
  /**
   * Point `page` and `base` at `value`'s row: the one kept, else its loose row, else an empty one (kept for it
   * when it was met before, else a loose row). The row is `value`'s while its tenancy (at `base`) stays what it was
   * when this returned.
   */
  find(value) {
    let row = this.rows.get(value);
    if (row === void 0) {
      for (let k2 = 0; k2 < 2; k2++) {
        if (this.looseValues[k2] === value) {
          this.page = this.loose[k2];
          this.base = 0;
          this.lastLoose = k2;
          return;
        }
      }
      if (value.length > maxValueLength || !this.recent.again(value)) {
        const k2 = 1 - this.lastLoose;
        this.looseValues[k2] = value;
        this.lastLoose = k2;
        this.page = this.loose[k2];
        this.base = 0;
        this.empty();
        return;
      }
      if (this.ring.length < this.maxEntries) {
        row = this.ring.length;
        this.ring.push(value);
      } else {
        row = this.next;
        this.rows.delete(this.ring[row]);
        this.ring[row] = value;
        this.next = row + 1 === this.maxEntries ? 0 : row + 1;
      }
      this.rows.set(value, row);
      this.locate(row);
      this.empty();
      return;
    }
    this.locate(row);
  }
  /** How many values are kept (tests, metrics). */
  get size() {
    return this.rows.size;
  }
  locate(row) {
    const index = Math.floor(row / this.rowsPerPage);
    let page = this.pages[index];
    if (page === void 0) {
      const rows = Math.min(this.rowsPerPage, this.maxEntries - index * this.rowsPerPage);
      page = new Float64Array(rows * this.rowSize);
      this.pages[index] = page;
    }
    this.page = page;
    this.base = (row - index * this.rowsPerPage) * this.rowSize;
  }
  /** The row found emptied, under a new tenancy. */
  empty() {
    this.page.fill(Number.NaN, this.base + 1, this.base + this.rowSize);
    this.page[this.base] = ++this.tenancies;
  }
};

// src/eval/hash-peers.ts
var most = 3;
var none3 = Object.freeze([]);
function hashPeers(flags) {
  const latest = /* @__PURE__ */ new Map();
  flags.forEach((flag, i) => latest.set(flag.key, i));
  const order = [...latest.values()];
  const hashes = (flag) => flag.active && !flag.continuity;
  const rolloutNeeded = (flag) => hashes(flag) && flag.conditions.some((c) => c.rollout != null && c.rollout < 100);
  const variantNeeded = (flag) => hashes(flag) && flag.variants.length > 0;
  const kind = (flag) => flag.aggregation != null ? `group ${flag.aggregation}` : flag.deviceBucketing ? "device" : "person";
  const pick = (needed) => {
    const peers = flags.map(() => none3);
    const next = /* @__PURE__ */ new Map();
    for (let p = order.length - 1; p >= 0; p--) {
      const i = order[p];
      const flag = flags[i];
      const ahead = next.get(kind(flag)) ?? [];
      if (ahead.length > 0) peers[i] = ahead;
      if (needed(flag)) next.set(kind(flag), [i, ...ahead].slice(0, most));
    }
    return peers;
  };
  return { rollout: pick(rolloutNeeded), variant: pick(variantNeeded) };
}

// src/eval/value-matcher.ts
var unsupportedOperator = { match: () => "inconclusive", supported: false };
function supported(match) {
  return { match, supported: true };
}

// src/eval/dates.ts
var HOUR_MS = 36e5;
var DAY_MS = 864e5;
var MAX_TIME_MS = 864e13;
function clippedTime(ms) {
  if (!Number.isFinite(ms) || Math.abs(ms) > MAX_TIME_MS) return NaN;
  return Math.trunc(ms) + 0;
}
function propertyTime(value) {
  let time;
  if (typeof value === "string") time = Date.parse(value);
  else if (typeof value === "number") time = clippedTime(value);
  else if (value instanceof Date) return value.getTime();
  else return void 0;
  return Number.isNaN(time) ? void 0 : time;
}
function daysInUtcMonth(year, month) {
  return new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
}
function relativeThreshold(unit, count, nowMs) {
  const now = clippedTime(nowMs);
  if (unit === "h") return clippedTime(now - count * HOUR_MS);
  if (unit === "d") return clippedTime(now - count * DAY_MS);
  if (unit === "w") return clippedTime(now - count * 7 * DAY_MS);
  const date = new Date(now);
  const year = date.getUTCFullYear();
  const month = date.getUTCMonth();
  let day = date.getUTCDate();
  if (unit === "m") {
    for (let back = 1; back <= count && day > 28; back++) day = Math.min(day, daysInUtcMonth(year, month - back));
    return date.setUTCFullYear(year, month - count, day);
  }
  if (count > 0 && month === 1 && day === 29) day = 28;
  return date.setUTCFullYear(year - count, month, day);
}
function parseDateFilter(target) {
  if (typeof target === "boolean") return void 0;
  const relative = /^-?([0-9]+)([a-z])$/.exec(String(target));
  if (relative !== null) {
    const count = parseInt(relative[1] ?? "", 10);
    const unit = relative[2] ?? "";
    if (count < 1e4 && "hdwmy".includes(unit)) return { kind: "relative", unit, count };
  }
  if (target instanceof Date) return { kind: "absolute", ms: target.getTime() };
  if (typeof target !== "string" && typeof target !== "number") return void 0;
  const ms = new Date(target).getTime();
  return Number.isNaN(ms) ? void 0 : { kind: "absolute", ms };
}
function compileDateOperator(before, target) {
  const filter = parseDateFilter(target);
  return filter === void 0 ? unsupportedOperator : { match: dateMatcher(before, filter), supported: true };
}
function dateMatcher(before, filter) {
  const decide = (time, threshold2) => before ? time < threshold2 : time > threshold2;
  if (filter.kind === "absolute") {
    const threshold2 = filter.ms;
    return (value) => {
      const time = propertyTime(value);
      return time === void 0 ? "inconclusive" : decide(time, threshold2);
    };
  }
  const { unit, count } = filter;
  const calendar = unit === "m" || unit === "y";
  let anchoredAt = NaN;
  let threshold = NaN;
  return (value, nowMs) => {
    const time = propertyTime(value);
    if (time === void 0) return "inconclusive";
    if (nowMs !== anchoredAt) {
      threshold = relativeThreshold(unit, count, nowMs);
      anchoredAt = nowMs;
    }
    const verdict = decide(time, threshold);
    let until = before ? verdict ? Infinity : nowMs + (time - threshold) : verdict ? nowMs + (time - threshold) - 1 : Infinity;
    if (calendar) until = Math.min(until, (Math.floor(nowMs / DAY_MS) + 1) * DAY_MS - 1);
    if (!(until >= horizon)) horizon = Number.isNaN(until) ? -Infinity : until;
    return verdict;
  };
}
var horizon = Infinity;
function watchClock() {
  horizon = Infinity;
}
var clockHorizon = () => horizon;

// src/eval/json-text.ts
function hasUnpairedSurrogate(text2) {
  for (let i = 0; i < text2.length; i++) {
    const unit = text2.charCodeAt(i);
    if (unit < 55296 || unit > 57343) continue;
    if (unit >= 56320) return true;
    const next = text2.charCodeAt(i + 1);
    if (!(next >= 56320 && next <= 57343)) return true;
    i++;
  }
  return false;
}
function isPlainObject(value) {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
function compareByCodePoint(left, right) {
  let i = 0;
  while (i < left.length && i < right.length) {
    const a = left.codePointAt(i) ?? 0;
    const b = right.codePointAt(i) ?? 0;
    if (a !== b) return a - b;
    i += a > 65535 ? 2 : 1;
  }
  return left.length - right.length;
}
function serialize(value, open2) {
  switch (typeof value) {
    case "string":
      return hasUnpairedSurrogate(value) ? void 0 : JSON.stringify(value);
    case "boolean":
      return value ? "true" : "false";
    case "number":
      return Number.isFinite(value) && !Number.isInteger(value) ? String(value) : void 0;
    case "object":
      break;
    default:
      return void 0;
  }
  if (value === null) return "null";
  if (open2.has(value)) return void 0;
  open2.add(value);
  try {
    if (Array.isArray(value)) {
      const parts2 = [];
      for (let i = 0; i < value.length; i++) {
        const part = i in value ? serialize(value[i], open2) : "null";
        if (part === void 0) return void 0;
        parts2.push(part);
      }
      return `[${parts2.join(",")}]`;
    }
    if (!isPlainObject(value)) return void 0;
    const record = value;
    const keys = Object.keys(record);
    for (const key of keys) if (hasUnpairedSurrogate(key)) return void 0;
    keys.sort(compareByCodePoint);
    const parts = [];
    for (const key of keys) {
      const part = serialize(record[key], open2);
      if (part === void 0) return void 0;
      parts.push(`${JSON.stringify(key)}:${part}`);
    }
    return `{${parts.join(",")}}`;
  } finally {
    open2.delete(value);
  }
}
function exactText(value) {
  if (typeof value === "string") return hasUnpairedSurrogate(value) ? void 0 : value;
  if (typeof value === "number") return Number.isFinite(value) && !Number.isInteger(value) ? String(value) : void 0;
  if (typeof value === "boolean") return value ? "true" : "false";
  return serialize(value, /* @__PURE__ */ new Set());
}
function representable(value, open2) {
  switch (typeof value) {
    case "string":
      return !hasUnpairedSurrogate(value);
    case "boolean":
      return true;
    case "number":
      return Number.isFinite(value);
    case "object":
      break;
    default:
      return false;
  }
  if (value === null) return true;
  if (open2.has(value)) return false;
  open2.add(value);
  try {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) if (i in value && !representable(value[i], open2)) return false;
      return true;
    }
    if (!isPlainObject(value)) return false;
    const record = value;
    for (const key of Object.keys(record)) {
      if (hasUnpairedSurrogate(key) || !representable(record[key], open2)) return false;
    }
    return true;
  } finally {
    open2.delete(value);
  }
}
function isJsonRepresentable(value) {
  if (value === null || typeof value === "boolean") return true;
  if (typeof value === "string") return !hasUnpairedSurrogate(value);
  if (typeof value === "number") return Number.isFinite(value);
  return representable(value, /* @__PURE__ */ new Set());
}

// src/eval/exact.ts
function lowerEquals(text2, word) {
  return text2.length === word.length && text2.toLowerCase() === word;
}
function isBooleanLike(value) {
  if (typeof value === "boolean") return true;
  if (typeof value === "string") return lowerEquals(value, "true") || lowerEquals(value, "false");
  if (!Array.isArray(value)) return false;
  for (let i = 0; i < value.length; i++) if (!isBooleanLike(i in value ? value[i] : null)) return false;
  return true;
}
function isTruthy(value) {
  if (typeof value === "boolean") return value;
  if (typeof value === "string") return lowerEquals(value, "true");
  if (!Array.isArray(value)) return false;
  for (let i = 0; i < value.length; i++) if (!isTruthy(i in value ? value[i] : null)) return false;
  return true;
}
function compileTruthiness(target, negate) {
  const wanted = isTruthy(target);
  return (value) => isJsonRepresentable(value) ? isTruthy(value) === wanted !== negate : "inconclusive";
}
function compileMembership(target, numbersNeverMatch, negate) {
  const accepted = /* @__PURE__ */ new Set();
  let unknowableItem = false;
  for (let i = 0; i < target.length; i++) {
    if (!(i in target)) continue;
    const text2 = exactText(target[i]);
    if (text2 === void 0) {
      unknowableItem = true;
      break;
    }
    accepted.add(text2.toLowerCase());
  }
  const miss = unknowableItem ? "inconclusive" : negate;
  return (value) => {
    if (numbersNeverMatch && typeof value === "number") return Number.isFinite(value) ? negate : "inconclusive";
    const text2 = exactText(value);
    if (text2 === void 0) return "inconclusive";
    return accepted.has(text2.toLowerCase()) ? !negate : miss;
  };
}
function compileEquality(target, numbersNeverMatch, negate) {
  const targetText = exactText(target);
  if (targetText === void 0) return () => "inconclusive";
  const wanted = targetText.toLowerCase();
  return (value) => {
    if (numbersNeverMatch && typeof value === "number") return Number.isFinite(value) ? negate : "inconclusive";
    const text2 = exactText(value);
    if (text2 === void 0) return "inconclusive";
    return text2.toLowerCase() === wanted !== negate;
  };
}
function compileMatcher(target, explicit, negate) {
  const isArray = Array.isArray(target);
  if (!explicit && isBooleanLike(target) || isArray && target.length === 0) return compileTruthiness(target, negate);
  const numbersNeverMatch = explicit && isBooleanLike(target);
  return isArray ? compileMembership(target, numbersNeverMatch, negate) : compileEquality(target, numbersNeverMatch, negate);
}
function everyItemHasText(target) {
  if (!Array.isArray(target)) return exactText(target) !== void 0;
  for (const item of target) if (exactText(item) === void 0) return false;
  return true;
}
function compileExact(target, matchingVersion, negate) {
  return { match: compileMatcher(target, matchingVersion === 2, negate), supported: everyItemHasText(target) };
}

// src/eval/numeric-operators.ts
function ordered(operator, left, right) {
  switch (operator) {
    case "gt":
      return left > right;
    case "gte":
      return left >= right;
    case "lt":
      return left < right;
    case "lte":
      return left <= right;
  }
}
function compileOrdering(operator, target) {
  return supported(orderingMatcher(operator, target));
}
function orderingMatcher(operator, target) {
  const targetText = String(target);
  const targetNumber = typeof target === "number" ? target : parseFloat(targetText);
  if (!Number.isFinite(targetNumber)) {
    return (value) => ordered(operator, typeof value === "string" ? value : String(value), targetText);
  }
  return (value) => {
    if (typeof value === "number") {
      return Number.isFinite(value) ? ordered(operator, value, targetNumber) : ordered(operator, String(value), targetText);
    }
    const text2 = typeof value === "string" ? value : String(value);
    const number = parseFloat(text2);
    return Number.isFinite(number) ? ordered(operator, number, targetNumber) : ordered(operator, text2, targetText);
  };
}

// src/eval/regex.ts
import { createRequire } from "node:module";

// src/eval/regex-linear.ts
var ASCII = 128;
var maxPositions = 256;
var maxDepth = 256;
var emptySet = [0, 0, 0, 0];
function setOfRange(low, high) {
  const words = [0, 0, 0, 0];
  for (let code = Math.max(low, 0); code <= Math.min(high, ASCII - 1); code++) words[code >>> 5] = words[code >>> 5] | 1 << (code & 31);
  return words;
}
var overlaps = (a, b) => (a[0] & b[0]) !== 0 || (a[1] & b[1]) !== 0 || (a[2] & b[2]) !== 0 || (a[3] & b[3]) !== 0;
function readHex(cursor) {
  const match = /\\x\{([0-9a-f]+)\}/y;
  match.lastIndex = cursor.at;
  const found = match.exec(cursor.text);
  if (found === null) return -1;
  cursor.at += found[0].length;
  return Number.parseInt(found[1], 16);
}
function readClass(cursor) {
  cursor.at++;
  const negated = cursor.text[cursor.at] === "^";
  if (negated) cursor.at++;
  const words = [0, 0, 0, 0];
  while (cursor.text[cursor.at] !== "]") {
    const low = readHex(cursor);
    if (low < 0) return null;
    let high = low;
    if (cursor.text[cursor.at] === "-") {
      cursor.at++;
      high = readHex(cursor);
      if (high < low) return null;
    }
    const range = setOfRange(low, high);
    for (let i = 0; i < 4; i++) words[i] = words[i] | range[i];
  }
  cursor.at++;
  return negated ? words.map((word) => ~word) : words;
}
function readAtom(cursor) {
  const char = cursor.text[cursor.at];
  if (char === "(") {
    if (!cursor.text.startsWith("(?:", cursor.at) || cursor.depth >= maxDepth) return null;
    cursor.at += 3;
    cursor.depth++;
    const inner = readAlternation(cursor);
    cursor.depth--;
    if (inner === null || cursor.text[cursor.at] !== ")") return null;
    cursor.at++;
    return inner;
  }
  if (char === "[") {
    const set = readClass(cursor);
    return set === null ? null : { kind: "set", set };
  }
  if (char === "\\") {
    const code = readHex(cursor);
    return code < 0 ? null : { kind: "set", set: setOfRange(code, code) };
  }
  if (char !== void 0 && /^[0-9A-Za-z]$/.test(char)) {
    cursor.at++;
    const code = char.charCodeAt(0);
    return { kind: "set", set: setOfRange(code, code) };
  }
  return null;
}
function readQuantifier(cursor) {
  const char = cursor.text[cursor.at];
  if (char === "*" || char === "+" || char === "?") {
    cursor.at++;
    return char === "*" ? [0, null] : char === "+" ? [1, null] : [0, 1];
  }
  if (char !== "{") return void 0;
  const count = /\{(\d+)(,(\d*))?\}/y;
  count.lastIndex = cursor.at;
  const found = count.exec(cursor.text);
  if (found === null) return null;
  cursor.at += found[0].length;
  const min = Number(found[1]);
  if (found[2] === void 0) return [min, min];
  return [min, found[3] === "" || found[3] === void 0 ? null : Number(found[3])];
}
function readSequence(cursor) {
  const items = [];
  while (cursor.at < cursor.text.length && cursor.text[cursor.at] !== "|" && cursor.text[cursor.at] !== ")") {
    if (cursor.text.startsWith("\\A", cursor.at) || cursor.text.startsWith("\\z", cursor.at)) {
      cursor.misplacedAnchor = true;
      return null;
    }
    let atom = readAtom(cursor);
    if (atom === null) return null;
    for (; ; ) {
      const quantifier = readQuantifier(cursor);
      if (quantifier === null) return null;
      if (quantifier === void 0) break;
      atom = { kind: "repeat", body: atom, min: quantifier[0], max: quantifier[1] };
    }
    items.push(atom);
  }
  return { kind: "seq", items };
}
function readAlternation(cursor) {
  const branches = [];
  for (; ; ) {
    const branch = readSequence(cursor);
    if (branch === null) return null;
    branches.push(branch);
    if (cursor.text[cursor.at] !== "|") break;
    cursor.at++;
  }
  return branches.length === 1 ? branches[0] : { kind: "alt", branches };
}
var Refused = class extends Error {
};
function link(automaton, from, to) {
  for (const p of from) for (const q of to) automaton.follow[p].add(q);
}
function build(node, automaton) {
  switch (node.kind) {
    case "set": {
      if (automaton.sets.length >= maxPositions) throw new Refused();
      const p = automaton.sets.length;
      automaton.sets.push(node.set);
      automaton.follow.push(/* @__PURE__ */ new Set());
      return { first: [p], last: [p], nullable: false };
    }
    case "seq": {
      let first = [];
      let last = [];
      let nullable = true;
      for (const item of node.items) {
        const part = build(item, automaton);
        link(automaton, last, part.first);
        if (nullable) first = first.concat(part.first);
        last = part.nullable ? last.concat(part.last) : [...part.last];
        nullable &&= part.nullable;
      }
      return { first, last, nullable };
    }
    case "alt": {
      const parts = node.branches.map((branch) => build(branch, automaton));
      if (parts.filter((part) => part.nullable).length > 1) throw new Refused();
      return { first: parts.flatMap((part) => part.first), last: parts.flatMap((part) => part.last), nullable: parts.some((part) => part.nullable) };
    }
    case "repeat": {
      const { body, min, max } = node;
      let result = { first: [], last: [], nullable: true };
      const append = (part) => {
        link(automaton, result.last, part.first);
        result = {
          first: result.nullable ? result.first.concat(part.first) : result.first,
          last: part.nullable ? result.last.concat(part.last) : part.last,
          nullable: result.nullable && part.nullable
        };
      };
      const copy = () => {
        const part = build(body, automaton);
        if (part.nullable) throw new Refused();
        return part;
      };
      for (let i = 0; i < min; i++) append(copy());
      if (max === null) {
        const loop = copy();
        link(automaton, loop.last, loop.first);
        append({ first: loop.first, last: loop.last, nullable: true });
      } else {
        if (max < min || max - min > maxPositions) throw new Refused();
        const optionals = [];
        for (let i = min; i < max; i++) optionals.push(copy());
        let tail = null;
        for (let i = optionals.length - 1; i >= 0; i--) {
          const part = optionals[i];
          if (tail === null) tail = { first: part.first, last: part.last, nullable: true };
          else {
            link(automaton, part.last, tail.first);
            tail = { first: part.first, last: part.last.concat(tail.last), nullable: true };
          }
        }
        if (tail !== null) append(tail);
      }
      return result;
    }
  }
}
function disjoint(automaton, positions) {
  let seen = emptySet;
  for (const p of positions) {
    const set = automaton.sets[p];
    if (overlaps(seen, set)) return false;
    seen = [seen[0] | set[0], seen[1] | set[1], seen[2] | set[2], seen[3] | set[3]];
  }
  return true;
}
function backtracksLinearly(syntax) {
  if (!syntax.startsWith("\\A")) return false;
  const endAnchored = syntax.endsWith("\\z");
  const body = syntax.slice(2, endAnchored ? -2 : void 0);
  const cursor = { text: body, at: 0, misplacedAnchor: false, depth: 0 };
  try {
    const root = readSequence(cursor);
    if (root === null || cursor.at !== body.length) return false;
    const automaton = { sets: [], follow: [] };
    const whole = build(root, automaton);
    if (!disjoint(automaton, whole.first)) return false;
    return automaton.follow.every((next) => disjoint(automaton, next));
  } catch {
    return false;
  }
}

// src/eval/regex-portability.ts
var PLAIN_ESCAPES = "dDsSwWbBfnrtv";
var START = "";
var ATOM = "atom";
var EMPTY_GROUP = "empty-group";
function isEscapablePunctuation(unit) {
  return unit >= 32 && unit <= 47 || unit === 58 || unit === 59 || unit === 61 || unit === 63 || unit === 64 || unit >= 91 && unit <= 96 || unit >= 123 && unit <= 126;
}
function isHexDigit(unit) {
  return unit >= 48 && unit <= 57 || unit >= 65 && unit <= 70 || unit >= 97 && unit <= 102;
}
function isDigit(unit) {
  return unit >= 48 && unit <= 57;
}
function isRepetition(pattern, at) {
  let i = at + 1;
  const minStart = i;
  while (isDigit(pattern.charCodeAt(i))) i++;
  if (i === minStart || Number(pattern.slice(minStart, i)) > 4294967295) return false;
  if (pattern[i] === ",") {
    const maxStart = ++i;
    while (isDigit(pattern.charCodeAt(i))) i++;
    if (Number(pattern.slice(maxStart, i)) > 4294967295) return false;
  }
  return pattern[i] === "}";
}
function portableCharacterClasses(pattern) {
  const classes = [];
  let classStart = -1;
  let previous = START;
  for (let i = 0; i < pattern.length; i++) {
    const unit = pattern.charCodeAt(i);
    if (unit > 127) return null;
    const char = pattern.charAt(i);
    if (char === "\\") {
      i++;
      if (i >= pattern.length) break;
      const escaped = pattern.charAt(i);
      if (escaped === "x") {
        if (!isHexDigit(pattern.charCodeAt(i + 1)) || !isHexDigit(pattern.charCodeAt(i + 2))) return null;
        i += 2;
      } else if (!PLAIN_ESCAPES.includes(escaped) && !isEscapablePunctuation(pattern.charCodeAt(i))) {
        return null;
      }
      if (classStart === -1 && (escaped === "b" || escaped === "B")) return null;
      previous = ATOM;
      continue;
    }
    if (classStart !== -1) {
      if (char === "[") return null;
      if (char === "]") {
        const contentStart = classStart + (pattern[classStart + 1] === "^" ? 2 : 1);
        if (i === contentStart) return null;
        classes.push(pattern.slice(classStart, i + 1));
        classStart = -1;
        previous = ATOM;
        continue;
      }
      const pair = pattern.slice(i, i + 2);
      if (pair === "&&" || pair === "--" || pair === "~~") return null;
      continue;
    }
    const next = pattern[i + 1];
    if (char === "[") {
      classStart = i;
    } else if (char === "(" && next === "?") {
      if (pattern[i + 2] !== ":") return null;
      i += 2;
    } else if (char === "{") {
      if (previous === START || previous === "|" || previous === "(" || !isRepetition(pattern, i)) return null;
    } else if ((char === "*" || char === "+" || char === "?" || char === "}") && (next === "+" || next === "{")) {
      return null;
    }
    const quantifier = char === "*" || char === "+" || char === "?" || char === "{";
    if (quantifier && (previous === "^" || previous === "$" || previous === EMPTY_GROUP)) return null;
    previous = char === ")" && (previous === "(" || previous === EMPTY_GROUP) ? EMPTY_GROUP : char;
  }
  return classes;
}

// src/eval/regex-translate.ts
var ASCII2 = 128;
var MAX_COUNT = 1e3;
function setOf(...ranges) {
  const set = new Uint8Array(ASCII2);
  for (const [low, high] of ranges) set.fill(1, low, high + 1);
  return set;
}
function complement(set) {
  return set.map((member) => 1 - member);
}
var DIGIT = setOf([48, 57]);
var WORD = setOf([48, 57], [65, 90], [95, 95], [97, 122]);
var SPACE = setOf([9, 13], [32, 32]);
var DOT = complement(setOf([10, 10], [13, 13]));
var CLASS_ESCAPES = {
  d: DIGIT,
  D: complement(DIGIT),
  w: WORD,
  W: complement(WORD),
  s: SPACE,
  S: complement(SPACE)
};
var CONTROL_ESCAPES = { f: 12, n: 10, r: 13, t: 9, v: 11 };
var hex = (code) => `\\x{${code.toString(16)}}`;
var isAlnum = (code) => code >= 48 && code <= 57 || code >= 65 && code <= 90 || code >= 97 && code <= 122;
function runs(set) {
  const result = [];
  for (let code = 0; code < ASCII2; code++) {
    if (set[code] !== 1) continue;
    const low = code;
    while (set[code + 1] === 1) code++;
    result.push([low, code]);
  }
  return result;
}
var rangeText = ([low, high]) => low === high ? hex(low) : `${hex(low)}-${hex(high)}`;
function emitSet(set) {
  const members = runs(set);
  const first = members[0];
  if (first === void 0) return "[^\\x{0}-\\x{10ffff}]";
  if (members.length === 1 && first[0] === first[1]) return isAlnum(first[0]) ? String.fromCharCode(first[0]) : hex(first[0]);
  const others = runs(complement(set));
  if (others.length === 0) return "[\\x{0}-\\x{10ffff}]";
  return others.length < members.length ? `[^${others.map(rangeText).join("")}]` : `[${members.map(rangeText).join("")}]`;
}
function readEscape(cursor, inClass) {
  const escaped = cursor.pattern.charAt(cursor.at);
  cursor.at++;
  const named = CLASS_ESCAPES[escaped];
  if (named !== void 0) return named;
  const control = CONTROL_ESCAPES[escaped];
  if (control !== void 0) return control;
  if (escaped === "b") return inClass ? 8 : null;
  if (escaped === "x") {
    const digits = cursor.pattern.slice(cursor.at, cursor.at + 2);
    if (!/^[0-9a-fA-F]{2}$/.test(digits)) return null;
    cursor.at += 2;
    return Number.parseInt(digits, 16);
  }
  const code = escaped.charCodeAt(0);
  return code >= 32 && code < 127 && !isAlnum(code) ? code : null;
}
function readClassAtom(cursor) {
  const code = cursor.pattern.charCodeAt(cursor.at);
  cursor.at++;
  if (code === 92) return readEscape(cursor, true);
  return Number.isNaN(code) || code >= ASCII2 ? null : code;
}
function readClass2(cursor) {
  const { pattern } = cursor;
  const negated = pattern[cursor.at] === "^";
  if (negated) cursor.at++;
  const set = new Uint8Array(ASCII2);
  while (pattern[cursor.at] !== "]") {
    if (cursor.at >= pattern.length) return null;
    const atom = readClassAtom(cursor);
    if (atom === null) return null;
    if (pattern[cursor.at] === "-" && pattern[cursor.at + 1] !== "]" && cursor.at + 1 < pattern.length) {
      cursor.at++;
      const end = readClassAtom(cursor);
      if (typeof atom !== "number" || typeof end !== "number" || end < atom) return null;
      set.fill(1, atom, end + 1);
    } else if (typeof atom === "number") {
      set[atom] = 1;
    } else {
      for (let code = 0; code < ASCII2; code++) if (atom[code] === 1) set[code] = 1;
    }
  }
  cursor.at++;
  return negated ? complement(set) : set;
}
function readCount(cursor) {
  const repetition = /\{(\d+)(,(\d*))?\}/y;
  repetition.lastIndex = cursor.at;
  const match = repetition.exec(cursor.pattern);
  if (match === null) return null;
  cursor.at += match[0].length;
  const min = Number(match[1]);
  const max = match[3] === void 0 || match[3] === "" ? null : Number(match[3]);
  if (min > MAX_COUNT || max !== null && (max > MAX_COUNT || max < min)) return null;
  if (match[2] === void 0) return `{${min}}`;
  return max === null ? `{${min},}` : `{${min},${max}}`;
}
function toRe2Syntax(pattern) {
  const cursor = { pattern, at: 0 };
  let out = "";
  while (cursor.at < pattern.length) {
    const char = pattern.charAt(cursor.at);
    const code = pattern.charCodeAt(cursor.at);
    if (code >= ASCII2) return null;
    if (char === "{") {
      const count = readCount(cursor);
      if (count === null) return null;
      out += count;
      if (pattern[cursor.at] === "?") cursor.at++;
      continue;
    }
    cursor.at++;
    if (char === "*" || char === "+" || char === "?") {
      out += char;
      if (pattern[cursor.at] === "?") cursor.at++;
    } else if (char === "(") {
      if (pattern[cursor.at] === "?") {
        if (pattern[cursor.at + 1] !== ":") return null;
        cursor.at += 2;
      }
      out += "(?:";
    } else if (char === ")" || char === "|") {
      out += char;
    } else if (char === "^") {
      out += "\\A";
    } else if (char === "$") {
      out += "\\z";
    } else if (char === ".") {
      out += emitSet(DOT);
    } else if (char === "[") {
      const set = readClass2(cursor);
      if (set === null) return null;
      out += emitSet(set);
    } else if (char === "\\") {
      if (cursor.at >= pattern.length) return null;
      const atom = readEscape(cursor, false);
      if (atom === null) return null;
      out += emitSet(typeof atom === "number" ? setOf([atom, atom]) : atom);
    } else {
      out += emitSet(setOf([code, code]));
    }
  }
  return out;
}

// src/eval/regex.ts
var regexInconclusive = () => "inconclusive-regex";
var require2 = createRequire(import.meta.url);
var engineClass;
var re2 = () => engineClass ??= require2("re2js").RE2JS;
function isAsciiWithoutCarriageReturn(text2) {
  for (let i = 0; i < text2.length; i++) {
    const unit = text2.charCodeAt(i);
    if (unit > 127 || unit === 13) return false;
  }
  return true;
}
function acceptsUnicodeMode(characterClass) {
  try {
    new RegExp(characterClass, "u");
    return true;
  } catch {
    return false;
  }
}
function compileRegexOperator(target, negate) {
  return supported(regexMatcher(target, negate));
}
function regexMatcher(target, negate) {
  let pattern;
  try {
    pattern = String(target);
  } catch {
    return () => "inconclusive";
  }
  if (pattern === "") return () => !negate;
  const classes = portableCharacterClasses(pattern);
  if (classes === null) return regexInconclusive;
  let native;
  try {
    native = new RegExp(pattern);
  } catch (error) {
    return error instanceof SyntaxError ? () => false : regexInconclusive;
  }
  if (!classes.every(acceptsUnicodeMode)) return regexInconclusive;
  const syntax = toRe2Syntax(pattern);
  if (syntax === null) return regexInconclusive;
  const RE2 = re2();
  const linear = backtracksLinearly(syntax) ? native : null;
  let engine;
  return (value) => {
    const subject = typeof value === "string" ? value : String(value);
    if (!isAsciiWithoutCarriageReturn(subject)) return "inconclusive-regex";
    try {
      if (engine === void 0) engine = compileRe2(RE2, syntax);
      if (engine === null) return "inconclusive-regex";
      return (linear !== null ? linearTest(linear, engine, subject) : engine.test(subject)) !== negate;
    } catch {
      return "inconclusive-regex";
    }
  };
}
function linearTest(linear, engine, subject) {
  try {
    return linear.test(subject);
  } catch {
    return engine.test(subject);
  }
}
function compileRe2(RE2, syntax) {
  try {
    return RE2.compile(syntax);
  } catch {
    return null;
  }
}

// src/eval/semver.ts
function identifier(text2, from, to) {
  if (from >= to || to - from > 1 && text2.charCodeAt(from) === 48) return -1;
  let value = 0;
  for (let i = from; i < to; i++) {
    const digit = text2.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return to - from > 15 ? parseInt(text2.slice(from, to), 10) : value;
}
function versionStart(text2) {
  const first = text2.charCodeAt(0);
  return first === 118 || first === 86 ? 1 : 0;
}
function parseVersion(raw) {
  const text2 = raw.trim();
  const start = versionStart(text2);
  let end = start;
  while (end < text2.length && text2.charCodeAt(end) !== 45 && text2.charCodeAt(end) !== 43) end++;
  if (end === start || text2.charCodeAt(start) === 46) return void 0;
  const parts = [0, 0, 0];
  let from = start;
  for (let k2 = 0; k2 < 3 && from <= end; k2++) {
    let to = text2.indexOf(".", from);
    if (to === -1 || to > end) to = end;
    if (to > from) {
      const part = identifier(text2, from, to);
      if (part < 0) return void 0;
      parts[k2] = part;
    }
    from = to + 1;
  }
  return parts;
}
function compare(a, b) {
  for (let i = 0; i < 3; i++) {
    const x2 = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (x2 !== y) return x2 < y ? -1 : 1;
  }
  return 0;
}
function wildcardRange(raw) {
  let text2 = raw.trim();
  text2 = text2.slice(versionStart(text2));
  if (text2.endsWith(".*")) text2 = text2.slice(0, -2);
  if (text2.endsWith("*")) text2 = text2.slice(0, -1);
  if (text2 === "") return void 0;
  const parts = text2.split(".");
  const majorText = parts[0] ?? "";
  const major = identifier(majorText, 0, majorText.length);
  if (major < 0) return void 0;
  if (parts.length === 1) return [[major, 0, 0], [major + 1, 0, 0]];
  const minorText = parts[1] ?? "";
  const minor = identifier(minorText, 0, minorText.length);
  if (minor < 0) return void 0;
  return [[major, minor, 0], [major, minor + 1, 0]];
}
function filterRange(operator, raw) {
  if (operator === "semver_wildcard") return wildcardRange(raw);
  const v = parseVersion(raw);
  if (v === void 0) return void 0;
  if (operator === "semver_tilde") return [v, [v[0], v[1] + 1, 0]];
  const upper = v[0] > 0 ? [v[0] + 1, 0, 0] : v[1] > 0 ? [0, v[1] + 1, 0] : [0, 0, v[2] + 1];
  return [v, upper];
}
function comparisonHolds(operator, order) {
  switch (operator) {
    case "semver_eq":
      return order === 0;
    case "semver_neq":
      return order !== 0;
    case "semver_gt":
      return order > 0;
    case "semver_gte":
      return order >= 0;
    case "semver_lt":
      return order < 0;
    default:
      return order <= 0;
  }
}
function compileSemverOperator(operator, target) {
  const match = semverMatcher(operator, target);
  return match === void 0 ? unsupportedOperator : { match, supported: true };
}
function semverMatcher(operator, target) {
  const raw = String(target);
  const property = (value) => parseVersion(typeof value === "string" ? value : String(value));
  if (operator === "semver_tilde" || operator === "semver_caret" || operator === "semver_wildcard") {
    const range = filterRange(operator, raw);
    if (range === void 0) return void 0;
    const [lower, upper] = range;
    return (value) => {
      const v = property(value);
      return v === void 0 ? "inconclusive" : compare(v, lower) >= 0 && compare(v, upper) < 0;
    };
  }
  const wanted = parseVersion(raw);
  if (wanted === void 0) return void 0;
  return (value) => {
    const v = property(value);
    return v === void 0 ? "inconclusive" : comparisonHolds(operator, compare(v, wanted));
  };
}

// src/eval/text-operators.ts
function lowerAsciiRun(run) {
  return run.toLowerCase();
}
function asciiLowercase(text2) {
  let hasCapital = false;
  for (let i = 0; i < text2.length; i++) {
    const unit = text2.charCodeAt(i);
    if (unit > 127) return text2.replace(/[A-Z]+/g, lowerAsciiRun);
    if (unit >= 65 && unit <= 90) hasCapital = true;
  }
  return hasCapital ? text2.toLowerCase() : text2;
}
function compileTextOperator(operator, target) {
  return supported(textMatcher(operator, target));
}
function textMatcher(operator, target) {
  const needle = asciiLowercase(String(target));
  const haystack = (value) => asciiLowercase(typeof value === "string" ? value : String(value));
  switch (operator) {
    case "icontains":
      return (value) => haystack(value).includes(needle);
    case "not_icontains":
      return (value) => !haystack(value).includes(needle);
    case "starts_with":
      return (value) => haystack(value).startsWith(needle);
    case "not_starts_with":
      return (value) => !haystack(value).startsWith(needle);
    case "ends_with":
      return (value) => haystack(value).endsWith(needle);
    case "not_ends_with":
      return (value) => !haystack(value).endsWith(needle);
  }
}

// src/eval/properties.ts
var nullAccepting = /* @__PURE__ */ new Set([
  "exact",
  "is_not",
  "icontains",
  "not_icontains",
  "starts_with",
  "not_starts_with",
  "ends_with",
  "not_ends_with",
  "regex",
  "not_regex"
]);
function compileOperator(operator, target, matchingVersion) {
  switch (operator) {
    case "exact":
      return compileExact(target, matchingVersion, false);
    case "is_not":
      return compileExact(target, matchingVersion, true);
    case "icontains":
    case "not_icontains":
    case "starts_with":
    case "not_starts_with":
    case "ends_with":
    case "not_ends_with":
      return compileTextOperator(operator, target);
    case "regex":
    case "not_regex":
      return compileRegexOperator(target, operator === "not_regex");
    case "gt":
    case "gte":
    case "lt":
    case "lte":
      return compileOrdering(operator, target);
    case "is_date_before":
    case "is_date_after":
      return compileDateOperator(operator === "is_date_before", target);
    case "semver_eq":
    case "semver_neq":
    case "semver_gt":
    case "semver_gte":
    case "semver_lt":
    case "semver_lte":
    case "semver_tilde":
    case "semver_caret":
    case "semver_wildcard":
      return compileSemverOperator(operator, target);
    default:
      return unsupportedOperator;
  }
}
function compileSafely(operator, target, matchingVersion) {
  try {
    return compileOperator(operator, target, matchingVersion);
  } catch {
    return unsupportedOperator;
  }
}
function compileProperty(filter, options) {
  const key = filter.key;
  const operator = filter.operator || "exact";
  const hasOwn = Object.prototype.hasOwnProperty;
  if (operator === "is_set" || operator === "is_not_set") {
    const answer = operator === "is_set";
    return (properties) => hasOwn.call(properties, key) ? answer : "inconclusive";
  }
  const { match, supported: supported2 } = compileSafely(operator, filter.value, options?.propertyMatchingVersion);
  const nullIsFalse = !nullAccepting.has(operator);
  const contextInconclusive = supported2 ? "inconclusive" : "inconclusive-unsupported";
  return (properties, nowMs) => {
    if (!hasOwn.call(properties, key)) return contextInconclusive;
    const value = properties[key];
    if (value === void 0) return "inconclusive-unsupported";
    if (value === null && nullIsFalse) return false;
    let result;
    try {
      result = match(value, nowMs);
    } catch {
      return "inconclusive-unsupported";
    }
    return result === "inconclusive" ? contextInconclusive : result;
  };
}

// src/eval/compile.ts
var isRecord2 = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
function valueText(value) {
  if (value === null || typeof value === "string" || typeof value === "boolean") return JSON.stringify(value);
  if (typeof value === "number") return Number.isFinite(value) && !Object.is(value, -0) ? String(value) : null;
  if (!Array.isArray(value) || Object.getPrototypeOf(value) !== Array.prototype) return null;
  let text2 = "[";
  for (let i = 0; i < value.length; i++) {
    const item = i in value ? valueText(value[i]) : null;
    if (item === null) return null;
    text2 += i === 0 ? item : `,${item}`;
  }
  return `${text2}]`;
}
var PropertyFilters = class {
  constructor(matchingVersion) {
    this.matchingVersion = matchingVersion;
  }
  matchingVersion;
  slots = /* @__PURE__ */ new Map();
  texts = /* @__PURE__ */ new Map();
  count = 0;
  /**
   * One string object for each text naming a flag or a cohort (keys, dependency chains, cohort ids): the
   * evaluator's Map lookups by them then find the key by identity. Equal strings from different places of the
   * definitions (a chain's key parsed apart from the flag's) were compared character by character on every lookup
   * (~27 string comparisons a request at 30 flags).
   */
  intern(text2) {
    const known = this.texts.get(text2);
    if (known !== void 0) return known;
    this.texts.set(text2, text2);
    return text2;
  }
  compile(key, value, operator, type) {
    const op2 = operator || "exact";
    const text2 = typeof key === "string" && typeof op2 === "string" ? valueText(value) : null;
    const id = text2 === null ? null : `${JSON.stringify(key)} ${JSON.stringify(op2)} ${text2}`;
    const known = id === null ? void 0 : this.slots.get(id);
    if (known !== void 0) return known;
    const compiled = {
      match: compileProperty(
        { key, value, operator, type },
        { propertyMatchingVersion: this.matchingVersion ?? null }
      ),
      slot: this.count++
    };
    if (id !== null) this.slots.set(id, compiled);
    return compiled;
  }
};
var noMatcher = () => "inconclusive-unsupported";
function filterNode(kind, negation, fields) {
  return {
    kind,
    negation,
    key: fields.key,
    match: fields.match ?? noMatcher,
    slot: fields.slot ?? -1,
    id: fields.id ?? "",
    notIn: fields.notIn ?? false,
    expected: fields.expected,
    chain: fields.chain ?? null
  };
}
function compileFilter(raw, properties) {
  if (raw === null || typeof raw !== "object") return filterNode("broken", false, {});
  const filter = raw;
  const negation = Boolean(filter.negation);
  if (filter.type === "cohort") return filterNode("cohort", negation, { id: properties.intern(String(filter.value)), notIn: filter.operator === "not_in" });
  if (filter.type === "flag") {
    const chain = Array.isArray(filter.dependency_chain) ? filter.dependency_chain.map((key2) => properties.intern(String(key2))) : null;
    return filterNode("flag", negation, { key: properties.intern(String(filter.key)), expected: filter.value, chain });
  }
  const key = filter.key;
  const { match, slot } = properties.compile(key, filter.value, filter.operator, filter.type);
  return filterNode("property", negation, { key, match, slot });
}
function compileGroup(raw, properties) {
  if (!raw || Object.keys(raw).length === 0) return { type: "empty", groups: null, leaves: null };
  if (!isRecord2(raw)) return { type: "invalid", groups: null, leaves: null };
  const type = raw.type === "property" ? "AND" : raw.type;
  if (type !== "AND" && type !== "OR") return { type: "invalid", groups: null, leaves: null };
  if (!raw.values || raw.values.length === 0) return { type, groups: null, leaves: [] };
  if (!Array.isArray(raw.values) || raw.values[0] === null || typeof raw.values[0] !== "object") return { type: "broken", groups: null, leaves: null };
  const values = raw.values;
  if ("values" in values[0]) {
    return { type, groups: values.map((v) => compileGroup(v, properties)), leaves: null };
  }
  return { type, groups: null, leaves: values.map((v) => compileFilter(v, properties)) };
}
var finiteOrNull = (value) => typeof value === "number" && Number.isFinite(value) ? value : null;
function parsePayload(stored) {
  if (typeof stored !== "string") return stored;
  try {
    return JSON.parse(stored);
  } catch {
    return stored;
  }
}
var noPayloads = /* @__PURE__ */ new Map();
function compilePayloads(raw) {
  if (!isRecord2(raw)) return noPayloads;
  let payloads = null;
  for (const [key, stored] of Object.entries(raw)) {
    if (!stored) continue;
    (payloads ??= /* @__PURE__ */ new Map()).set(key, { value: parsePayload(stored), json: JSON.stringify(stored) });
  }
  return payloads ?? noPayloads;
}
function compileFlag(raw, properties) {
  const filters = isRecord2(raw.filters) ? raw.filters : {};
  const variantList = isRecord2(filters.multivariate) && Array.isArray(filters.multivariate.variants) ? filters.multivariate.variants : [];
  const variants = [];
  let min = 0;
  for (const v of variantList) {
    const variant = isRecord2(v) ? v : {};
    const max = min + variant.rollout_percentage / 100;
    variants.push({ key: variant.key, min, max });
    min = max;
  }
  const variantKeys = new Set(variants.map((v) => v.key));
  const holdout = isRecord2(filters.holdout) ? filters.holdout : null;
  let compiledHoldout = null;
  if (holdout && holdout.id != null && holdout.exclusion_percentage != null) {
    const pct = Number(holdout.exclusion_percentage);
    if (Number.isFinite(pct)) compiledHoldout = { variant: `holdout-${String(holdout.id)}`, fraction: Math.min(Math.max(pct, 0), 100) / 100 };
  }
  const conditions = (Array.isArray(filters.groups) ? filters.groups : []).map((c) => {
    const condition = isRecord2(c) ? c : {};
    const override = condition.variant;
    return {
      aggregation: "aggregation_group_type_index" in condition ? condition.aggregation_group_type_index : void 0,
      filters: (Array.isArray(condition.properties) ? condition.properties : []).map((p) => compileFilter(p, properties)),
      rollout: condition.rollout_percentage,
      variant: typeof override === "string" && override !== "" && variantKeys.has(override) ? override : null
    };
  });
  const declaredRuntime = typeof raw.evaluation_runtime === "string" ? raw.evaluation_runtime.toLowerCase() : "all";
  const runtime = declaredRuntime === "server" || declaredRuntime === "client" ? declaredRuntime : "all";
  const nonEmpty = (list) => Array.isArray(list) && list.length > 0 ? list : null;
  const contexts = nonEmpty(raw.evaluation_contexts) ?? nonEmpty(raw.evaluation_tags) ?? [];
  return {
    key: properties.intern(String(raw.key)),
    id: finiteOrNull(raw.id),
    name: typeof raw.name === "string" ? raw.name : null,
    hasExperiment: raw.has_experiment === true,
    version: finiteOrNull(raw.version),
    active: Boolean(raw.active),
    continuity: Boolean(raw.ensure_experience_continuity),
    aggregation: filters.aggregation_group_type_index,
    deviceBucketing: raw.bucketing_identifier === "device_id",
    holdout: compiledHoldout,
    conditions,
    variants,
    earlyExit: Boolean(filters.early_exit),
    payloads: compilePayloads(filters.payloads),
    runtime,
    contexts: contexts.filter((tag) => typeof tag === "string")
  };
}
function completeFlag(draft, reason, hash3) {
  return {
    key: draft.key,
    id: draft.id,
    name: draft.name,
    hasExperiment: draft.hasExperiment,
    version: draft.version,
    active: draft.active,
    continuity: draft.continuity,
    aggregation: draft.aggregation,
    deviceBucketing: draft.deviceBucketing,
    holdout: draft.holdout,
    conditions: draft.conditions,
    variants: draft.variants,
    earlyExit: draft.earlyExit,
    payloads: draft.payloads,
    runtime: draft.runtime,
    contexts: draft.contexts,
    definitionReason: reason,
    fragments: flagFragments(draft),
    hashHead: hash3.head,
    hashSlot: hash3.slot,
    rolloutPeers: hash3.rolloutPeers,
    variantPeers: hash3.variantPeers
  };
}
function compileDefinitions(body) {
  const value = isRecord2(body) ? body : {};
  const version = typeof value.property_matching_version === "number" ? value.property_matching_version : void 0;
  const rawFlags = (Array.isArray(value.flags) ? value.flags : []).filter(isRecord2);
  const properties = new PropertyFilters(version);
  const drafts = rawFlags.map((f) => compileFlag(f, properties));
  const draftKeys = new Set(drafts.map((flag) => flag.key));
  const rawCohorts = isRecord2(value.cohorts) ? value.cohorts : {};
  const cohorts = /* @__PURE__ */ new Map();
  if (isRecord2(value.cohorts)) for (const [id, group] of Object.entries(value.cohorts)) cohorts.set(properties.intern(id), compileGroup(group, properties));
  const mapping = isRecord2(value.group_type_mapping) ? value.group_type_mapping : {};
  const heads = flagHashHeads(drafts.map((flag) => flag.key));
  const peers = hashPeers(drafts);
  const flags = drafts.map(
    (flag, i) => completeFlag(flag, definitionReason(flag, rawFlags[i]?.filters?.groups, draftKeys, rawCohorts, mapping), {
      head: heads.at[i],
      slot: i,
      rolloutPeers: peers.rollout[i],
      variantPeers: peers.variant[i]
    })
  );
  const byKey = /* @__PURE__ */ new Map();
  for (const flag of flags) byKey.set(flag.key, flag);
  const limited = flags.some((flag) => flag.runtime !== "all" || flag.contexts.length > 0);
  return {
    flags,
    byKey,
    distinct: [...byKey.values()],
    cohorts,
    groupTypeMapping: mapping,
    minimalFlagCalledEvents: value.minimal_flag_called_events === true,
    limited,
    hashHeads: heads.words,
    hashHeadAt: Int32Array.from(heads.at),
    bucketHashes: new BucketHashMemo(flags.length),
    propertySlots: properties.count
  };
}
function definitionReason(flag, rawConditions, flagKeys, rawCohorts, mapping) {
  if (!flag.active) return void 0;
  if (flag.continuity) return "experience_continuity";
  if (flag.aggregation != null && !mapping[String(flag.aggregation)]) return "unsupported_definition";
  const visited = /* @__PURE__ */ new Set();
  const unsupported = (raw) => {
    const property = raw;
    if (property.type === "flag") {
      const chain = property.dependency_chain;
      return !Array.isArray(chain) || chain.length === 0 || chain.some((key) => !flagKeys.has(String(key)));
    }
    if (property.type !== "cohort") {
      const filter = compileFilter(property, new PropertyFilters(void 0));
      return filter.kind === "property" && filter.match({}, 0) === "inconclusive-unsupported";
    }
    const id = String(property.value);
    if (!Object.hasOwn(rawCohorts, id)) return true;
    if (visited.has(id)) return false;
    visited.add(id);
    return groupUnsupported(rawCohorts[id]);
  };
  const groupUnsupported = (group) => (group?.values ?? []).some((v) => "values" in v ? groupUnsupported(v) : unsupported(v));
  try {
    const conditions = rawConditions || [];
    return conditions.some((c) => (c.properties || []).some(unsupported)) ? "unsupported_definition" : void 0;
  } catch {
    return void 0;
  }
}

// src/store/compiled.ts
function createCompiledDefinitions(store) {
  const compiled = /* @__PURE__ */ new WeakMap();
  const wanted = /* @__PURE__ */ new Set();
  const of = (variant) => {
    let defs = compiled.get(variant.body);
    if (defs === void 0) {
      const parsed = takeParsedDefinitions(variant.body) ?? JSON.parse(variant.body.toString("utf8"));
      defs = compileDefinitions(parsed);
      compiled.set(variant.body, defs);
    }
    return defs;
  };
  const track = (project) => {
    if (project.cohorts) {
      if (wanted.has(project.projectId)) of(project.cohorts);
      else takeParsedDefinitions(project.cohorts.body);
    }
    if (project.plain) takeParsedDefinitions(project.plain.body);
  };
  store.onChange((after) => track(after));
  for (const project of store.list()) track(project);
  return (projectId) => {
    const project = store.get(projectId);
    if (project === void 0) return null;
    wanted.add(projectId);
    return project.cohorts ? of(project.cohorts) : null;
  };
}

// src/store/run-generations.ts
function createRunGenerations(max) {
  let counter = 0;
  let floor = 0;
  let epoch = 0;
  const records = new I({
    ...entryBound(max),
    dispose: (record) => {
      floor = Math.max(floor, record.latest, record.all);
    }
  });
  const get = (key) => records.get(key) ?? { latest: floor, all: floor };
  return {
    of: (key, latest) => latest ? get(key).latest : get(key).all,
    get epoch() {
      return epoch;
    },
    bump(key, all) {
      const current = get(key);
      counter = Math.max(counter, floor) + 1;
      records.set(key, { latest: counter, all: all ? counter : current.all });
      epoch += 1;
    }
  };
}

// src/http/json-depth.ts
var maxFlagsJsonDepth = 128;
var maxApiJsonDepth = 1e3;
var quote = 34;
var backslash = 92;
var openBrace = 123;
var openBracket = 91;
var closeBrace = 125;
var closeBracket = 93;
function exceedsJsonDepth(text2, max) {
  if (fewOpenings(text2, max)) return false;
  let depth = 0;
  const length = text2.length;
  for (let i = 0; i < length; i++) {
    const c = text2.charCodeAt(i);
    if (c === quote) {
      let end = text2.indexOf('"', i + 1);
      while (end > 0 && escapedAt(text2, end)) end = text2.indexOf('"', end + 1);
      if (end < 0) return false;
      i = end;
    } else if (c === openBrace || c === openBracket) {
      if (++depth > max) return true;
    } else if ((c === closeBrace || c === closeBracket) && depth > 0) depth--;
  }
  return false;
}
function fewOpenings(text2, max) {
  let count = 0;
  for (let at = text2.indexOf("{"); at >= 0; at = text2.indexOf("{", at + 1)) if (++count > max) return false;
  for (let at = text2.indexOf("["); at >= 0; at = text2.indexOf("[", at + 1)) if (++count > max) return false;
  return true;
}
function escapedAt(text2, at) {
  let start = at;
  while (text2.charCodeAt(start - 1) === backslash) start--;
  return (at - start) % 2 === 1;
}

// src/http/body.ts
function readBody(req, limit) {
  return new Promise((resolve, reject) => {
    let settled = false;
    req.on("error", (error) => {
      if (settled) return;
      settled = true;
      reject(error);
    });
    readBodyThen(req, limit, (error, body) => {
      if (settled) return;
      settled = true;
      if (error === null) resolve(body);
      else reject(error);
    });
  });
}
function readBodyThen(req, limit, done) {
  const declared = Number(req.headers["content-length"] ?? Number.NaN);
  if (declared > limit) {
    done(bodyTooLarge(limit), null);
    return;
  }
  let first = null;
  let rest = null;
  let size = 0;
  let settled = false;
  req.on("data", (chunk) => {
    if (settled) return;
    size += chunk.length;
    if (size > limit) {
      settled = true;
      done(bodyTooLarge(limit), null);
      return;
    }
    if (first === null) first = chunk;
    else (rest ??= [first]).push(chunk);
  });
  req.on("end", () => {
    if (settled) return;
    settled = true;
    done(null, rest !== null ? Buffer.concat(rest, size) : first ?? emptyBody);
  });
}
var emptyBody = Buffer.alloc(0);
var isRecord3 = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
var bodyKeyOf = (parsed) => isRecord3(parsed) && typeof parsed.personal_api_key === "string" ? parsed.personal_api_key : void 0;
var isJsonType = (contentType) => contentType !== void 0 && /^[^;]*[/+]json\s*(;|$)/i.test(contentType.trim());
function parseJsonBody(body) {
  if (body.length === 0) return null;
  const text2 = body.toString("utf8");
  if (exceedsJsonDepth(text2, maxApiJsonDepth)) throw parseError(`nesting deeper than ${maxApiJsonDepth} levels`);
  try {
    return JSON.parse(text2);
  } catch (error) {
    throw parseError(error instanceof Error ? error.message : "invalid JSON");
  }
}

// src/http/forward.ts
var passedRequestHeaders = ["authorization", "content-type", "accept", "accept-language"];
var passedResponseHeaders = ["content-type", "retry-after", "www-authenticate", "x-posthog-request-id"];
var upstreamTarget = (ctx) => ctx.rawQuery === "" ? ctx.path : `${ctx.path}?${ctx.rawQuery}`;
function forwardedHeaders(ctx) {
  const headers = {};
  for (const name of passedRequestHeaders) {
    const value = ctx.headers[name];
    if (typeof value === "string") headers[name] = value;
  }
  headers.accept ??= "application/json";
  return headers;
}
function responseFrom(result) {
  if (result.kind === "failure") throw upstreamFailure(result.cause);
  const headers = {};
  for (const name of passedResponseHeaders) {
    const value = result.headers[name];
    if (typeof value === "string") headers[name] = value;
  }
  headers["content-length"] = String(result.body.length);
  return { status: result.status, headers, body: result.body };
}
function canonicalQuery(query) {
  if (query.size === 0) return "";
  const parts = [];
  for (const [name, value] of query) if (name !== "personal_api_key") parts.push(`${encodeURIComponent(name)}=${encodeURIComponent(value)}`);
  return parts.sort().join("&");
}

// src/metrics/name-labels.ts
function createNameLabels(allowed2, firstN) {
  const names = new Set(allowed2);
  const fixed = allowed2.length > 0;
  let epoch = 0;
  return {
    of: (name) => names.has(name) ? name : "other",
    confirm(name) {
      if (fixed || names.has(name) || names.size >= firstN) return;
      names.add(name);
      epoch += 1;
    },
    get epoch() {
      return epoch;
    }
  };
}

// src/http/routes/endpoint-run-plan.ts
var runKeys = /* @__PURE__ */ new Set(["client_query_id", "refresh", "variables", "query_override", "filters_override", "version", "debug"]);
var cachedRefresh = /* @__PURE__ */ new Set([void 0, "blocking", "async_except_on_cache_miss"]);
function canonicalJson(value) {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (isRecord3(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k2) => `${JSON.stringify(k2)}:${canonicalJson(value[k2])}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
function isDigits(text2) {
  if (text2.length === 0) return false;
  for (let i = 0; i < text2.length; i++) {
    const c = text2.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}
function planRun(name, body, queryVersion) {
  const request = body === null ? {} : body;
  if (!isRecord3(request)) return { kind: "uncached" };
  for (const key2 of Object.keys(request)) if (!runKeys.has(key2)) return { kind: "uncached" };
  let version;
  if (request.version !== void 0 && request.version !== null) {
    if (typeof request.version !== "number" || !Number.isInteger(request.version)) return { kind: "uncached" };
    version = String(request.version);
  } else if (queryVersion !== void 0) {
    if (!isDigits(queryVersion)) return { kind: "uncached" };
    version = String(Number(queryVersion));
  } else version = "latest";
  const refresh = request.refresh;
  if (refresh !== "force_blocking" && !cachedRefresh.has(refresh)) return { kind: "uncached" };
  if (request.debug !== void 0 && typeof request.debug !== "boolean") return { kind: "uncached" };
  const key = [
    name,
    version,
    request.debug === true ? "debug" : "",
    canonicalJson(request.variables ?? null),
    canonicalJson(request.filters_override ?? null),
    canonicalJson(request.query_override ?? null)
  ].join("\0");
  const latest = version === "latest";
  return refresh === "force_blocking" ? { kind: "force", key, latest } : { kind: "cached", key, latest };
}

// src/http/routes/endpoint-run-body.ts
var maxMemoBytes = 2048;
function createRunBodies() {
  const bodies = new I(entryBound(2e3));
  const lastBodies = /* @__PURE__ */ new WeakMap();
  function readRun(name, ctx, raw) {
    const memoKey = raw === void 0 || raw.length > maxMemoBytes ? null : `${name}\0${ctx.query.get("version") ?? ""}\0${ctx.headers["content-type"] ?? ""}\0${raw.toString("latin1")}`;
    const known = memoKey === null ? void 0 : bodies.get(memoKey);
    if (known !== void 0) return known;
    let parsed = null;
    if (raw !== void 0 && raw.length > 0) {
      if (isJsonType(ctx.headers["content-type"])) {
        try {
          parsed = parseJsonBody(raw);
        } catch (error) {
          return error;
        }
        if (parsed === null) parsed = void 0;
      } else parsed = void 0;
    }
    const bodyKey = bodyKeyOf(parsed);
    const plan = parsed === void 0 || bodyKey !== void 0 ? { kind: "uncached" } : planRun(name, parsed, ctx.query.get("version"));
    const read2 = { parsed, bodyKey, plan, counts: null, lastServed: null, lastReply: null, lastKey: null, lastGrant: null };
    if (memoKey !== null && bodyKey === void 0) bodies.set(memoKey, read2);
    return read2;
  }
  return {
    read(name, ctx, raw) {
      if (raw === void 0) return readRun(name, ctx, raw);
      const version = ctx.query.get("version");
      const type = ctx.headers["content-type"];
      const last = lastBodies.get(ctx.authMemo);
      if (last !== void 0 && last.name === name && last.version === version && last.type === type && last.raw.equals(raw)) return last.read;
      const read2 = readRun(name, ctx, raw);
      if (!(read2 instanceof ApiError) && read2.bodyKey === void 0 && raw.length <= maxMemoBytes) lastBodies.set(ctx.authMemo, { name, version, type, raw: Buffer.from(raw), read: read2 });
      return read2;
    }
  };
}

// src/http/routes/endpoint-run-grants.ts
function createRunGrants(deps) {
  const { ttlMs, now, shared } = deps;
  const grants = new I(entryBound(5e4));
  let epoch = 0;
  return {
    key: (caller, projectId, name) => `${caller.digest}:${caller.kind}\0${projectId}\0${name}`,
    until: (key) => grants.get(key) ?? 0,
    get epoch() {
      return epoch;
    },
    give(projectId, key) {
      const until = now() + ttlMs;
      grants.set(key, until);
      epoch += 1;
      void shared?.setGrant(projectId, key, until);
    },
    adopt(key, until) {
      grants.set(key, Math.min(until, now() + ttlMs));
      epoch += 1;
    },
    withdraw(projectId, key) {
      grants.delete(key);
      epoch += 1;
      void shared?.setGrant(projectId, key, null);
    }
  };
}

// src/http/links.ts
var linkFields = ["next", "previous"];
function rewriteLink(url, base, upstreamPath) {
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  const path = upstreamPath !== "" && parsed.pathname.startsWith(`${upstreamPath}/`) ? parsed.pathname.slice(upstreamPath.length) : parsed.pathname;
  return `${base}${path}${parsed.search}`;
}
function rewriteLinks(body, base, upstreamPath) {
  let value;
  try {
    value = JSON.parse(body.toString("utf8"));
  } catch {
    return body;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return body;
  const record = value;
  let text2 = body.toString("utf8");
  let verbatim = true;
  let changed = false;
  for (const field of linkFields) {
    const link2 = record[field];
    if (typeof link2 !== "string") continue;
    const rewritten = rewriteLink(link2, base, upstreamPath);
    if (rewritten === link2) continue;
    changed = true;
    record[field] = rewritten;
    const pattern = new RegExp(`("${field}"\\s*:\\s*)${escapeRegExp(JSON.stringify(link2))}`);
    if (pattern.test(text2)) text2 = text2.replace(pattern, (_m, prefix) => prefix + JSON.stringify(rewritten));
    else verbatim = false;
  }
  if (!changed) return body;
  return Buffer.from(verbatim ? text2 : JSON.stringify(record));
}
var escapeRegExp = (text2) => text2.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

// src/http/respond.ts
var jsonHeaders = (body) => ({
  "content-type": "application/json",
  "content-length": String(body.length)
});
function reusableReply(status, headers, body) {
  const frozen = Object.freeze({ ...headers });
  const reply = { status, headers: frozen, body };
  Object.defineProperty(reply, "headerList", { value: Object.entries(frozen).flat(), enumerable: false });
  return reply;
}
function jsonReply(status, body, extra) {
  return { status, headers: extra ? { ...jsonHeaders(body), ...extra } : jsonHeaders(body), body };
}
function valueReply(status, value) {
  return jsonReply(status, Buffer.from(JSON.stringify(value)));
}
function errorReply(error) {
  return jsonReply(error.status, error.body(), error.headers ?? void 0);
}
function shuttingDownReply() {
  return jsonReply(503, shuttingDown().body(), { "retry-after": "1", connection: "close" });
}
function send(res, reply, head, close = false) {
  if (close) res.setHeader("connection", "close");
  res.writeHead(reply.status, reply.headerList ?? reply.headers);
  if (reply.body === null || head) res.end();
  else {
    const tail = reply.tail;
    if (tail === void 0) res.end(reply.body);
    else {
      res.cork();
      res.write(reply.body);
      res.end(tail);
    }
  }
}

// src/http/routes/read-through.ts
var sourceHeader = { upstream: "upstream", cache: "cache", stale: "stale" };
var cacheHeader = { upstream: "miss", cache: "hit", stale: "stale" };
function buildReply(served) {
  const headers = {
    ...served.response.headers,
    "x-flag-sidecar-source": sourceHeader[served.source],
    "x-flag-sidecar-cache": cacheHeader[served.source],
    age: String(Math.floor(served.ageMs / 1e3))
  };
  if (served.source === "stale") headers.warning = '110 - "Response is Stale"';
  return reusableReply(served.response.status, headers, served.response.body);
}
function createReplyMemo() {
  const replies = /* @__PURE__ */ new WeakMap();
  return (served) => {
    let reply = replies.get(served);
    if (reply === void 0) {
      reply = buildReply(served);
      replies.set(served, reply);
    }
    return reply;
  };
}
function createReadThroughRoutes(deps) {
  const { cache, client } = deps;
  const lastKeys = /* @__PURE__ */ new WeakMap();
  const servedReply = createReplyMemo();
  async function fetchUpstream(route, ctx, ttl, linkBase) {
    if (client === null) return { kind: "failure", error: offline() };
    const result = await client.request({ operation: route, method: "GET", path: upstreamTarget(ctx), headers: forwardedHeaders(ctx) });
    if (result.kind === "failure") return { kind: "failure", error: upstreamFailure(result.cause) };
    let response = responseFrom(result);
    const ok2 = response.status >= 200 && response.status < 300;
    if (ok2 && linkBase !== null) {
      const body = rewriteLinks(response.body, linkBase, deps.upstreamPath);
      if (body !== response.body) response = { ...response, body, headers: { ...response.headers, "content-length": String(body.length) } };
    }
    const ttlMs = ok2 ? ttl.okMs : response.status === 404 ? ttl.notFoundMs : 0;
    return { kind: "answer", response, ttlMs, failed: response.status >= 500 || response.status === 429 };
  }
  function lookup(route, ctx, ttl, links, { caller, projectId }) {
    const host = links ? ctx.headers.host ?? deps.selfAddress : "";
    const last = lastKeys.get(caller);
    let key;
    if (last !== void 0 && last.path === ctx.path && last.rawQuery === ctx.rawQuery && last.host === host && last.route === route) key = last.key;
    else {
      const path = ctx.path.length > 1 && ctx.path.endsWith("/") ? ctx.path.slice(0, -1) : ctx.path;
      key = `${caller.digest}:${caller.kind}\0${route}\0${path}\0${canonicalQuery(ctx.query)}\0${host}`;
      lastKeys.set(caller, { route, path: ctx.path, rawQuery: ctx.rawQuery, host, key });
    }
    return cache.hit(key, projectId) ?? cache.get(key, projectId, () => fetchUpstream(route, ctx, ttl, links ? `http://${host}` : null));
  }
  function serve(route, ctx, ttl, links, authorized) {
    const served = lookup(route, ctx, ttl, links, authorized);
    return served instanceof Promise ? served.then(servedReply) : servedReply(served);
  }
  return {
    lookup,
    /** The reply for a served answer, marked with its source and age (built once per Served object). */
    reply: servedReply,
    /**
     * A GET handler for `route`: authorized, then served from the cache or upstream. `links`: rewrite the
     * body's `next`/`previous` to the sidecar. The project id is the route's first path parameter.
     */
    handler(route, ttl, links = false) {
      return (ctx) => {
        const authorized = deps.access.authorize(route, "upstream", ctx, ctx.params[0] ?? null);
        return authorized instanceof Promise ? authorized.then((a) => serve(route, ctx, ttl, links, a)) : serve(route, ctx, ttl, links, authorized);
      };
    }
  };
}

// src/http/routes/endpoint-run-miss.ts
function createRunMisses(deps) {
  const { runs: runs2, generations, grants, runUpstream, hitReply, now, shared, countsOf, confirm } = deps;
  const nameOf = (ctx) => ctx.params[1];
  const tally = (ctx, source, status) => {
    if (status !== void 0 && status >= 200 && status < 300) confirm(nameOf(ctx));
    countsOf(nameOf(ctx))[source] += 1;
  };
  const ungranted = /* @__PURE__ */ new Map();
  const lookupShared = (run) => shared === null ? Promise.resolve(null) : shared.lookup(run.projectId, nameOf(run.ctx), run.plan.key, run.grant);
  function answer(run, granted) {
    if (run.plan.kind !== "cached") return runOwn(run, void 0);
    if (granted || shared === null) return granted ? runGranted(run, void 0) : runOwn(run, void 0);
    return lookupShared(run).then((found) => {
      if (found === null || found.grantUntil <= now()) return runOwn(run, found);
      grants.adopt(run.grant, found.grantUntil);
      return runGranted(run, found);
    });
  }
  function runGranted(run, found) {
    const { ctx, raw, plan, projectId } = run;
    let ranOwn = false;
    let served;
    try {
      served = runs2.get(run.key, projectId, async () => {
        const inFleet = found === void 0 ? await lookupShared(run) : found;
        const until = inFleet?.run ? plan.latest ? Math.min(inFleet.run.expiresAt, inFleet.run.fetchedAt + deps.runTtlMs) : inFleet.run.expiresAt : 0;
        if (inFleet?.run && until > now()) return { kind: "answer", response: inFleet.run.response, ttlMs: until - now(), fetchedAt: inFleet.run.fetchedAt };
        ranOwn = true;
        return share(run, inFleet?.gen ?? null, settle(run, await runUpstream(ctx, raw, plan.latest)));
      });
    } catch (error) {
      tally(ctx, "failed");
      throw error;
    }
    if (!(served instanceof Promise)) return servedReply(run, served, ranOwn);
    return served.then(
      (result) => servedReply(run, result, ranOwn),
      (error) => {
        tally(ctx, "failed");
        throw error;
      }
    );
  }
  function servedReply(run, served, ranOwn) {
    if (!ranOwn && served.source === "upstream" && (served.response.status < 200 || served.response.status >= 300)) return runOwn(run, void 0);
    tally(run.ctx, served.source, served.response.status);
    return served.source === "cache" ? hitReply(served) : buildReply(served);
  }
  function settle(run, fetched) {
    if (fetched.kind !== "answer") return fetched;
    const status = fetched.response.status;
    if (status >= 200 && status < 300) grants.give(run.projectId, run.grant);
    else if (status === 401 || status === 403 || status === 404) grants.withdraw(run.projectId, run.grant);
    if (status === 404 && run.plan.latest) {
      generations.bump(run.endpointKey, true);
      void shared?.retire(run.projectId, nameOf(run.ctx));
    }
    return fetched;
  }
  function share(run, gen, fetched) {
    if (shared === null || gen === null || fetched.kind !== "answer" || fetched.ttlMs <= 0) return fetched;
    if (generations.of(run.endpointKey, run.plan.latest) !== run.generation) return fetched;
    void shared.store(run.projectId, nameOf(run.ctx), run.plan.key, gen, fetched.response, fetched.ttlMs);
    return fetched;
  }
  async function uncached(ctx, raw) {
    return upstreamReply(ctx, await runUpstream(ctx, raw, true));
  }
  function upstreamReply(ctx, fetched) {
    if (fetched.kind === "failure") {
      tally(ctx, "failed");
      throw fetched.error;
    }
    tally(ctx, "upstream", fetched.response.status);
    return buildReply({ response: fetched.response, source: "upstream", ageMs: 0 });
  }
  async function runOwn(run, found) {
    const { plan, key, grant } = run;
    const flight = `${grant}\0${key}`;
    let own = plan.kind === "cached" ? ungranted.get(flight) : void 0;
    if (own === void 0) {
      own = (async () => {
        const gen = (found === void 0 ? await lookupShared(run) : found)?.gen ?? null;
        return share(run, gen, settle(run, await runUpstream(run.ctx, run.raw, plan.latest)));
      })();
      if (plan.kind === "cached") {
        ungranted.set(flight, own);
        const done = () => void ungranted.delete(flight);
        own.then(done, done);
      }
    }
    const fetched = await own;
    if (fetched.kind !== "failure") {
      const current = generations.of(run.endpointKey, plan.latest);
      if (fetched.ttlMs > 0 && current === run.generation) runs2.set(key, run.projectId, fetched.response, fetched.ttlMs);
    }
    return upstreamReply(run.ctx, fetched);
  }
  return { answer, uncached };
}

// src/http/routes/endpoint-run-upstream.ts
var maxRunFreshnessMs = 24 * 36e5;
function runFreshness(body, fetchedAt, fallbackMs, maxMs) {
  const text2 = (body.length > 65536 ? body.subarray(body.length - 65536) : body).toString("utf8");
  const match = /"cache_target_age"\s*:\s*"([^"]+)"/.exec(text2);
  if (match === null) return fallbackMs;
  const target = Date.parse(match[1]);
  if (!Number.isFinite(target)) return fallbackMs;
  return Math.max(0, Math.min(target - fetchedAt, maxMs));
}
function createRunUpstream(deps) {
  const { client, runTtlMs, now } = deps;
  return async (ctx, body, latest) => {
    if (client === null) return { kind: "failure", error: offline() };
    const result = await client.request({
      operation: "endpoint_run",
      method: ctx.method === "HEAD" ? "GET" : ctx.method,
      path: upstreamTarget(ctx),
      headers: forwardedHeaders(ctx),
      body
    });
    if (result.kind === "failure") return { kind: "failure", error: upstreamFailure(result.cause) };
    const response = responseFrom(result);
    const ok2 = response.status >= 200 && response.status < 300;
    const freshness = ok2 ? runFreshness(response.body, now(), runTtlMs, maxRunFreshnessMs) : 0;
    const ttlMs = latest ? Math.min(freshness, runTtlMs) : freshness;
    return { kind: "answer", response, ttlMs, failed: response.status >= 500 || response.status === 429 };
  };
}

// src/http/routes/endpoint-run.ts
function createEndpointRun(deps, generations, metricNames) {
  const { access, client, runs: runs2, now } = deps;
  const shared = deps.shared ?? null;
  const grants = createRunGrants({ ttlMs: deps.grantTtlMs, now, shared });
  const labels = createNameLabels(metricNames, 20);
  const countsOf = (name) => deps.metrics.endpointRuns(labels.of(name));
  const bodies = createRunBodies();
  const hitReply = createReplyMemo();
  const runUpstream = createRunUpstream({ client, runTtlMs: deps.runTtlMs, now });
  const misses = createRunMisses({ runs: runs2, generations, grants, runUpstream, hitReply, runTtlMs: deps.runTtlMs, now, shared, countsOf, confirm: labels.confirm });
  function run(ctx) {
    if (ctx.method !== "POST") return runWithBody(ctx, void 0);
    readBodyThen(ctx.request, deps.maxBodyBytes, (error, raw) => {
      if (error !== null) return ctx.answerError(error);
      let reply;
      try {
        reply = runWithBody(ctx, raw);
      } catch (thrown) {
        return ctx.answerError(thrown);
      }
      ctx.answer(reply);
    });
    return later;
  }
  function runWithBody(ctx, raw) {
    const read2 = bodies.read(ctx.params[1], ctx, raw);
    if (read2 instanceof ApiError && extractCredential(ctx.headers.authorization, ctx.query) === null) throw read2;
    const authorized = access.authorize("endpoint_run", "upstream", ctx, ctx.params[0] ?? null, read2 instanceof ApiError ? void 0 : read2.bodyKey);
    if (authorized instanceof Promise) return authorized.then(({ caller, projectId }) => runAuthorized(ctx, raw, read2, caller, projectId));
    return runAuthorized(ctx, raw, read2, authorized.caller, authorized.projectId);
  }
  function runAuthorized(ctx, raw, read2, caller, projectId) {
    if (read2 instanceof ApiError) throw read2;
    if (client === null) throw offline();
    const name = ctx.params[1];
    const numericPath = isDigits(ctx.params[0] ?? "");
    const plan = projectId === null || !numericPath ? { kind: "uncached" } : read2.plan;
    if (plan.kind === "uncached" || projectId === null) return misses.uncached(ctx, raw);
    let last = read2.lastKey;
    if (last === null || last.projectId !== projectId || last.epoch !== generations.epoch) {
      const endpointKey = last !== null && last.projectId === projectId ? last.endpointKey : `${projectId}\0${name}`;
      const generation = generations.of(endpointKey, plan.latest);
      if (last !== null && last.projectId === projectId && last.generation === generation) last.epoch = generations.epoch;
      else {
        const key = `${endpointKey}\0${plan.latest ? "l" : "a"}${generation}\0${plan.key}`;
        last = { projectId, endpointKey, generation, epoch: generations.epoch, key };
        read2.lastKey = last;
      }
    }
    let grant = read2.lastGrant;
    if (grant === null || grant.projectId !== projectId || grant.digest !== caller.digest || grant.kind !== caller.kind) {
      grant = { projectId, digest: caller.digest, kind: caller.kind, key: grants.key(caller, projectId, name), epoch: -1, until: 0 };
      read2.lastGrant = grant;
    }
    if (grant.epoch !== grants.epoch) {
      grant.until = grants.until(grant.key);
      grant.epoch = grants.epoch;
    }
    const at = now();
    const granted = grant.until > at;
    if (plan.kind === "cached" && granted) {
      const hit = runs2.hit(last.key, projectId, at);
      if (hit !== void 0) {
        if (read2.counts === null || read2.counts.epoch !== labels.epoch) read2.counts = { epoch: labels.epoch, tally: countsOf(name) };
        read2.counts.tally.cache += 1;
        if (read2.lastServed !== hit) {
          read2.lastServed = hit;
          read2.lastReply = hitReply(hit);
        }
        return read2.lastReply;
      }
    }
    const target = { ctx, raw, plan, projectId, endpointKey: last.endpointKey, generation: last.generation, key: last.key, grant: grant.key };
    return misses.answer(target, granted);
  }
  return run;
}

// src/http/routes/endpoints.ts
function stillActive(body) {
  if (body === null) return false;
  try {
    const value = JSON.parse(body.toString("utf8"));
    return isRecord3(value) && value.is_active === true;
  } catch {
    return false;
  }
}
function endpointRoutes(deps, metricNames) {
  const { access, reads, writes, client } = deps;
  const generations = createRunGenerations(1e4);
  const run = createEndpointRun(deps, generations, metricNames);
  const projectsOf = (param) => param !== void 0 && isDigits(param) ? [Number(param)] : deps.store.projectIds();
  const endpointWrite = (route, all) => async (ctx) => {
    let reply;
    try {
      reply = await writes.forward(route, "cached", ctx);
    } catch (error) {
      for (const id of projectsOf(ctx.params[0])) generations.bump(`${id}\0${ctx.params[1]}`, true);
      throw error;
    }
    if (reply.status < 400 || reply.status >= 500) {
      const retireAll = all || !(reply.status >= 200 && reply.status < 300 && stillActive(reply.body));
      for (const id of projectsOf(ctx.params[0])) generations.bump(`${id}\0${ctx.params[1]}`, retireAll);
    }
    return reply;
  };
  async function lastExecutionTimes(ctx) {
    const raw = await readBody(ctx.request, deps.maxBodyBytes);
    let parsed = void 0;
    if (isJsonType(ctx.headers["content-type"])) {
      try {
        parsed = parseJsonBody(raw);
      } catch {
        parsed = void 0;
      }
    }
    const bodyKey = bodyKeyOf(parsed);
    if (parsed === void 0 || bodyKey !== void 0) return writes.forward("endpoint_last_execution_times", "none", ctx, raw);
    const { caller, projectId } = await access.authorize("endpoint_last_execution_times", "upstream", ctx, ctx.params[0] ?? null);
    if (client === null) throw offline();
    const path = ctx.path.endsWith("/") ? ctx.path.slice(0, -1) : ctx.path;
    const key = `${caller.digest}:${caller.kind}\0endpoint_last_execution_times\0${path}\0${ctx.rawQuery}\0${canonicalJson(parsed)}`;
    const served = await deps.cache.get(key, projectId, async () => {
      const result = await client.request({
        operation: "endpoint_last_execution_times",
        method: "POST",
        path: upstreamTarget(ctx),
        headers: forwardedHeaders(ctx),
        body: raw
      });
      if (result.kind === "failure") return { kind: "failure", error: upstreamFailure(result.cause) };
      const response = responseFrom(result);
      const ok2 = response.status >= 200 && response.status < 300;
      return { kind: "answer", response, ttlMs: ok2 ? Math.min(deps.ttl.okMs, 5e3) : 0, failed: response.status >= 500 };
    });
    return buildReply(served);
  }
  const versionTtl = { okMs: deps.versionTtlMs, notFoundMs: deps.ttl.notFoundMs };
  const table = [
    ["endpoint_list", ["GET"], "", reads.handler("endpoint_list", deps.ttl)],
    ["endpoint_create", ["POST"], "", writes.handler("endpoint_create", "cached")],
    ["endpoint_last_execution_times", ["POST"], "/last_execution_times", lastExecutionTimes],
    ["endpoint_retrieve", ["GET"], "/:name", reads.handler("endpoint_retrieve", deps.ttl)],
    ["endpoint_update", ["PATCH", "PUT"], "/:name", endpointWrite("endpoint_update", false)],
    ["endpoint_delete", ["DELETE"], "/:name", endpointWrite("endpoint_delete", true)],
    ["endpoint_materialization_status", ["GET"], "/:name/materialization_status", reads.handler("endpoint_materialization_status", deps.ttl)],
    ["endpoint_openapi", ["GET"], "/:name/openapi.json", reads.handler("endpoint_openapi", deps.ttl)],
    ["endpoint_run", ["GET", "POST"], "/:name/run", run],
    ["endpoint_versions", ["GET"], "/:name/versions", reads.handler("endpoint_versions", deps.ttl)],
    ["endpoint_version", ["GET"], "/:name/versions/:version_number", reads.handler("endpoint_version", versionTtl)]
  ];
  const routes = [];
  for (const prefix of ["/api/projects/:project_id/endpoints", "/api/environments/:project_id/endpoints"]) {
    for (const [name, methods, path, handler] of table) routes.push({ name, methods, template: prefix + path, handler });
  }
  return { routes, retire: (projectId, name) => generations.bump(`${projectId}\0${name}`, true) };
}

// src/http/routes/key-introspection.ts
function keyRecordOf(principal) {
  if (principal.projects !== null && principal.projects.size === 0) return null;
  return {
    label: principal.label,
    value: null,
    scopes: principal.legacy === true ? null : [...principal.scopes],
    scoped_teams: principal.projects === null ? [] : [...principal.projects],
    scoped_organizations: []
  };
}
function keyIntrospectionRoute(deps) {
  const { access, reads } = deps;
  function answer(caller, ctx) {
    if (caller.kind === "secret") throw invalidPersonalKey(caller.source);
    if (caller.principal === unverifiedPrincipal) {
      const served = reads.lookup("key_introspection", ctx, deps.ttl, false, { caller, projectId: null });
      return served instanceof Promise ? served.then(reads.reply) : reads.reply(served);
    }
    const principal = caller.principal;
    const leftMs = principal.kind === "introspected" ? deps.expiresIn?.(caller.digest) ?? null : deps.ttl.okMs;
    if (leftMs === null) throw unavailable("This API key cannot be verified right now: upstream is unreachable. Try again shortly.");
    const record = keyRecordOf(principal);
    if (record === null) throw permissionDenied();
    return jsonReply(200, Buffer.from(JSON.stringify(record)), {
      [keyExpiresInHeader]: String(Math.floor(leftMs / 1e3)),
      "cache-control": "no-store"
    });
  }
  return {
    name: "key_introspection",
    methods: ["GET"],
    template: "/api/personal_api_keys/@current",
    handler: (ctx) => {
      const caller = access.identify(ctx);
      return caller instanceof Promise ? caller.then((c) => answer(c, ctx)) : answer(caller, ctx);
    }
  };
}

// src/http/routes/evaluate.ts
import { promisify } from "node:util";
import { gunzip as gunzipCallback } from "node:zlib";

// src/eval/flags-response.ts
import { randomFillSync } from "node:crypto";

// src/eval/outcomes.ts
var precedence = ["experience_continuity", "unsupported_definition", "unresolved_dependency", "missing_context"];
function mergeReason(current, next) {
  if (current === void 0) return next;
  return precedence.indexOf(next) < precedence.indexOf(current) ? next : current;
}
var Inconclusive = class {
  constructor(reason, regex = false) {
    this.reason = reason;
    this.regex = regex;
  }
  reason;
  regex;
};
var inconclusiveFor = (verdict) => verdict === "inconclusive" ? new Inconclusive("missing_context") : new Inconclusive("unsupported_definition", verdict === "inconclusive-regex");
var ServerOnly = class {
  constructor(reason = "unsupported_definition") {
    this.reason = reason;
  }
  reason;
};
var Broken = class {
};

// src/eval/cohorts.ts
var maxDepth2 = 64;
function evaluateCohort(ref, properties, context, depth = 0) {
  const group = context.cohorts.get(ref.id);
  if (depth > maxDepth2) throw new ServerOnly();
  const inCohort = group === void 0 ? context.staticMember?.(ref.id, properties) : matchGroup(group, properties, context, depth + 1);
  if (inCohort === void 0) throw new ServerOnly();
  return ref.notIn ? !inCohort : inCohort;
}
function leafMatches(leaf, properties, context, depth) {
  if (leaf.kind === "cohort") return evaluateCohort(leaf, properties, context, depth);
  if (leaf.kind === "flag") return context.dependency(leaf);
  if (leaf.kind === "broken") throw new Broken();
  const verdict = context.propertyMatch(leaf, properties);
  if (typeof verdict === "boolean") return verdict;
  throw inconclusiveFor(verdict);
}
function matchGroup(group, properties, context, depth) {
  if (group.type === "empty") return true;
  if (group.type === "invalid") throw new ServerOnly();
  if (group.type === "broken") throw new Broken();
  const isAnd = group.type === "AND";
  const entries = group.groups ?? group.leaves ?? [];
  if (entries.length === 0) return isAnd;
  let unresolved;
  let regex = false;
  if (group.groups !== null) {
    for (const nested of group.groups) {
      try {
        const matches = matchGroup(nested, properties, context, depth + 1);
        if (isAnd ? !matches : matches) return matches;
      } catch (error) {
        if (!(error instanceof Inconclusive)) throw error;
        unresolved = mergeReason(unresolved, error.reason);
        regex ||= error.regex;
      }
    }
  } else {
    for (const leaf of group.leaves ?? []) {
      try {
        const matches = leafMatches(leaf, properties, context, depth);
        if (isAnd ? matches === leaf.negation : matches !== leaf.negation) return !isAnd;
      } catch (error) {
        if (!(error instanceof Inconclusive)) throw error;
        unresolved = mergeReason(unresolved, error.reason);
        regex ||= error.regex;
      }
    }
  }
  if (unresolved !== void 0) throw new Inconclusive(unresolved, regex);
  return isAnd;
}

// src/eval/continuity.ts
var fullRollout = (rollout) => rollout === void 0 || rollout === null || typeof rollout === "number" && rollout >= 100;
var verdicts = /* @__PURE__ */ new WeakMap();
function hashIndependent(flag) {
  let verdict = verdicts.get(flag);
  if (verdict === void 0) {
    const variantFree = flag.variants.length === 0 || (flag.variants[0]?.min ?? 1) <= 0 && (flag.variants[0]?.max ?? 0) >= 1;
    verdict = (flag.holdout === null || flag.holdout.fraction === 1) && flag.conditions.every((condition) => fullRollout(condition.rollout) && (condition.variant !== null || variantFree));
    verdicts.set(flag, verdict);
  }
  return verdict;
}

// src/eval/evaluate.ts
function reasonScore(code) {
  switch (code) {
    case "holdout_condition_value":
      return 5;
    case "condition_match":
      return 4;
    case "out_of_rollout_bound":
      return 3;
    case "no_condition_match":
      return 2;
    case "no_group_type":
      return 1;
    case "flag_disabled":
      return 0;
  }
}
var personProperties = (distinctId, given) => ({
  distinct_id: distinctId,
  ...given
});
function groupProperties(groups, given) {
  const all = {};
  for (const name of Object.keys(groups)) all[name] = { $group_key: groups[name], ...given?.[name] };
  return all;
}
var noProperties = Object.freeze({});
var memoVerdicts = [false, false, true, "inconclusive", "inconclusive-unsupported", "inconclusive-regex"];
var memoCode = (verdict) => verdict === false ? 1 : verdict === true ? 2 : verdict === "inconclusive" ? 3 : verdict === "inconclusive-unsupported" ? 4 : 5;
var batchHashes = [0.5, 0.5, 0.5, 0.5];
var peerHeads = [[], [0], [0, 0], [0, 0, 0]];
var noHashes = new Float64Array(1);
var maxMemoMaps = 8;
var memoPool = [];
var memoGeneration = 0;
var maxMemoGeneration = 2 ** 28 - 1;
function nextMemoGeneration() {
  if (memoGeneration === maxMemoGeneration) {
    for (const table of memoPool) table.fill(0);
    memoGeneration = 0;
  }
  return ++memoGeneration;
}
function memoTable(index, slots) {
  let table = memoPool[index];
  if (table === void 0 || table.length < slots) {
    table = new Int32Array(Math.max(slots, 64));
    memoPool[index] = table;
  }
  return table;
}
function createEvaluation(defs, ctx, serves) {
  const dependencyValues = /* @__PURE__ */ new Map();
  const partialDependencies = /* @__PURE__ */ new Set();
  const inProgress = [];
  let depth = 0;
  let reason = "no_group_type";
  let conditionIndex = null;
  let partial = false;
  const note = (code, index) => {
    if (reasonScore(code) >= reasonScore(reason)) {
      reason = code;
      conditionIndex = index;
    }
  };
  let memoValue = null;
  let memo = noHashes;
  let memoBase = 0;
  let memoTenancy = 0;
  function bucketHash(flag, bucketingValue, variant) {
    if (memoValue !== bucketingValue || memo[memoBase] !== memoTenancy) {
      const memos = defs.bucketHashes;
      memos.find(bucketingValue);
      memo = memos.page;
      memoBase = memos.base;
      memoValue = bucketingValue;
      memoTenancy = memo[memoBase];
    }
    const row = memoBase + (variant ? 2 : 1);
    const at = row + 2 * flag.hashSlot;
    const kept = memo[at];
    if (kept === kept) return kept;
    const peers = variant ? flag.variantPeers : flag.rolloutPeers;
    const salt = variant ? "variant" : "";
    if (peers.length > 0) {
      const heads = peerHeads[peers.length];
      for (let k2 = 0; k2 < peers.length; k2++) heads[k2] = defs.hashHeadAt[peers[k2]];
      if (flagHashesOf(defs.hashHeads, flag.hashHead, heads, bucketingValue, salt, batchHashes)) {
        for (let k2 = 0; k2 < peers.length; k2++) memo[row + 2 * peers[k2]] = batchHashes[k2 + 1];
        const h = batchHashes[0];
        if (h === h) return memo[at] = h;
      }
    }
    return memo[at] = flagHashOf(flag.key, defs.hashHeads, flag.hashHead, bucketingValue, salt);
  }
  function outOfRollout(flag, bucketingValue, rollout) {
    if (rollout == null || rollout >= 100) return false;
    return bucketHash(flag, bucketingValue, false) > rollout / 100;
  }
  let holdoutValue = null;
  let holdoutHashed = 0;
  function inHoldout(bucketingValue, fraction) {
    if (fraction === 1) return true;
    if (holdoutValue !== bucketingValue) {
      holdoutHashed = holdoutHash(bucketingValue);
      holdoutValue = bucketingValue;
    }
    return holdoutHashed <= fraction;
  }
  function variantFor(flag, bucketingValue) {
    if (flag.variants.length === 0) return true;
    const h = bucketHash(flag, bucketingValue, true);
    for (const v of flag.variants) if (h >= v.min && h < v.max) return v.key || true;
    return true;
  }
  function dependency(ref) {
    const chain = ref.chain;
    if (chain === null || chain.length === 0) throw new Inconclusive("unsupported_definition");
    for (const key of chain) if (!defs.byKey.has(key)) throw new Inconclusive("unsupported_definition");
    if (serves !== void 0) {
      for (const key of chain) {
        const dep = defs.byKey.get(key);
        if (dep !== void 0 && !serves(dep)) throw new ServerOnly("unresolved_dependency");
      }
    }
    for (const key of chain) {
      if (dependencyValues.get(key) !== void 0) {
        if (partialDependencies.has(key)) partial = true;
        continue;
      }
      const dep = defs.byKey.get(key);
      if (dep === void 0 || !dep.active) {
        dependencyValues.set(key, false);
        continue;
      }
      for (let i = 0; i < depth; i++) if (inProgress[i] === key) throw new ServerOnly("unresolved_dependency");
      const outerPartial = partial;
      partial = false;
      inProgress[depth++] = key;
      let failed = null;
      try {
        const value = flagValue(dep, true);
        if (value instanceof Inconclusive) failed = value;
        else {
          dependencyValues.set(key, value);
          if (partial) partialDependencies.add(key);
        }
      } catch (error) {
        if (error instanceof ServerOnly) throw new ServerOnly("unresolved_dependency");
        throw new Inconclusive("unresolved_dependency", error instanceof Inconclusive && error.regex);
      } finally {
        depth--;
        partial ||= outerPartial;
      }
      if (failed !== null) throw new Inconclusive("unresolved_dependency", failed.regex);
    }
    const actual = dependencyValues.get(ref.key);
    const expected = ref.expected;
    if (typeof expected === "boolean") return expected === actual || expected && typeof actual === "string" && actual !== "";
    if (typeof expected === "string") return actual === expected;
    return false;
  }
  const memoMaps = [];
  const memoTables = [];
  const stamp = nextMemoGeneration() * 8;
  function propertyMatch(filter, properties) {
    let table;
    for (let i = 0; i < memoMaps.length; i++) {
      if (memoMaps[i] === properties) {
        table = memoTables[i];
        break;
      }
    }
    if (table === void 0) {
      if (memoMaps.length === maxMemoMaps) return filter.match(properties, ctx.nowMs);
      table = memoTable(memoMaps.length, defs.propertySlots);
      memoMaps.push(properties);
      memoTables.push(table);
    }
    const known = table[filter.slot] - stamp;
    if (known > 0 && known < 8) return memoVerdicts[known];
    const verdict = filter.match(properties, ctx.nowMs);
    table[filter.slot] = stamp + memoCode(verdict);
    return verdict;
  }
  const staticMember = (id, properties) => properties === ctx.personProperties ? ctx.staticCohorts?.get(id)?.has(ctx.distinctId) : void 0;
  const filterContext = { cohorts: defs.cohorts, propertyMatch, dependency, staticMember };
  function conditionMatch(flag, bucketingValue, condition, properties) {
    if (condition.filters.length > 0) {
      let unresolved;
      let regex = false;
      let serverOnly;
      for (const filter of condition.filters) {
        if (filter.kind === "broken") throw new Broken();
        if (filter.kind === "property") {
          const verdict = propertyMatch(filter, properties);
          if (verdict === true) continue;
          if (verdict === false) return "no_match";
          if (verdict === "inconclusive") {
            unresolved = mergeReason(unresolved, "missing_context");
          } else {
            regex ||= verdict === "inconclusive-regex";
            unresolved = mergeReason(unresolved, "unsupported_definition");
          }
          continue;
        }
        let matches;
        try {
          matches = matchConditionFilter(filter, properties);
        } catch (error) {
          if (error instanceof Broken && unresolved !== void 0) break;
          if (error instanceof ServerOnly) {
            if (unresolved === void 0) serverOnly ??= error;
            unresolved = mergeReason(unresolved, error.reason);
            continue;
          }
          if (!(error instanceof Inconclusive)) throw error;
          regex ||= error.regex;
          unresolved = mergeReason(unresolved, error.reason);
          continue;
        }
        if (!matches) return "no_match";
      }
      if (serverOnly) throw serverOnly;
      if (unresolved !== void 0) return new Inconclusive(unresolved, regex);
      if (condition.rollout == null) return "match";
    }
    if (outOfRollout(flag, bucketingValue, condition.rollout)) return "out_of_rollout_bound";
    return "match";
  }
  function matchConditionFilter(filter, properties) {
    if (filter.kind === "cohort") return evaluateCohort(filter, properties, filterContext);
    if (filter.kind === "flag") return dependency(filter);
    if (filter.kind === "broken") throw new Broken();
    const verdict = propertyMatch(filter, properties);
    if (typeof verdict === "boolean") return verdict;
    throw inconclusiveFor(verdict);
  }
  function matchConditions(flag, bucketingValue, properties, quiet) {
    if (flag.holdout !== null && inHoldout(bucketingValue, flag.holdout.fraction)) {
      if (!quiet) note("holdout_condition_value", null);
      return flag.holdout.variant;
    }
    let unresolved;
    let regexDeferred = null;
    let result;
    for (let i = 0; i < flag.conditions.length; i++) {
      const condition = flag.conditions[i];
      let bucketing = bucketingValue;
      let effective = properties;
      const aggregation = condition.aggregation !== void 0 ? condition.aggregation : flag.aggregation;
      try {
        if (aggregation !== flag.aggregation && aggregation != null) {
          const name = defs.groupTypeMapping[String(aggregation)];
          if (!name || !Object.hasOwn(ctx.groups, name)) {
            if (!quiet) note("no_group_type", i);
            continue;
          }
          const groupProps = ctx.groupProperties[name];
          if (groupProps === void 0) {
            unresolved = mergeReason(unresolved, "missing_context");
            continue;
          }
          effective = groupProps;
          bucketing = String(ctx.groups[name]);
        }
        const outcome = conditionMatch(flag, bucketing, condition, effective);
        if (outcome instanceof Inconclusive) {
          unresolved = mergeReason(unresolved, outcome.reason);
          if (outcome.regex) {
            regexDeferred ??= /* @__PURE__ */ new Set();
            const excluded = flag.earlyExit && outOfRollout(flag, bucketing, condition.rollout);
            regexDeferred.add(excluded ? false : condition.variant ?? variantFor(flag, bucketing));
          }
          continue;
        }
        if (outcome === "match") {
          result = condition.variant ?? variantFor(flag, bucketing);
          if (!quiet) note("condition_match", i);
          break;
        }
        if (!quiet) note(outcome === "no_match" ? "no_condition_match" : "out_of_rollout_bound", i);
        if (flag.earlyExit && outcome === "out_of_rollout_bound") {
          if (unresolved !== void 0) break;
          return false;
        }
      } catch (error) {
        if (error instanceof ServerOnly) throw new ServerOnly(mergeReason(mergeReason(unresolved, error.reason), flag.definitionReason ?? error.reason));
        if (!(error instanceof Inconclusive)) throw error;
        const inconclusive = error;
        unresolved = mergeReason(unresolved, inconclusive.reason);
        if (inconclusive.regex) {
          regexDeferred ??= /* @__PURE__ */ new Set();
          const excluded = flag.earlyExit && outOfRollout(flag, bucketing, condition.rollout);
          regexDeferred.add(excluded ? false : condition.variant ?? variantFor(flag, bucketing));
        }
      }
    }
    if (result !== void 0 && !(regexDeferred !== null && [...regexDeferred].some((v) => v !== result))) {
      if (unresolved !== void 0) partial = true;
      return result;
    }
    if (unresolved !== void 0) return new Inconclusive(unresolved, regexDeferred !== null);
    return false;
  }
  function flagValue(flag, quiet) {
    if (!flag.active) {
      if (!quiet) {
        reason = "flag_disabled";
        conditionIndex = null;
      }
      return false;
    }
    if (flag.continuity && !(ctx.decideContinuity === true && hashIndependent(flag))) throw new Inconclusive("experience_continuity");
    if (flag.aggregation != null) {
      const name = defs.groupTypeMapping[String(flag.aggregation)];
      if (!name) throw new Inconclusive("unsupported_definition");
      if (!Object.hasOwn(ctx.groups, name)) {
        if (!quiet) note("no_group_type", null);
        return false;
      }
      return matchConditions(flag, String(ctx.groups[name]), ctx.groupProperties[name] ?? noProperties, quiet);
    }
    let bucketing = ctx.distinctId;
    if (flag.deviceBucketing) {
      const device = ctx.personProperties.$device_id;
      if (device === void 0 || device === null || device === "") throw new Inconclusive(flag.definitionReason ?? "missing_context");
      bucketing = String(device);
    }
    return matchConditions(flag, bucketing, ctx.personProperties, quiet);
  }
  return {
    /** Evaluate one flag of the definitions. */
    evaluate(flag) {
      reason = "no_group_type";
      conditionIndex = null;
      partial = false;
      inProgress[depth++] = flag.key;
      try {
        if (flag.conditions.length === 0) note("no_condition_match", null);
        const value = flagValue(flag, false);
        if (value instanceof Inconclusive) return { kind: "inconclusive", reason: value.reason };
        return { kind: "value", value, reason, conditionIndex, partial };
      } catch (error) {
        if (error instanceof Inconclusive || error instanceof ServerOnly) return { kind: "inconclusive", reason: error.reason };
        return { kind: "inconclusive", reason: "unsupported_definition" };
      } finally {
        depth--;
      }
    }
  };
}

// src/eval/flags-response.ts
function servesFlag(flag, query) {
  if (query.runtime !== "all" && flag.runtime !== "all" && flag.runtime !== query.runtime) return false;
  if (query.contexts === null || query.contexts.length === 0 || flag.contexts.length === 0) return true;
  return flag.contexts.some((tag) => query.contexts.includes(tag));
}
function evaluateQuery(defs, query, nowMs) {
  const filtered = defs.limited && (query.runtime !== "all" || query.contexts !== null && query.contexts.length > 0);
  watchClock();
  const evaluation = createEvaluation(
    defs,
    {
      distinctId: query.distinctId,
      groups: query.groups,
      personProperties: personProperties(query.distinctId, query.personProperties),
      groupProperties: groupProperties(query.groups, query.groupProperties),
      nowMs,
      decideContinuity: query.decideContinuity === true,
      staticCohorts: query.staticCohorts
    },
    filtered ? (flag) => servesFlag(flag, query) : void 0
  );
  const decided = [];
  const undecided = [];
  let partial = false;
  const evaluate = (flag) => {
    const outcome = evaluation.evaluate(flag);
    if (outcome.kind === "value") {
      decided[decided.length] = { flag, value: outcome.value, reason: outcome.reason, conditionIndex: outcome.conditionIndex };
      partial ||= outcome.partial;
    } else undecided[undecided.length] = flag.key;
  };
  if (query.flagKeys === null) {
    const flags = defs.distinct;
    for (let i = 0; i < flags.length; i++) {
      const flag = flags[i];
      if (!filtered || servesFlag(flag, query)) evaluate(flag);
    }
  } else {
    for (const key of new Set(query.flagKeys)) {
      const flag = defs.byKey.get(key);
      if (flag === void 0) undecided.push(key);
      else if (!filtered || servesFlag(flag, query)) evaluate(flag);
    }
  }
  return { decided, undecided, partial, validUntil: clockHorizon() };
}
var pending = [];
var noEntry = Buffer.alloc(0);
var comma = 44;
var copyInto = Uint8Array.prototype.set;
function listSize(from, to, remote) {
  let bytes2 = 0;
  for (let i = from; i < to; i++) bytes2 += pending[i].length;
  if (to > from) bytes2 -= 1;
  for (const text2 of remote) bytes2 += Buffer.byteLength(text2) + (bytes2 === 0 ? 0 : 1);
  return bytes2;
}
function copyList(out, at, from, to, remote) {
  const start = at;
  for (let i = from; i < to; i++) {
    const entry2 = pending[i];
    if (i === from) {
      copyInto.call(out, entry2.subarray(1), at);
      at += entry2.length - 1;
    } else {
      copyInto.call(out, entry2, at);
      at += entry2.length;
    }
  }
  for (const text2 of remote) {
    if (at > start) out[at++] = comma;
    at += out.write(text2, at);
  }
  return at;
}
function answerEvaluatedAt(local, remote, nowMs) {
  return local.length === 0 && remote.details.length > 0 && remote.evaluatedAt !== null ? remote.evaluatedAt : Math.floor(nowMs);
}
var tailHead = (errors, quotaLimited) => quotaLimited ? `},"errorsWhileComputingFlags":${errors},"quotaLimited":${JSON.stringify(quotaLimited)},"requestId":` : errors ? headWithErrors : headWithoutErrors;
var headWithErrors = '},"errorsWhileComputingFlags":true,"requestId":';
var headWithoutErrors = '},"errorsWhileComputingFlags":false,"requestId":';
var tailEnd = (stamp, minimal) => `,"evaluatedAt":${stamp.evaluatedAt}${minimal ? ',"minimalFlagCalledEvents":true}' : "}"}`;
function closeOf(errors, quotaLimited, stamp, minimal) {
  const head = tailHead(errors, quotaLimited);
  const end = tailEnd(stamp, minimal);
  if (stamp.requestId === null) {
    freshRequestId();
    return [head, end];
  }
  return [`${head}${JSON.stringify(stamp.requestId)}${end}`, null];
}
function freshRequestId() {
  if (idPoolAt === idPool.length) {
    randomFillSync(idPool);
    idPoolAt = 0;
  }
  const p = idPoolAt;
  idPoolAt += 16;
  let at = 1;
  for (let i = 0; i < 16; i++) {
    let b = idPool[p + i];
    if (i === 6) b = b & 15 | 64;
    else if (i === 8) b = b & 63 | 128;
    if (i === 4 || i === 6 || i === 8 || i === 10) at++;
    idText[at++] = hexDigit[b >> 4];
    idText[at++] = hexDigit[b & 15];
  }
}
var idPool = Buffer.allocUnsafeSlow(16 * 128);
var idPoolAt = idPool.length;
var hexDigit = Buffer.from("0123456789abcdef");
var idText = Buffer.from('"xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"');
var v2Open = Buffer.from('{"flags":{');
var legacyOpen = Buffer.from('{"featureFlags":{');
var legacyMiddle = Buffer.from('},"featureFlagPayloads":{');
var reasonsOpen = Buffer.from("{");
var reasonsClose = "}";
function assemble(open2, split, first, middle, count, second, close, after) {
  let size = open2.length + listSize(0, split, first) + close.length * 3;
  if (after !== null) size += idText.length + after.length;
  if (middle !== null) size += middle.length + listSize(split, count, second);
  const slab = size <= maxSlabBody ? reserve(size) : null;
  const out = slab ?? Buffer.allocUnsafe(size);
  const start = slab !== null ? slabUsed : 0;
  copyInto.call(out, open2, start);
  let at = copyList(out, start + open2.length, 0, split, first);
  if (middle !== null) {
    copyInto.call(out, middle, at);
    at = copyList(out, at + middle.length, split, count, second);
  }
  at += out.write(close, at);
  if (after !== null) {
    copyInto.call(out, idText, at);
    at += out.write(after, at + idText.length, "latin1") + idText.length;
  }
  for (let i = 0; i < count; i++) pending[i] = noEntry;
  if (slab === null) return at === size ? out : out.subarray(0, at);
  slabUsed = at + 7 & ~7;
  return Buffer.from(slab.buffer, slab.byteOffset + start, at - start);
}
var slabBytes = 256 * 1024;
var maxSlabBody = slabBytes / 8;
var slabView = null;
var slabUsed = 0;
function reserve(size) {
  if (slabView === null || slabUsed + size > slabBytes) {
    slabView = Buffer.allocUnsafeSlow(slabBytes);
    slabUsed = 0;
  }
  return slabView;
}
function freshStamp(evaluatedAt, minimal) {
  freshRequestId();
  const end = tailEnd({ requestId: null, evaluatedAt }, minimal);
  const size = idText.length + end.length;
  const slab = reserve(size);
  const start = slabUsed;
  copyInto.call(slab, idText, start);
  slab.write(end, start + idText.length, "latin1");
  slabUsed = start + size + 7 & ~7;
  return Buffer.from(slab.buffer, slab.byteOffset + start, size);
}
var stampLength = (evaluatedAt, minimal) => idText.length + tailEnd({ requestId: null, evaluatedAt }, minimal).length;
function v2Body(local, remote, stamp) {
  const count = local.length;
  for (let i = 0; i < count; i++) {
    const d3 = local[i];
    pending[i] = v2Entry(d3.flag.fragments, d3);
  }
  const [close, after] = closeOf(remote.errors, remote.quotaLimited, stamp, stamp.minimalFlagCalledEvents === true);
  return assemble(v2Open, count, remote.details, null, count, [], close, after);
}
function legacyBody(local, remote, stamp) {
  let count = 0;
  for (const d3 of local) pending[count++] = legacyValueEntry(d3.flag.fragments, d3);
  const split = count;
  for (const d3 of local) {
    const entry2 = legacyPayloadEntry(d3.flag.fragments, d3);
    if (entry2 !== null) pending[count++] = entry2;
  }
  const [close, after] = closeOf(remote.errors, remote.quotaLimited, stamp, false);
  return assemble(legacyOpen, split, remote.values, legacyMiddle, count, remote.payloads, close, after);
}
function reasonsBody(local) {
  let count = 0;
  for (const d3 of local) pending[count++] = reasonsEntry(d3.flag.fragments, d3);
  return assemble(reasonsOpen, count, [], null, count, [], reasonsClose, null);
}

// src/eval/remote-part.ts
var noRemote = (errors) => ({ details: [], values: [], payloads: [], errors, quotaLimited: null, evaluatedAt: null, minimalFlagCalledEvents: false, missing: [] });
var evaluatedAtOf = (value) => typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? value : null;
function remotePart(body, wanted) {
  let parsed;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch {
    return noRemote(true);
  }
  if (typeof parsed !== "object" || parsed === null) return noRemote(true);
  const response = parsed;
  const flags = typeof response.flags === "object" && response.flags !== null ? response.flags : null;
  const quotaLimited = Array.isArray(response.quotaLimited) ? response.quotaLimited.filter((q) => typeof q === "string") : null;
  let errors = response.errorsWhileComputingFlags === true || flags === null;
  const details = [];
  const values = [];
  const payloads = [];
  const missing = [];
  const complete = !errors && !quotaLimited?.includes("feature_flags");
  for (const key of wanted ?? Object.keys(flags ?? {})) {
    const detail = flags !== null && Object.hasOwn(flags, key) ? flags[key] : void 0;
    if (typeof detail !== "object" || detail === null) {
      if (flags !== null && Object.hasOwn(flags, key)) errors = true;
      else if (complete) missing.push(key);
      continue;
    }
    const name = JSON.stringify(key);
    details.push(`${name}:${JSON.stringify(detail)}`);
    values.push(`${name}:${JSON.stringify(typeof detail.variant === "string" ? detail.variant : detail.enabled === true)}`);
    const payload = detail.metadata?.payload;
    if (payload !== void 0 && payload !== null) payloads.push(`${name}:${JSON.stringify(payload)}`);
  }
  return { details, values, payloads, errors, quotaLimited, evaluatedAt: evaluatedAtOf(response.evaluatedAt), minimalFlagCalledEvents: response.minimalFlagCalledEvents === true, missing };
}

// src/http/flags-service-errors.ts
var PlainTextError = class extends Error {
  constructor(status, message2) {
    super(message2);
    this.status = status;
    this.name = "PlainTextError";
  }
  status;
};
function plainTextReply(error) {
  const body = Buffer.from(error.message);
  return { status: error.status, headers: { "content-type": "text/plain; charset=utf-8", "content-length": String(body.length) }, body };
}
var decodingError = (what) => new PlainTextError(400, `Failed to decode request: ${what}. Please check your request format and try again.`);
var missingDistinctId = () => new PlainTextError(400, "The distinct_id field is missing from the request. Please include a valid identifier.");
var bodyTooLargeText = () => new PlainTextError(413, "Failed to buffer the request body: length limit exceeded");
var inflatedTooLarge = (limit) => new PlainTextError(413, `Decompressed request body exceeded ${limit} bytes. If this is a legitimate workload, contact PostHog support.`);
var missingTokenParameter = () => new PlainTextError(400, "Failed to deserialize query string: missing field `token`");
var noProjectToken = () => new ApiError(401, "authentication_error", "not_authenticated", "No API token provided. Please include a valid API token in your request.");
var unknownProjectToken = () => new ApiError(401, "authentication_error", "authentication_failed", "The provided API key is invalid or has expired. Please check your API key and try again.");
var secretKeyInvalid = () => new ApiError(401, "authentication_error", "authentication_failed", "Secret API token is invalid.");
var personalKeyInvalid = () => new ApiError(401, "authentication_error", "authentication_failed", "Personal API key is invalid.");
var personalKeyLacksScope = () => new ApiError(403, "authentication_error", "permission_denied", "Personal API key lacks required scopes (feature_flag:read or feature_flag:write).");
var flagsRateLimited = () => new ApiError(429, "validation_error", "rate_limit_exceeded", "Rate limit exceeded");
function definitionsRefusal(error, authorization) {
  if (error.status === 429) return flagsRateLimited();
  if (error.code === "not_authenticated" || error.status !== 401 && error.status !== 403) return error;
  if (error.detail === incorrectCredentials().detail) return unknownProjectToken();
  const secret = authorization !== void 0 && /^Bearer\s+phs_/.test(authorization);
  if (secret) return secretKeyInvalid();
  return error.detail.startsWith("API key missing required scope") ? personalKeyLacksScope() : personalKeyInvalid();
}

// src/http/routes/evaluate.ts
var gunzip = promisify(gunzipCallback);
function narrowed(body, keys) {
  const { flag_keys: _flagKeys, ...rest } = body;
  return { ...rest, flag_keys_to_evaluate: keys };
}
var isObject3 = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
function decodeBody(raw, ctx, limit) {
  const compression = ctx.query.get("compression");
  const encoding = ctx.headers["content-encoding"]?.trim().toLowerCase();
  if (encoding === "gzip" || compression === "gzip" || compression === "gzip-js") return inflated(raw, limit).then((data) => parsedBody(data, compression));
  return parsedBody(raw, compression);
}
async function inflated(raw, limit) {
  try {
    return await gunzip(raw, { maxOutputLength: limit });
  } catch (error) {
    if (error.code === "ERR_BUFFER_TOO_LARGE") throw inflatedTooLarge(limit);
    throw decodingError("invalid gzip data");
  }
}
function parsedBody(data, compression) {
  let text2 = data.toString("utf8");
  if (compression === "base64" || text2.startsWith("data=")) {
    text2 = Buffer.from(new URLSearchParams(text2).get("data") ?? "", "base64").toString("utf8");
  }
  if (exceedsJsonDepth(text2, maxFlagsJsonDepth)) throw decodingError("JSON nesting too deep");
  let value;
  try {
    value = JSON.parse(text2);
  } catch {
    throw decodingError("invalid JSON");
  }
  if (!isObject3(value)) throw decodingError("invalid JSON");
  return value;
}
var sourcedReply = (body, source) => ({
  status: 200,
  headers: { "content-type": "application/json", "content-length": String(body.length), "x-flag-sidecar-source": source },
  body
});
var keptReply = (head, stamp, source) => ({
  status: 200,
  headers: { "content-type": "application/json", "content-length": String(head.length + stamp.length), "x-flag-sidecar-source": source },
  body: head,
  tail: stamp
});
function groupPropertiesOf(value) {
  if (!isObject3(value)) return {};
  const all = {};
  for (const [name, properties] of Object.entries(value)) if (isObject3(properties)) all[name] = properties;
  return all;
}
var maxDistinctIdLength = 200;
var firstCharacters = (text2, count) => text2.length <= count ? text2 : Array.from(text2).slice(0, count).join("");
var distinctIdOf = (id) => firstCharacters(id, maxDistinctIdLength);
var runtimes = /* @__PURE__ */ new Set(["server", "client", "all"]);
var browserMarks = ["Mozilla/", "Chrome/", "Safari/", "Firefox/", "Edge/"];
var serverPrefixes = ["posthog-python/", "posthog-ruby/", "posthog-php/", "posthog-java/", "posthog-go/", "posthog-node/", "posthog-dotnet/", "posthog-elixir/"];
var mobilePrefixes = ["posthog-android/", "posthog-ios/", "posthog-react-native/", "posthog-flutter/"];
function requestRuntime(explicit, headers) {
  if (typeof explicit === "string") {
    const runtime = explicit.toLowerCase();
    return runtimes.has(runtime) ? runtime : "all";
  }
  const agent = headers["user-agent"];
  if (agent !== void 0) {
    if (browserMarks.some((mark) => agent.includes(mark))) return "client";
    if (serverPrefixes.some((prefix) => agent.startsWith(prefix)) || agent.includes("python-requests/") || agent.includes("curl/")) return "server";
    if (mobilePrefixes.some((prefix) => agent.startsWith(prefix))) return "client";
  }
  if (headers.origin !== void 0 || headers.referer !== void 0 || headers["sec-fetch-mode"] !== void 0 || headers["sec-fetch-site"] !== void 0) return "client";
  return null;
}
var stringList = (value) => Array.isArray(value) ? value.filter((k2) => typeof k2 === "string") : null;
function flagsQuery(body, headers) {
  const id = body.distinct_id ?? body.$distinct_id;
  if (typeof id !== "string" && typeof id !== "number") {
    throw missingDistinctId();
  }
  const given = body.person_properties ?? body.$properties;
  const person = isObject3(given) ? given : {};
  const deviceId = body.device_id ?? body.$device_id;
  const personProperties2 = typeof deviceId === "string" && deviceId !== "" ? { ...person, $device_id: deviceId } : person;
  const groups = body.groups ?? body.$groups;
  return {
    distinctId: distinctIdOf(String(id)),
    personProperties: personProperties2,
    groups: isObject3(groups) ? groups : {},
    groupProperties: groupPropertiesOf(body.group_properties ?? body.$group_properties),
    flagKeys: stringList(body.flag_keys ?? body.flag_keys_to_evaluate),
    runtime: requestRuntime(body.evaluation_runtime, headers),
    contexts: stringList(body.evaluation_contexts ?? body.evaluation_environments),
    // With an anonymous id upstream writes hash-key overrides for continuity flags: those stay upstream's to answer.
    decideContinuity: (body.anon_distinct_id ?? body.$anon_distinct_id) == null
  };
}
function createEvaluationRoutes(deps) {
  const { store, upstream, metrics, answers } = deps;
  const answerLookups = metrics.cacheLookups.of("flags_answer");
  async function askUpstream(body, keys) {
    if (upstream === null) return noRemote(true);
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), deps.upstreamTimeoutMs);
    try {
      const result = await upstream.request({
        operation: "flags",
        method: "POST",
        path: "/flags/?v=2",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(keys === null ? body : narrowed(body, keys)),
        signal: controller.signal
      });
      if (result.kind !== "response" || result.status < 200 || result.status >= 300) return noRemote(true);
      return remotePart(result.body, keys);
    } finally {
      clearTimeout(timer);
    }
  }
  function evaluate(projectId, body, given) {
    const defs = deps.definitions(projectId);
    const query = {
      distinctId: given.distinctId,
      personProperties: given.personProperties,
      groups: given.groups,
      groupProperties: given.groupProperties,
      flagKeys: given.flagKeys,
      runtime: given.runtime,
      contexts: given.contexts,
      decideContinuity: given.decideContinuity,
      staticCohorts: deps.staticCohorts?.membership(projectId)
    };
    const nowMs = deps.now();
    if (defs === null) {
      const none4 = { decided: [], undecided: [], partial: false };
      return askUpstream(body, query.flagKeys === null ? null : [...new Set(query.flagKeys)]).then((remote) => counted(defs, none4, remote, 0, nowMs, -Infinity));
    }
    const evaluated = evaluateQuery(defs, query, nowMs);
    const ask = evaluated.undecided.filter((key) => defs.byKey.has(key) || !deps.absentKeys.has(defs, query, key, nowMs));
    const knownAbsent = evaluated.undecided.length - ask.length;
    const local = { decided: evaluated.decided, undecided: ask, partial: evaluated.partial };
    const settle = (remote) => {
      if (!remote.errors) deps.absentKeys.remember(defs, query, remote.missing.filter((key) => !defs.byKey.has(key)), nowMs);
      return counted(defs, local, remote, knownAbsent, nowMs, evaluated.undecided.length === 0 ? evaluated.validUntil : -Infinity);
    };
    return ask.length > 0 ? askUpstream(body, ask).then(settle) : settle(noRemote(false));
  }
  function counted(defs, local, given, knownAbsent, nowMs, validUntil) {
    let remote = given;
    const held = remote.missing.filter((key) => defs?.byKey.has(key) === true).length;
    if (held > 0) remote = { ...remote, errors: true };
    const answeredUpstream = remote.details.length + remote.missing.length - held;
    metrics.flagEvaluations.add("local", local.decided.length + knownAbsent);
    if (answeredUpstream > 0) metrics.flagEvaluations.add("upstream", answeredUpstream);
    const unresolved = local.undecided.length - answeredUpstream;
    if (unresolved > 0) metrics.flagEvaluations.add("unresolved", unresolved);
    return { decided: local.decided, undecided: local.undecided, remote, nowMs, validUntil };
  }
  async function forwardWhole(ctx, raw) {
    if (upstream === null) throw unknownProjectToken();
    const headers = { "content-type": ctx.headers["content-type"] ?? "application/json" };
    const encoding = ctx.headers["content-encoding"];
    if (encoding) headers["content-encoding"] = encoding;
    const result = await upstream.request({
      operation: "flags",
      method: "POST",
      path: ctx.rawQuery === "" ? ctx.path : `${ctx.path}?${ctx.rawQuery}`,
      headers,
      body: raw
    });
    const response = responseFrom(result);
    return { status: response.status, headers: response.headers, body: response.body };
  }
  function flagsRoute(ctx) {
    let read2 = false;
    ctx.request.on("error", (error) => {
      if (read2) return;
      read2 = true;
      ctx.answerError(error);
    });
    readBodyThen(ctx.request, deps.maxBodyBytes, (error, raw) => {
      if (read2) return;
      read2 = true;
      if (error !== null) answerFlags(ctx, () => {
        throw error instanceof ApiError && error.status === 413 ? bodyTooLargeText() : error;
      });
      else answerFlags(ctx, () => evaluateFlags(ctx, raw));
    });
    return later;
  }
  function answerFlags(ctx, run) {
    let reply;
    try {
      reply = run();
    } catch (error) {
      if (error instanceof PlainTextError) ctx.answer(plainTextReply(error));
      else ctx.answerError(error);
      return;
    }
    ctx.answer(reply instanceof Promise ? reply.catch(plainText) : reply);
  }
  const plainText = (error) => {
    if (error instanceof PlainTextError) return plainTextReply(error);
    throw error;
  };
  function evaluateFlags(ctx, raw) {
    const key = answers !== null && raw.length <= maxKeptBodyBytes && ctx.headers["content-encoding"] === void 0 ? raw.toString("latin1") : null;
    if (key !== null) {
      const kept = keptAnswer(ctx, key);
      if (kept !== null) return kept;
    }
    const body = decodeBody(raw, ctx, deps.maxBodyBytes);
    return body instanceof Promise ? body.then((decoded) => answerBody(ctx, raw, decoded, null)) : answerBody(ctx, raw, body, key);
  }
  function keptAnswer(ctx, key) {
    const kept = answers.get(key);
    if (kept === void 0) {
      answerLookups.miss += 1;
      return null;
    }
    const nowMs = deps.now();
    if (kept.path !== ctx.path || kept.rawQuery !== ctx.rawQuery || !(nowMs >= kept.validFrom && nowMs <= kept.validUntil) || !stillHolds(kept, ctx)) {
      answers.drop(key);
      answerLookups.miss += 1;
      return null;
    }
    answerLookups.hit += 1;
    metrics.flagEvaluations.add("local", kept.decided);
    const project = store.get(kept.projectId);
    return keptReply(kept.head, freshStamp(Math.floor(nowMs), kept.minimal), project?.cohorts?.source ?? "upstream");
  }
  function stillHolds(kept, ctx) {
    const { projectId } = kept;
    return store.projectIdForToken(kept.token) === projectId && deps.definitions(projectId) === kept.defs.deref() && (deps.staticCohorts?.membership(projectId) ?? null) === (kept.membership?.deref() ?? null) && !store.get(projectId)?.quotaBody && (kept.headerRuntime === void 0 || requestRuntime(void 0, ctx.headers) === kept.headerRuntime);
  }
  function keep(key, ctx, kept, defs, body) {
    const headLength = body.length - stampLength(Math.floor(kept.validFrom), kept.minimal);
    if (headLength <= 0 || body[headLength - 1] !== 58) return;
    answers.offer(key, () => {
      const head = Buffer.allocUnsafeSlow(headLength);
      body.copy(head, 0, 0, headLength);
      const membership = deps.staticCohorts?.membership(kept.projectId);
      return { ...kept, defs: new WeakRef(defs), membership: membership === void 0 ? null : new WeakRef(membership), path: ctx.path, rawQuery: ctx.rawQuery, head };
    });
  }
  function answerBody(ctx, raw, body, key) {
    const given = body.token ?? body.$token ?? body.api_key ?? ctx.query.get("token") ?? ctx.query.get("api_key");
    const token = typeof given === "string" ? given.trim() : "";
    if (token === "") throw noProjectToken();
    const projectId = store.projectIdForToken(token);
    if (projectId === void 0) return forwardWhole(ctx, raw);
    const v2 = Number(ctx.query.get("v") ?? "1") >= (ctx.path.startsWith("/decide") ? 4 : 2);
    const project = store.get(projectId);
    const defs = deps.definitions(projectId);
    const answer = (decided, remote, nowMs) => {
      const minimalFlagCalledEvents = defs?.minimalFlagCalledEvents === true || remote.minimalFlagCalledEvents;
      const stamp = { requestId: null, evaluatedAt: answerEvaluatedAt(decided, remote, nowMs), minimalFlagCalledEvents };
      return v2 ? v2Body(decided, remote, stamp) : legacyBody(decided, remote, stamp);
    };
    if (project?.quotaBody) {
      const quota = { ...noRemote(false), quotaLimited: ["feature_flags"] };
      return jsonReply(200, answer([], quota, deps.now()));
    }
    const query = flagsQuery(body, ctx.headers);
    if (body.disable_flags === true) return jsonReply(200, answer([], noRemote(false), deps.now()));
    const runtimeNamed = typeof body.evaluation_runtime === "string";
    if (query.runtime !== null && !runtimeNamed) body.evaluation_runtime = query.runtime;
    const reply = ({ decided, remote, nowMs }) => sourcedReply(answer(decided, remote, nowMs), project?.cohorts?.source ?? "upstream");
    const evaluated = evaluate(projectId, body, query);
    if (evaluated instanceof Promise) return evaluated.then(reply);
    const replied = reply(evaluated);
    if (key !== null && evaluated.validUntil > evaluated.nowMs && defs !== null) {
      const fields = {
        token,
        projectId,
        headerRuntime: runtimeNamed || !defs.limited ? void 0 : query.runtime,
        minimal: v2 && defs.minimalFlagCalledEvents,
        decided: evaluated.decided.length,
        validFrom: evaluated.nowMs,
        validUntil: evaluated.validUntil
      };
      keep(key, ctx, fields, defs, replied.body);
    }
    return replied;
  }
  function jsonParam(ctx, name) {
    const text2 = ctx.query.get(name);
    if (text2 === void 0 || text2 === "") return {};
    let value;
    try {
      value = exceedsJsonDepth(text2, maxApiJsonDepth) ? void 0 : JSON.parse(text2);
    } catch {
      value = void 0;
    }
    if (!isObject3(value)) throw new ApiError(400, "validation_error", "invalid_input", `${name} must be a JSON object`, name);
    return value;
  }
  async function evaluationReasons(ctx) {
    const { projectId } = await deps.access.authorize("flag_evaluation_reasons", "local", ctx, ctx.params[0] ?? null);
    const distinctId = ctx.query.get("distinct_id");
    if (!distinctId) throw new ApiError(400, "validation_error", "invalid_input", "distinct_id is required");
    const query = {
      distinctId,
      groups: jsonParam(ctx, "groups"),
      personProperties: jsonParam(ctx, "person_properties"),
      groupProperties: groupPropertiesOf(jsonParam(ctx, "group_properties")),
      flagKeys: null,
      runtime: "all",
      contexts: null
    };
    const defs = projectId === null ? null : deps.definitions(projectId);
    if (defs !== null) {
      const local = evaluateQuery(defs, query, deps.now());
      if (local.undecided.length === 0 && !local.partial) {
        metrics.flagEvaluations.add("local", local.decided.length);
        return sourcedReply(reasonsBody(local.decided), store.get(projectId)?.cohorts?.source ?? "upstream");
      }
    }
    if (upstream === null) throw offline();
    return deps.readThroughReasons(ctx);
  }
  const routes = [
    { name: "flags_evaluate", methods: ["POST"], template: "/flags", handler: flagsRoute },
    { name: "decide_evaluate", methods: ["POST"], template: "/decide", handler: flagsRoute }
  ];
  return { routes, evaluationReasons: (ctx) => evaluationReasons(ctx), evaluate };
}

// src/http/routes/flag-writes.ts
import { performance as performance4 } from "node:perf_hooks";
function createWriteRoutes(deps) {
  const { access, store, client, logger, metrics } = deps;
  async function forward(route, effect, ctx, read2) {
    const body = read2 ?? await readBody(ctx.request, deps.maxBodyBytes);
    let parsed = null;
    let malformed = null;
    if (isJsonType(ctx.headers["content-type"])) {
      try {
        parsed = parseJsonBody(body);
      } catch (error) {
        malformed = error;
      }
    }
    if (malformed && extractCredential(ctx.headers.authorization, ctx.query) === null) throw malformed;
    const bodyKey = bodyKeyOf(parsed);
    const { caller, projectId } = await access.authorize(route, "upstream", ctx, ctx.params[0] ?? null, bodyKey);
    if (malformed) throw malformed;
    if (client === null) throw offline();
    if (deps.drain?.draining) return shuttingDownReply();
    const sent = send2(client, route, effect, ctx, body, caller, projectId);
    return deps.drain ? deps.drain.track(sent) : sent;
  }
  async function send2(client2, route, effect, ctx, body, caller, projectId) {
    const before = projectId === null ? void 0 : store.get(projectId);
    const started = performance4.now();
    const result = await client2.request({
      operation: route,
      method: ctx.method,
      path: upstreamTarget(ctx),
      headers: forwardedHeaders(ctx),
      body
    });
    const status = result.kind === "response" ? result.status : null;
    const ok2 = status !== null && status >= 200 && status < 300;
    let synced = null;
    const maybeApplied = status === null || status < 400 || status >= 500;
    const changed = maybeApplied && effect !== "none" ? projectId === null ? store.projectIds() : [projectId] : [];
    for (const id of changed) deps.invalidate(id);
    if (ok2 && effect === "definitions" && projectId !== null && deps.sync && result.kind === "response") {
      const check = writeCheck(result.body, before);
      if (check) synced = await deps.sync(projectId, check);
    }
    if (changed.length > 0 && deps.announce) await deps.announce(changed, writtenResource(route, ctx.params[1]));
    metrics.forwardedWrites.inc({ route, status: status === null ? result.kind === "failure" ? result.cause : "none" : String(status) });
    logger.info(
      {
        audit: "write",
        keyPrefix: caller.digest.slice(0, 12),
        principal: caller.principal.label,
        route,
        method: ctx.method,
        project: projectId ?? ctx.params[0] ?? null,
        flag: ctx.params[1] ?? flagOf(result.kind === "response" && ok2 ? result.body : null),
        status: status ?? `failed: ${result.kind === "failure" ? result.cause : ""}`,
        durationMs: Math.round(performance4.now() - started),
        ...synced === null ? {} : { synced }
      },
      "forwarded write"
    );
    const response = responseFrom(result);
    const headers = { ...response.headers, "x-flag-sidecar-source": "upstream" };
    if (synced !== null) headers["x-flag-sidecar-synced"] = String(synced);
    return { status: response.status, headers, body: response.body };
  }
  return {
    /** A handler forwarding `route`'s write upstream; `effect` says what a success changes here. */
    handler: (route, effect) => (ctx) => forward(route, effect, ctx),
    /** Forward one request whose body (if any) a handler has already read. */
    forward
  };
}
function flagOf(body) {
  if (body === null) return null;
  try {
    const value = JSON.parse(body.toString("utf8"));
    if (isRecord3(value) && (typeof value.id === "number" || typeof value.key === "string")) return `${String(value.id)}:${String(value.key)}`;
  } catch {
  }
  return null;
}

// src/http/routes/flags.ts
var emptyNotAllowed = { status: 405, headers: { "content-length": "0" }, body: null };
function pyRepr(value) {
  if (typeof value === "string") return value.includes("'") && !value.includes('"') ? `"${value}"` : `'${value.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  if (typeof value === "boolean") return value ? "True" : "False";
  if (value === null) return "None";
  return null;
}
function bulkKeys(project, body) {
  if (project.cohorts === null || typeof body !== "object" || body === null || Array.isArray(body)) return null;
  const ids = body.ids;
  if (ids === void 0 || ids === null || Array.isArray(ids) && ids.length === 0) return valueReply(200, { keys: {} });
  if (!Array.isArray(ids)) return null;
  const valid = [];
  const invalid = [];
  for (const id of ids) {
    if (typeof id === "number" && Number.isInteger(id) && id >= 0 || typeof id === "string" && /^\d+$/.test(id)) valid.push(Number(id));
    else {
      const shown = pyRepr(id);
      if (shown === null) return null;
      invalid.push(shown);
    }
  }
  if (valid.length === 0) return valueReply(400, { error: "Invalid flag IDs provided" });
  const byId = new Map(project.cohorts.definitions.flags.filter((f) => !f.deleted).map((f) => [f.id, f.key]));
  const keys = {};
  for (const id of valid) {
    const key = byId.get(id);
    if (key === void 0) return null;
    keys[String(id)] = key;
  }
  return valueReply(200, invalid.length > 0 ? { keys, warning: `Invalid flag IDs ignored: [${invalid.join(", ")}]` } : { keys });
}
function flagRoutes(deps) {
  const { access, reads, writes, ttl, activityTtl } = deps;
  async function serveBulkKeys(ctx) {
    const body = await readBody(ctx.request, deps.maxBodyBytes);
    const { projectId } = await access.authorize("flag_bulk_keys", "local", ctx, ctx.params[0] ?? null);
    const json = isJsonType(ctx.headers["content-type"]);
    const project = deps.store.get(projectId);
    const local = json && project ? bulkKeys(project, parseJsonBody(body)) : null;
    if (local) return { ...local, headers: { ...local.headers, "x-flag-sidecar-source": project?.cohorts?.source ?? "upstream" } };
    if (!deps.online) throw offline();
    return writes.forward("flag_bulk_keys", "none", ctx, body);
  }
  const forwardDelete = writes.handler("flag_delete", "none");
  function deleteFlag(ctx) {
    const answer = ({ caller }) => caller.principal === unverifiedPrincipal ? forwardDelete(ctx) : emptyNotAllowed;
    const authorized = access.authorize("flag_delete", "upstream", ctx, ctx.params[0] ?? null);
    return authorized instanceof Promise ? authorized.then(answer) : answer(authorized);
  }
  const base = "/api/projects/:project_id/feature_flags";
  const route = (name, methods, path, handler) => ({
    name,
    methods,
    template: base + path,
    handler
  });
  return [
    route("flag_list", ["GET"], "", reads.handler("flag_list", ttl, true)),
    route("flag_create", ["POST"], "", writes.handler("flag_create", "definitions")),
    route("flags_activity", ["GET"], "/activity", reads.handler("flags_activity", activityTtl, true)),
    route("flag_bulk_keys", ["POST"], "/bulk_keys", serveBulkKeys),
    route("flag_evaluation_reasons", ["GET"], "/evaluation_reasons", deps.evaluationReasons),
    route("flag_my_flags", ["GET"], "/my_flags", reads.handler("flag_my_flags", ttl)),
    route("flag_user_blast_radius", ["POST"], "/user_blast_radius", writes.handler("flag_user_blast_radius", "none")),
    route("flag_retrieve", ["GET"], "/:id", reads.handler("flag_retrieve", ttl)),
    route("flag_update", ["PATCH", "PUT"], "/:id", writes.handler("flag_update", "definitions")),
    route("flag_delete", ["DELETE"], "/:id", deleteFlag),
    route("flag_activity", ["GET"], "/:id/activity", reads.handler("flag_activity", activityTtl, true)),
    route("flag_create_static_cohort", ["POST"], "/:id/create_static_cohort_for_flag", writes.handler("flag_create_static_cohort", "none")),
    route("flag_dashboard", ["POST"], "/:id/dashboard", writes.handler("flag_dashboard", "cached")),
    route("flag_enrich_usage_dashboard", ["POST"], "/:id/enrich_usage_dashboard", writes.handler("flag_enrich_usage_dashboard", "cached")),
    route("flag_has_active_dependents", ["POST"], "/:id/has_active_dependents", writes.handler("flag_has_active_dependents", "none")),
    route("flag_remote_config", ["GET"], "/:id/remote_config", deps.remoteConfig),
    route("flag_status", ["GET"], "/:id/status", reads.handler("flag_status", ttl))
  ];
}

// src/http/routes/ofrep.ts
import { createHash as createHash2 } from "node:crypto";

// src/eval/payload.ts
var payloadFor = (flag, value) => value === false ? void 0 : flag.payloads.get(value === true ? "true" : value);

// src/eval/ofrep.ts
var OfrepError = class extends Error {
  constructor(status, errorCode, details) {
    super(details);
    this.status = status;
    this.errorCode = errorCode;
    this.details = details;
    this.name = "OfrepError";
  }
  status;
  errorCode;
  details;
};
var isObject4 = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
var reserved = /* @__PURE__ */ new Set(["targetingKey", "groups", "group_properties", "groupProperties"]);
function ofrepContext(body) {
  if (!isObject4(body)) throw new OfrepError(400, "INVALID_CONTEXT", 'The request body must be a JSON object: {"context": {...}}.');
  const context = body.context ?? {};
  if (!isObject4(context)) throw new OfrepError(400, "INVALID_CONTEXT", "`context` must be a JSON object.");
  const targetingKey = context.targetingKey;
  if (targetingKey === void 0 || targetingKey === null || targetingKey === "") {
    throw new OfrepError(400, "TARGETING_KEY_MISSING", "The context needs a `targetingKey`: the distinct id flags are evaluated for.");
  }
  if (typeof targetingKey !== "string") throw new OfrepError(400, "INVALID_CONTEXT", "`targetingKey` must be a string.");
  const groups = context.groups ?? {};
  if (!isObject4(groups)) throw new OfrepError(400, "INVALID_CONTEXT", "`groups` must be an object of group type \u2192 group key.");
  const given = context.group_properties ?? context.groupProperties ?? {};
  if (!isObject4(given) || !Object.values(given).every(isObject4)) {
    throw new OfrepError(400, "INVALID_CONTEXT", "`group_properties` must be an object of group type \u2192 properties object.");
  }
  const personProperties2 = {};
  for (const name of Object.keys(context)) {
    if (reserved.has(name)) continue;
    if (name === "__proto__") Object.defineProperty(personProperties2, name, { value: context[name], enumerable: true, writable: true, configurable: true });
    else personProperties2[name] = context[name];
  }
  return { targetingKey, personProperties: personProperties2, groups, groupProperties: given };
}
function variantValue(variant) {
  if (variant.trim() === "") return variant;
  const number = Number(variant);
  return Number.isFinite(number) ? number : variant;
}
function ofrepReason(flag, reason, conditionIndex, variant) {
  switch (reason) {
    case "flag_disabled":
      return "DISABLED";
    case "out_of_rollout_bound":
    case "holdout_condition_value":
      return "SPLIT";
    case "condition_match": {
      const condition = flag && conditionIndex !== null ? flag.conditions[conditionIndex] : void 0;
      if (condition === void 0) return "TARGETING_MATCH";
      const partRollout = condition.rollout != null && condition.rollout < 100;
      const splitVariant = variant !== null && condition.variant === null && flag !== void 0 && flag.variants.length > 1;
      return partRollout || splitVariant ? "SPLIT" : "TARGETING_MATCH";
    }
    default:
      return "DEFAULT";
  }
}
function ofrepJson(result) {
  const metadata = {};
  if (result.id !== null) metadata.flagId = result.id;
  if (result.version !== null) metadata.version = result.version;
  if (result.payload !== null) metadata.payload = result.payload;
  if (result.posthogReason !== null) metadata.posthogReason = result.posthogReason;
  const value = result.variant !== null ? variantValue(result.variant) : result.enabled;
  return JSON.stringify({
    key: result.key,
    value,
    reason: result.reason,
    ...result.variant !== null ? { variant: result.variant } : {},
    metadata
  });
}
var payloadText2 = (json) => json === void 0 || json === null ? null : typeof json === "string" ? json : JSON.stringify(json);
var fragments = /* @__PURE__ */ new WeakMap();
function decidedJson(d3) {
  let byResult = fragments.get(d3.flag);
  if (byResult === void 0) fragments.set(d3.flag, byResult = /* @__PURE__ */ new Map());
  const id = `${typeof d3.value === "string" ? `s:${d3.value}` : String(d3.value)}|${d3.reason}|${d3.conditionIndex}`;
  let json = byResult.get(id);
  if (json === void 0) {
    const variant = typeof d3.value === "string" ? d3.value : null;
    const payload = payloadFor(d3.flag, d3.value);
    json = ofrepJson({
      key: d3.flag.key,
      enabled: d3.value !== false,
      variant,
      reason: ofrepReason(d3.flag, d3.reason, d3.conditionIndex, variant),
      posthogReason: d3.reason,
      id: d3.flag.id,
      version: d3.flag.version,
      payload: payload === void 0 ? null : payloadText2(JSON.parse(payload.json))
    });
    byResult.set(id, json);
  }
  return json;
}
function remoteJson(fragment, flagOf2) {
  const parsed = JSON.parse(`{${fragment}}`);
  const [key, detail] = Object.entries(parsed)[0] ?? [];
  if (key === void 0 || !isObject4(detail)) return null;
  const variant = typeof detail.variant === "string" ? detail.variant : null;
  const reason = isObject4(detail.reason) ? detail.reason : {};
  const code = typeof reason.code === "string" ? reason.code : null;
  const conditionIndex = typeof reason.condition_index === "number" ? reason.condition_index : null;
  const metadata = isObject4(detail.metadata) ? detail.metadata : {};
  const json = ofrepJson({
    key,
    enabled: detail.enabled === true || variant !== null,
    variant,
    reason: ofrepReason(flagOf2(key), code ?? "", conditionIndex, variant),
    posthogReason: code,
    id: typeof metadata.id === "number" ? metadata.id : null,
    version: typeof metadata.version === "number" ? metadata.version : null,
    payload: payloadText2(metadata.payload)
  });
  return { key, json };
}
var failureJson = (errorCode, details, key) => JSON.stringify(key === void 0 ? { errorCode, errorDetails: details } : { key, errorCode, errorDetails: details });

// src/http/routes/ofrep.ts
var bearer = (header3) => {
  const match = header3 === void 0 ? null : /^Bearer\s+(\S+)\s*$/i.exec(header3);
  return match?.[1];
};
function refusal(error) {
  const body = Buffer.from(JSON.stringify({ errorDetails: error.detail }));
  if (error.status === 503 || error.status === 429) return jsonReply(429, body, { "retry-after": error.headers?.["retry-after"] ?? "1" });
  return jsonReply(error.status === 404 ? 403 : error.status, body, error.headers ?? void 0);
}
var failure = (error, key) => jsonReply(error.status, Buffer.from(failureJson(error.errorCode, error.details, key)));
function parseBody(raw) {
  if (raw.length === 0) return {};
  const text2 = raw.toString("utf8");
  if (exceedsJsonDepth(text2, maxFlagsJsonDepth)) throw new OfrepError(400, "PARSE_ERROR", "JSON nesting too deep.");
  try {
    return JSON.parse(text2);
  } catch {
    throw new OfrepError(400, "PARSE_ERROR", "The request body is not valid JSON.");
  }
}
function ofrepWrongMethod(ctx) {
  if (!ctx.path.startsWith("/ofrep/")) return null;
  const allow = /^\/ofrep\/v1\/configuration\/?$/.test(ctx.path) ? "GET, HEAD" : "POST";
  return jsonReply(405, Buffer.from(JSON.stringify({ errorDetails: `Method ${JSON.stringify(ctx.method)} not allowed here: use ${allow}.` })), { allow });
}
function ofrepRoutes(deps) {
  const { store, access } = deps;
  const keyRequired = (projectId) => deps.requireKey === "all" || deps.requireKey.has(projectId);
  function project(route, ctx) {
    const fromHeader = bearer(ctx.headers.authorization);
    const apiKey = typeof ctx.headers["x-api-key"] === "string" ? ctx.headers["x-api-key"].trim() : void 0;
    const token = [fromHeader, apiKey].find((value) => value?.startsWith("phc_"));
    const key = [fromHeader, apiKey].find((value) => value !== void 0 && value !== "" && !value.startsWith("phc_"));
    let projectId;
    if (token !== void 0) {
      projectId = store.projectIdForToken(token);
      if (projectId === void 0) throw new ApiError(401, "authentication_error", "authentication_failed", "No project of this sidecar has this project token.");
    } else if (store.projectIds().length === 1) projectId = store.projectIds()[0];
    if (projectId !== void 0 && !keyRequired(projectId)) return projectId;
    if (key === void 0) {
      const detail = projectId === void 0 ? "This sidecar serves several projects: select one with its project token (Authorization: Bearer phc_\u2026 or X-API-Key: phc_\u2026)." : "This project requires an API key with feature_flag:read for OpenFeature (Authorization: Bearer <key>).";
      throw new ApiError(401, "authentication_error", "not_authenticated", detail);
    }
    const keyed = fromHeader === key ? ctx : Object.create(ctx, { headers: { value: { ...ctx.headers, authorization: `Bearer ${key}` } } });
    const authorized = access.authorize(route, "local", keyed, projectId === void 0 ? null : String(projectId));
    return authorized instanceof Promise ? authorized.then((a) => a.projectId) : authorized.projectId;
  }
  function queryOf(projectId, raw, ctx, flagKeys) {
    const context = ofrepContext(parseBody(raw));
    const runtime = requestRuntime(void 0, { "user-agent": ctx.headers["user-agent"] }) ?? "all";
    const query = {
      distinctId: distinctIdOf(context.targetingKey),
      personProperties: context.personProperties,
      groups: context.groups,
      groupProperties: context.groupProperties,
      flagKeys,
      runtime,
      contexts: null
    };
    const body = {
      token: store.get(projectId)?.token ?? void 0,
      distinct_id: query.distinctId,
      person_properties: context.personProperties,
      groups: context.groups,
      group_properties: context.groupProperties,
      evaluation_runtime: runtime
    };
    return { query, body };
  }
  const flagLookup = (projectId) => {
    const defs = deps.definitions(projectId);
    return (key) => defs?.byKey.get(key);
  };
  const quotaLimited = new OfrepError(500, "GENERAL", "PostHog reports this project quota-limited for feature flags: no values are served.");
  const sourceOf = (projectId) => store.get(projectId)?.cohorts?.source ?? "upstream";
  const sourcedJson = (projectId, json) => {
    const body = Buffer.from(json);
    return { status: 200, headers: { "content-type": "application/json", "content-length": String(body.length), "x-flag-sidecar-source": sourceOf(projectId) }, body };
  };
  async function evaluateFlag(ctx) {
    const flagKey = ctx.params[0];
    const raw = await readBody(ctx.request, deps.maxBodyBytes);
    const selected = project("ofrep_evaluate_flag", ctx);
    const projectId = typeof selected === "number" ? selected : await selected;
    if (store.get(projectId)?.quotaBody) throw quotaLimited;
    const { query, body } = queryOf(projectId, raw, ctx, [flagKey]);
    const evaluation = deps.evaluate(projectId, body, query);
    const { decided, undecided, remote } = evaluation instanceof Promise ? await evaluation : evaluation;
    const flagOf2 = flagLookup(projectId);
    const local = decided[0];
    const fromUpstream = remote.details[0];
    const json = local ? decidedJson(local) : fromUpstream ? remoteJson(fromUpstream, flagOf2)?.json : void 0;
    if (json !== void 0) return sourcedJson(projectId, json);
    const snapshot = deps.definitions(projectId) !== null;
    const notFound2 = remote.missing.includes(flagKey) || snapshot && (!deps.online && flagOf2(flagKey) === void 0 || !undecided.includes(flagKey));
    if (notFound2) throw new OfrepError(404, "FLAG_NOT_FOUND", `No flag with key ${JSON.stringify(flagKey)} is served for this project.`);
    throw new OfrepError(500, "GENERAL", "The flag cannot be decided from the snapshot and upstream did not answer for it; try again.");
  }
  async function evaluateFlags(ctx) {
    const raw = await readBody(ctx.request, deps.maxBodyBytes);
    const selected = project("ofrep_evaluate_flags", ctx);
    const projectId = typeof selected === "number" ? selected : await selected;
    if (store.get(projectId)?.quotaBody) throw quotaLimited;
    const { query, body } = queryOf(projectId, raw, ctx, null);
    const evaluation = deps.evaluate(projectId, body, query);
    const { decided, undecided, remote } = evaluation instanceof Promise ? await evaluation : evaluation;
    if (deps.definitions(projectId) === null && remote.errors) throw new OfrepError(500, "GENERAL", "No flag definitions loaded yet and upstream did not answer; try again.");
    const flagOf2 = flagLookup(projectId);
    const parts = decided.map(decidedJson);
    const answered = /* @__PURE__ */ new Set();
    for (const fragment of remote.details) {
      const result = remoteJson(fragment, flagOf2);
      if (result === null) continue;
      parts.push(result.json);
      answered.add(result.key);
    }
    for (const key of undecided) {
      if (!answered.has(key)) parts.push(failureJson("GENERAL", "Cannot be decided from the snapshot and upstream did not answer for it.", key));
    }
    const text2 = `{"flags":[${parts.join(",")}]}`;
    const etag = `"${createHash2("sha1").update(text2).digest("base64url")}"`;
    const headers = { etag, "cache-control": "private, must-revalidate", "x-flag-sidecar-source": sourceOf(projectId) };
    const ifNoneMatch = ctx.headers["if-none-match"];
    if (ifNoneMatch !== void 0 && etagMatches(ifNoneMatch, etag.slice(1, -1))) return { status: 304, headers, body: null };
    return jsonReply(200, Buffer.from(text2), headers);
  }
  const configurationBody = Buffer.from(
    JSON.stringify({
      name: "flag-sidecar",
      capabilities: {
        cacheInvalidation: { polling: { enabled: true, minPollingIntervalMs: Math.min(deps.pollIntervalMs, 6e4) } },
        flagEvaluation: { supportedTypes: ["boolean", "string", "int", "float"] },
        caching: { enabled: false }
      }
    })
  );
  const configurationEtag = `"${createHash2("sha1").update(configurationBody).digest("base64url")}"`;
  const configurationOk = reusableReply(200, { "content-type": "application/json", "content-length": String(configurationBody.length), etag: configurationEtag }, configurationBody);
  const configurationSame = reusableReply(304, { etag: configurationEtag }, null);
  async function configuration(ctx) {
    const selected = project("ofrep_configuration", ctx);
    if (typeof selected !== "number") await selected;
    const ifNoneMatch = ctx.headers["if-none-match"];
    return ifNoneMatch !== void 0 && etagMatches(ifNoneMatch, configurationEtag.slice(1, -1)) ? configurationSame : configurationOk;
  }
  const handle = (run, single) => (ctx) => run(ctx).catch((error) => {
    if (error instanceof OfrepError) return failure(error, single ? ctx.params[0] : void 0);
    if (error instanceof ApiError) return refusal(error);
    throw error;
  });
  return [
    { name: "ofrep_evaluate_flags", methods: ["POST"], template: "/ofrep/v1/evaluate/flags", handler: handle(evaluateFlags, false) },
    { name: "ofrep_evaluate_flag", methods: ["POST"], template: "/ofrep/v1/evaluate/flags/:key", handler: handle(evaluateFlag, true) },
    { name: "ofrep_configuration", methods: ["GET"], template: "/ofrep/v1/configuration", handler: handle(configuration, false) }
  ];
}

// src/http/routes/remote-config.ts
var neutralParams = /* @__PURE__ */ new Set(["token", "api_key", "personal_api_key"]);
function remoteConfigHandler(deps) {
  const { access, reads, warmer, ttl, metrics, now } = deps;
  const route = "flag_remote_config";
  function warmReply(entry2) {
    return reads.reply({ response: entry2.response, source: "cache", ageMs: Math.max(0, now() - entry2.fetchedAt) });
  }
  async function serve(ctx, authorized) {
    const { caller, projectId } = authorized;
    const flag = ctx.params[1];
    if (warmer !== null && projectId !== null && [...ctx.query.keys()].every((name) => neutralParams.has(name))) {
      const cls = credentialClass(caller.kind);
      const warm = warmer.get(projectId, flag, cls);
      if (warm !== void 0) {
        await access.authorize(route, "local", ctx, ctx.params[0] ?? null);
        metrics.cacheLookups.inc({ cache: "remote_config", result: "hit" });
        return warmReply(warm);
      }
      metrics.cacheLookups.inc({ cache: "remote_config", result: "miss" });
      if (cls === warmer.ownClass) warmer.want(projectId, flag);
    }
    return reads.reply(await reads.lookup(route, ctx, ttl, false, authorized));
  }
  return (ctx) => {
    const authorized = access.authorize(route, "upstream", ctx, ctx.params[0] ?? null);
    return authorized instanceof Promise ? authorized.then((a) => serve(ctx, a)) : serve(ctx, authorized);
  };
}

// src/http/routes/sdk.ts
function buildReplies(variant, age, extra) {
  const ageHeader = { age: String(age), ...extra };
  return {
    age,
    ok: reusableReply(200, { ...variant.headers200, ...ageHeader }, variant.body),
    notModified: reusableReply(304, { ...variant.headers304, ...ageHeader }, null)
  };
}
var fallbackHeader = { "x-flag-sidecar-variant": "with-cohorts" };
var missingToken = plainTextReply(missingTokenParameter());
var allowed = "GET, OPTIONS, HEAD";
var otherMethod = (method) => {
  if (method === "HEAD") return { status: 200, headers: { "content-type": "application/json", "content-length": "0" }, body: null };
  if (method === "OPTIONS") return { status: 204, headers: { allow: allowed }, body: null };
  return { status: 405, headers: { allow: allowed, "content-length": "0" }, body: null };
};
function sdkRoutes(deps) {
  const replies = /* @__PURE__ */ new WeakMap();
  const fallbackReplies = /* @__PURE__ */ new WeakMap();
  function variantReply(variant, ctx, fallback = false) {
    const cache = fallback ? fallbackReplies : replies;
    const age = Math.max(0, Math.floor((deps.now() - variant.fetchedAt) / 1e3));
    let cached = cache.get(variant);
    if (cached === void 0 || cached.age !== age) {
      cached = buildReplies(variant, age, fallback ? fallbackHeader : void 0);
      cache.set(variant, cached);
    }
    const ifNoneMatch = ctx.headers["if-none-match"];
    if (ifNoneMatch === void 0) return cached.ok;
    return ifNoneMatch === variant.etag || etagMatches(ifNoneMatch, variant.etagValue) ? cached.notModified : cached.ok;
  }
  async function servePlain(project, ctx) {
    if (deps.ensurePlain) {
      let timer;
      await Promise.race([
        deps.ensurePlain(project.projectId),
        new Promise((resolve) => {
          timer = setTimeout(resolve, deps.plainWaitMs);
        })
      ]);
      clearTimeout(timer);
    }
    const current = deps.store.get(project.projectId) ?? project;
    if (current.plain) return variantReply(current.plain, ctx);
    if (current.cohorts) return variantReply(current.cohorts, ctx, true);
    throw unavailable("No flag definitions loaded yet for this project.");
  }
  function serve(route, ctx, pathId) {
    const authorized = deps.access.authorize(route, "local", ctx, pathId);
    return authorized instanceof Promise ? authorized.then((a) => serveProject(route, ctx, a)) : serveProject(route, ctx, authorized);
  }
  function serveDefinitions(ctx) {
    if (!ctx.query.get("token")) return missingToken;
    if (ctx.method !== "GET") return otherMethod(ctx.method);
    const translate = (error) => {
      throw error instanceof ApiError ? definitionsRefusal(error, ctx.headers.authorization) : error;
    };
    try {
      const reply = serve("flag_definitions", ctx, null);
      return reply instanceof Promise ? reply.catch(translate) : reply;
    } catch (error) {
      return translate(error);
    }
  }
  function serveProject(route, ctx, { projectId }) {
    const project = deps.store.get(projectId);
    if (project.quotaBody) return jsonReply(402, project.quotaBody);
    if (route === "flag_definitions" || ctx.query.has("send_cohorts")) {
      if (!project.cohorts) throw unavailable("No flag definitions loaded yet for this project.");
      return variantReply(project.cohorts, ctx);
    }
    if (project.plain) return variantReply(project.plain, ctx);
    return servePlain(project, ctx);
  }
  return [
    {
      name: "local_evaluation",
      methods: ["GET"],
      template: "/api/projects/:project_id/feature_flags/local_evaluation",
      handler: (ctx) => serve("local_evaluation", ctx, ctx.params[0] ?? null)
    },
    {
      name: "legacy_local_evaluation",
      methods: ["GET"],
      template: "/api/feature_flag/local_evaluation",
      handler: (ctx) => serve("legacy_local_evaluation", ctx, null)
    },
    {
      name: "flag_definitions",
      methods: ["GET", "OPTIONS", "POST", "PUT", "PATCH", "DELETE"],
      template: "/flags/definitions",
      // Upstream's service requires `token` (a missing one is its query-string rejection, a plain-text 400).
      handler: serveDefinitions
    }
  ];
}

// src/http/routes/api.ts
var absentKeysPerSnapshot = 1e4;
function apiRoutes(deps) {
  const { config, store, access, cache, upstream, poller, logger, metrics, now } = deps;
  const reads = createReadThroughRoutes({
    access,
    cache,
    client: upstream,
    upstreamPath: config.upstream ? config.upstream.url.pathname.replace(/\/$/, "") : "",
    selfAddress: `${config.listen.host.includes(":") ? `[${config.listen.host}]` : config.listen.host}:${config.listen.port}`
  });
  const sync = poller ? createWriteSync({ store, pollNow: (id) => poller.pollNow(id), timeoutMs: config.writeSyncTimeoutMs, now }) : null;
  const warmer = upstream && poller && config.upstream ? createRemoteConfigWarmer({
    client: upstream,
    ownKey: config.upstream.key,
    now,
    logger,
    maxEntries: 256,
    idleMs: 10 * config.pollIntervalMs,
    staleMaxMs: config.cache.staleMaxMs
  }) : null;
  if (warmer && poller) poller.onHealthyCycle((id) => void warmer.refresh(id));
  const invalidate = (id) => {
    cache.invalidate(id);
    warmer?.drop(id);
  };
  const fleetCaches = deps.fleetCaches ?? null;
  const writes = createWriteRoutes({
    access,
    invalidate,
    announce: fleetCaches ? (ids, resource) => fleetCaches.announce(ids, resource) : void 0,
    store,
    client: upstream,
    sync,
    maxBodyBytes: config.maxRequestBodyBytes,
    logger,
    metrics,
    drain: deps.drain
  });
  const ttl = { okMs: config.cache.ttlMs, notFoundMs: config.cache.notFoundTtlMs };
  const definitions = createCompiledDefinitions(store);
  const staticCohorts = upstream && config.upstream && config.staticCohortMaxPersons > 0 ? createStaticCohorts({
    client: upstream,
    ownKey: config.upstream.key,
    definitions,
    logger,
    maxPersons: config.staticCohortMaxPersons,
    upstreamPath: config.upstream.url.pathname.replace(/\/$/, "")
  }) : null;
  if (staticCohorts && poller) poller.onHealthyCycle((id) => void staticCohorts.refresh(id));
  const evaluation = createEvaluationRoutes({
    store,
    definitions,
    access,
    upstream,
    upstreamTimeoutMs: Math.min(config.upstream?.timeoutMs ?? 3e3, 3e3),
    maxBodyBytes: config.maxRequestBodyBytes,
    metrics,
    now,
    readThroughReasons: reads.handler("flag_evaluation_reasons", ttl),
    absentKeys: createAbsentKeys({ maxKeys: absentKeysPerSnapshot, ttlMs: config.pollIntervalMs }),
    staticCohorts,
    answers: deps.answers ?? null
  });
  const runLookups = metrics.cacheLookups.of("endpoint_run");
  const runs2 = createReadThroughCache({
    maxBytes: config.endpoints.runMaxBytes,
    maxEntries: config.cache.maxEntries,
    staleMaxMs: config.cache.staleMaxMs,
    now,
    observe: (result) => void (runLookups[result] += 1)
  });
  const endpoints = endpointRoutes(
    {
      access,
      store,
      reads,
      writes,
      cache,
      runs: runs2,
      client: upstream,
      ttl,
      versionTtlMs: config.endpoints.versionTtlMs,
      runTtlMs: config.endpoints.runTtlMs,
      grantTtlMs: config.auth.ttlMs,
      maxBodyBytes: config.maxRequestBodyBytes,
      metrics,
      now,
      shared: fleetCaches?.runs ?? null
    },
    config.endpoints.metricNames
  );
  fleetCaches?.listen({
    invalidate(projectId, resource) {
      invalidate(projectId);
      const endpoint = endpointOf(resource);
      if (endpoint !== null) endpoints.retire(projectId, endpoint);
    },
    dropAll() {
      for (const id of store.projectIds()) {
        invalidate(id);
        runs2.invalidate(id);
      }
    }
  });
  return [
    ...evaluation.routes,
    ...ofrepRoutes({
      store,
      access,
      definitions,
      evaluate: evaluation.evaluate,
      requireKey: config.ofrepRequireKey,
      online: upstream !== null,
      maxBodyBytes: config.maxRequestBodyBytes,
      pollIntervalMs: config.pollIntervalMs
    }),
    ...sdkRoutes({
      store,
      access,
      now,
      ensurePlain: poller ? (id) => poller.ensurePlain(id) : null,
      plainWaitMs: Math.min(config.upstream?.timeoutMs ?? 0, 5e3)
    }),
    ...flagRoutes({
      access,
      store,
      reads,
      writes,
      ttl,
      activityTtl: { okMs: config.cache.activityTtlMs, notFoundMs: config.cache.notFoundTtlMs },
      maxBodyBytes: config.maxRequestBodyBytes,
      online: upstream !== null,
      remoteConfig: remoteConfigHandler({ access, reads, warmer, ttl, metrics, now }),
      evaluationReasons: evaluation.evaluationReasons
    }),
    ...endpoints.routes,
    keyIntrospectionRoute({
      access,
      reads,
      expiresIn: deps.keyExpiresIn ?? null,
      ttl: { okMs: config.auth.ttlMs, notFoundMs: config.cache.notFoundTtlMs }
    })
  ];
}

// src/events/intake.ts
import { isAscii } from "node:buffer";
import { gunzipSync } from "node:zlib";

// src/events/event-bounds.ts
var comma2 = 44;
var colon = 58;
var batchKey = Buffer.from("batch");
var isSpace = (c) => c === 32 || c === 10 || c === 13 || c === 9;
function closingQuote(bytes2, open2) {
  let at = open2;
  for (; ; ) {
    at = bytes2.indexOf(quote, at + 1);
    if (at < 0) return -1;
    let escapes = 0;
    while (bytes2[at - 1 - escapes] === backslash) escapes += 1;
    if (escapes % 2 === 0) return at;
  }
}
function isBatchKey(bytes2, open2, close) {
  const length = close - open2 - 1;
  if (length === batchKey.length) return bytes2.compare(batchKey, 0, batchKey.length, open2 + 1, close) === 0;
  if (length < 6 || length > 30 || !bytes2.subarray(open2 + 1, close).includes(backslash)) return false;
  try {
    return JSON.parse(bytes2.toString("utf8", open2, close + 1)) === "batch";
  } catch {
    return false;
  }
}
function eventBounds(bytes2, maxDepth3) {
  let depth = 0;
  let root = null;
  let rootStart = -1;
  let rootEnd = -1;
  let keyNext = false;
  let lastKeyBatch = false;
  let batchValueDue = false;
  let eventsDepth = 0;
  let ranges = [];
  let eventStart = -1;
  for (let i = 0; i < bytes2.length; i++) {
    const c = bytes2[i];
    if (isSpace(c)) continue;
    if (batchValueDue) {
      batchValueDue = false;
      ranges = [];
      if (c === openBracket && depth === 1) {
        eventsDepth = 2;
        if (++depth > maxDepth3) return "too_deep";
        continue;
      }
    }
    if (c === quote) {
      const close = closingQuote(bytes2, i);
      if (close < 0) break;
      if (keyNext && depth === 1) {
        keyNext = false;
        lastKeyBatch = isBatchKey(bytes2, i, close);
      }
      i = close;
    } else if (c === openBrace || c === openBracket) {
      if (depth === 0 && root === null) {
        root = c === openBrace ? "object" : "array";
        rootStart = i;
        if (root === "array") eventsDepth = 1;
        keyNext = root === "object";
      }
      if (c === openBrace && eventsDepth > 0 && depth === eventsDepth) eventStart = i;
      if (++depth > maxDepth3) return "too_deep";
    } else if (c === closeBrace || c === closeBracket) {
      if (depth === 0) continue;
      depth -= 1;
      if (c === closeBrace && eventsDepth > 0 && depth === eventsDepth && eventStart >= 0) {
        ranges.push(eventStart, i + 1);
        eventStart = -1;
      }
      if (c === closeBracket && depth === eventsDepth - 1) eventsDepth = 0;
      if (depth === 0 && rootEnd < 0) rootEnd = i + 1;
    } else if (depth === 1 && root === "object") {
      if (c === comma2) keyNext = true;
      else if (c === colon) batchValueDue = lastKeyBatch;
    }
  }
  if (root === "object" && eventsDepth === 0 && ranges.length === 0) return { ranges: [rootStart, rootEnd] };
  return { ranges };
}

// src/events/intake.ts
var batchBodyLimit = 20 * 1024 * 1024;
var eventBodyLimit = 2 * 1024 * 1024;
var refuse = (status, reason, message2) => ({ kind: "refused", status, reason, message: message2 });
var decodeError = (why) => refuse(400, "decode", `failed to decode request: ${why}`);
var isRecord4 = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
var nonEmptyString = (value) => typeof value === "string" && value !== "";
function gunzip2(body, limit) {
  try {
    return gunzipSync(body, { maxOutputLength: limit });
  } catch (error) {
    if (error instanceof RangeError || error.code === "ERR_BUFFER_TOO_LARGE") {
      return refuse(400, "decode", "maximum event size exceeded");
    }
    return decodeError("invalid GZIP data");
  }
}
function payloadOf(input) {
  let bytes2 = input.body;
  let compression = (input.compression ?? "").toLowerCase();
  if ((input.contentType ?? "").toLowerCase().startsWith("application/x-www-form-urlencoded")) {
    const form = new URLSearchParams(bytes2.toString("latin1"));
    const data = form.get("data");
    if (data === null) return decodeError("missing data field");
    compression = (form.get("compression") ?? compression).toLowerCase();
    bytes2 = /^[A-Za-z0-9+/=_-]*$/.test(data.trim()) && compression !== "gzip-js" ? Buffer.from(data.trim(), "base64") : Buffer.from(data, "latin1");
    if (compression === "base64") compression = "";
  }
  if (compression === "lz64" || compression === "lz-string") return decodeError("lz64 compression is not relayed; use gzip-js or base64");
  const gzip = compression === "gzip-js" || compression === "gzip" || /\bgzip\b/i.test(input.contentEncoding ?? "") || bytes2[0] === 31 && bytes2[1] === 139;
  if (gzip) return gunzip2(bytes2, input.limit);
  if (bytes2.length > input.limit) return refuse(400, "decode", "maximum event size exceeded");
  return bytes2;
}
var tokenIn = (record) => {
  for (const name of ["api_key", "token", "$token"]) {
    const value = record[name];
    if (nonEmptyString(value)) return value;
  }
  return void 0;
};
var sliceShare = 7 / 8;
function eventTexts(payload, text2, ranges) {
  const events = [];
  const sizes = [];
  let total = 0;
  for (let i = 0; i < ranges.length; i += 2) {
    const size = ranges[i + 1] - ranges[i];
    sizes.push(size);
    total += size;
  }
  const slice = total >= payload.length * sliceShare && isAscii(payload);
  for (let i = 0; i < ranges.length; i += 2) {
    const start = ranges[i];
    const end = ranges[i + 1];
    events.push(slice ? text2.slice(start, end) : payload.toString("utf8", start, end));
  }
  return { events, sizes };
}
function decodeCapture(input) {
  const payload = payloadOf(input);
  if (!Buffer.isBuffer(payload)) return payload;
  if (payload.length > input.room) return { kind: "full" };
  const bounds = eventBounds(payload, maxApiJsonDepth);
  if (bounds === "too_deep") return refuse(400, "parse", `failed to parse request: nesting deeper than ${maxApiJsonDepth} levels`);
  const text2 = payload.toString("utf8");
  let parsed;
  try {
    parsed = JSON.parse(text2);
  } catch (error) {
    return refuse(400, "parse", `failed to parse request: ${error instanceof Error ? error.message : "invalid JSON"}`);
  }
  let events;
  let batchToken;
  if (Array.isArray(parsed)) events = parsed;
  else if (isRecord4(parsed) && Array.isArray(parsed.batch)) {
    events = parsed.batch;
    batchToken = tokenIn(parsed);
  } else if (isRecord4(parsed)) events = [parsed];
  else return refuse(400, "parse", "failed to parse request: expected an event, an array of events or a batch");
  if (events.length === 0) return refuse(400, "empty", "request holds no event");
  let token = batchToken;
  for (const event of events) {
    if (!isRecord4(event)) return refuse(400, "parse", "failed to parse request: an event is not an object");
    if (!nonEmptyString(event.event)) return refuse(400, "event_name", "event submitted with an empty event name");
    const own = tokenIn(event) ?? (isRecord4(event.properties) ? tokenIn(event.properties) : void 0);
    if (batchToken === void 0 && own !== void 0) {
      if (token !== void 0 && token !== own) return refuse(401, "tokens", "batch submitted with inconsistent api_key values");
      token = own;
    }
  }
  if (token === void 0) return refuse(401, "no_token", "event submitted without an api_key");
  if (bounds.ranges.length !== events.length * 2) throw new Error(`capture intake: found ${bounds.ranges.length / 2} event bounds for ${events.length} parsed events`);
  return { kind: "events", token, ...eventTexts(payload, text2, bounds.ranges) };
}

// src/http/routes/capture.ts
var text = (status, message2, extra) => {
  const body = Buffer.from(message2);
  return { status, headers: { "content-type": "text/plain; charset=utf-8", "content-length": String(body.length), ...extra }, body };
};
var okBody = Buffer.from('{"status":1}');
var full = Object.freeze({ kind: "full" });
var ok = Object.freeze({ status: 200, headers: Object.freeze({ "content-type": "application/json", "content-length": String(okBody.length) }), body: okBody });
var plausibleToken = (token) => token.length <= 200 && /^[\x21-\x7e]+$/.test(token) && !token.startsWith("phx_");
function captureRoutes(deps) {
  const { relay, logger } = deps;
  let warnedOffline = false;
  const queueFull = () => {
    relay?.metrics.refused.inc({ reason: "queue_full" });
    return text(503, "transient error, please retry", { "retry-after": "5" });
  };
  async function capture(ctx, limit) {
    if (relay === null) {
      if (!warnedOffline) logger.warn("events relay: a capture arrived but the sidecar is offline and FLAG_SIDECAR_EVENTS_URL is not set; refused");
      warnedOffline = true;
      return text(503, "events relay is off: offline sidecar without FLAG_SIDECAR_EVENTS_URL");
    }
    let body;
    try {
      body = await readBody(ctx.request, limit);
    } catch (error) {
      if (error instanceof ApiError && error.status === 413) {
        relay.metrics.refused.inc({ reason: "too_large" });
        return text(413, "Failed to buffer the request body: length limit exceeded", { connection: "close" });
      }
      throw error;
    }
    const free = relay.queue.free();
    const compression = ctx.query.get("compression") ?? void 0;
    const decoded = free.events <= 0 ? full : decodeCapture({
      body,
      contentType: header(ctx.headers["content-type"]),
      contentEncoding: header(ctx.headers["content-encoding"]),
      compression,
      limit,
      room: free.bytes
    });
    if (decoded.kind === "full") return queueFull();
    if (decoded.kind === "refused") {
      relay.metrics.refused.inc({ reason: decoded.reason });
      return text(decoded.status, decoded.message);
    }
    if (!plausibleToken(decoded.token)) {
      relay.metrics.refused.inc({ reason: "unknown_token" });
      return text(401, "API key is not valid: not a project token");
    }
    if (!deps.anyToken && !deps.knownToken(decoded.token)) {
      relay.metrics.refused.inc({ reason: "unknown_token" });
      return text(401, "API key is not valid: not the token of a project this sidecar relays (FLAG_SIDECAR_EVENTS_ANY_TOKEN)");
    }
    if (!await relay.queue.append(decoded.token, decoded.events, decoded.sizes)) return queueFull();
    relay.metrics.received.inc(decoded.events.length);
    return ok;
  }
  const paths = ["/e", "/i/v0/e", "/capture", "/track", "/engage"];
  return [
    { name: "capture_batch", methods: ["POST"], template: "/batch", handler: (ctx) => capture(ctx, batchBodyLimit) },
    ...paths.map((template) => ({ name: "capture_event", methods: ["POST"], template, handler: (ctx) => capture(ctx, eventBodyLimit) }))
  ];
}
var header = (value) => Array.isArray(value) ? value[0] : value;

// src/http/routes/ops.ts
var iso = (ms) => ms === null ? null : new Date(ms).toISOString();
function describeVariant(variant, now) {
  if (!variant) return null;
  return {
    source: variant.source,
    etag: variant.etag,
    fetched_at: iso(variant.fetchedAt),
    age_seconds: Math.max(0, Math.floor((now - variant.fetchedAt) / 1e3)),
    bytes: variant.body.length,
    flags: variant.definitions.flags.length,
    cohorts: variant.definitions.cohortCount
  };
}
function describePersistence(state) {
  return {
    ok: state.consecutiveFailures === 0,
    pending: state.pending,
    last_success_at: iso(state.lastSuccessAt),
    last_error: state.lastError && { message: state.lastError.message, at: iso(state.lastError.at) },
    consecutive_failures: state.consecutiveFailures,
    next_retry_at: iso(state.nextRetryAt)
  };
}
function isServingStale(project, poll, intervalMs, now) {
  if (!project.cohorts) return false;
  if (poll !== null && poll.consecutiveFailures > 0) return true;
  return now - project.cohorts.fetchedAt > 2 * intervalMs;
}
function opsRoutes(deps) {
  const { store } = deps;
  const projectStatus = (project) => {
    const now = deps.now();
    const poll = deps.pollStatus ? deps.pollStatus(project.projectId) : null;
    return {
      project_id: project.projectId,
      token: project.token === null ? null : `${project.token.slice(0, 8)}\u2026`,
      ready: project.cohorts !== null,
      serving_stale: deps.pollStatus ? isServingStale(project, poll, deps.pollIntervalMs, now) : false,
      quota_limited: project.quotaBody !== null,
      with_cohorts: describeVariant(project.cohorts, now),
      without_cohorts: describeVariant(project.plain, now),
      without_cohorts_wanted: project.plainWanted,
      last_poll: poll && {
        at: iso(poll.lastPollAt),
        outcome: poll.lastOutcome,
        error: poll.lastError,
        consecutive_failures: poll.consecutiveFailures,
        last_success_at: iso(poll.lastSuccessAt),
        next_poll_at: iso(poll.nextPollAt),
        without_cohorts: poll.plain && { at: iso(poll.plain.at), outcome: poll.plain.outcome, error: poll.plain.error }
      },
      persistence: deps.persistStatus && describePersistence(deps.persistStatus(project.projectId)),
      fleet: deps.fleet ? deps.fleet.project(project.projectId) : null
    };
  };
  return [
    { name: "healthz", methods: ["GET"], template: "/healthz", handler: () => valueReply(200, { status: "ok" }) },
    {
      name: "readyz",
      methods: ["GET"],
      template: "/readyz",
      handler: () => {
        if (deps.draining?.()) return valueReply(503, { status: "draining" });
        const waiting = store.list().filter((p) => p.cohorts === null).map((p) => p.projectId);
        return store.ready() ? valueReply(200, { status: "ready" }) : valueReply(503, { status: "not_ready", waiting_for_projects: waiting });
      }
    },
    {
      name: "metrics",
      methods: ["GET"],
      template: "/metrics",
      handler: async () => {
        const body = Buffer.from(await deps.registry.metrics());
        return { status: 200, headers: { "content-type": deps.registry.contentType, "content-length": String(body.length) }, body };
      }
    },
    {
      name: "status",
      methods: ["GET"],
      template: "/status",
      handler: () => valueReply(200, {
        version: deps.build.version,
        commit: deps.build.commit,
        mode: deps.upstream === null ? "offline" : "online",
        fleet: deps.fleet ? deps.fleet.status() : null,
        events: deps.events ? deps.events() : null,
        upstream: deps.upstream,
        uptime_seconds: Math.floor((deps.now() - deps.startedAt) / 1e3),
        ready: store.ready(),
        poll_interval_seconds: deps.pollIntervalMs / 1e3,
        projects: store.list().map(projectStatus),
        keys: deps.keys.map((k2) => ({ label: k2.label, key_sha256_prefix: k2.keyPrefix })),
        read_through_cache: deps.cache(),
        flags_answer_cache: deps.answers ? deps.answers() : null
      })
    }
  ];
}

// src/http/connection-cap.ts
function capConnections(server, deps) {
  const { listener, max, logger, now } = deps;
  const logEveryMs = deps.logEveryMs ?? 1e4;
  const dropped = deps.metrics.connectionsDropped.labels({ listener });
  let lastLogAt = Number.NEGATIVE_INFINITY;
  let unlogged = 0;
  server.maxConnections = max;
  server.on("drop", () => {
    dropped.inc();
    unlogged += 1;
    const at = now();
    if (at - lastLogAt < logEveryMs) return;
    logger.warn({ listener, maxConnections: max, dropped: unlogged }, "connections dropped: the listener is at its connection cap");
    lastLogAt = at;
    unlogged = 0;
  });
  deps.metrics.observeListener(listener, {
    max,
    open: () => new Promise((resolve) => server.getConnections((error, count) => resolve(error ? 0 : count)))
  });
}

// src/http/fd-limit.ts
var reservedFileHandles = 100;
function parseOpenFileLimit(limitsText) {
  const line2 = limitsText.split("\n").find((l) => l.startsWith("Max open files"));
  const soft = line2?.slice("Max open files".length).trim().split(/\s+/)[0];
  return soft !== void 0 && /^\d+$/.test(soft) ? Number(soft) : null;
}
function capsOverLimit(limit, caps) {
  if (limit === null) return null;
  const needed = caps.api + caps.ops + reservedFileHandles;
  return needed <= limit ? null : `the file-handle limit (${limit}) is below FLAG_SIDECAR_MAX_CONNECTIONS + FLAG_SIDECAR_OPS_MAX_CONNECTIONS + ${reservedFileHandles} (${needed}): enough open connections would make snapshot writes and upstream requests fail (EMFILE); lower the caps or raise the limit`;
}

// src/http/server.ts
import { performance as performance5 } from "node:perf_hooks";

// src/http/client-error.ts
var { STATUS_CODES } = http;
var line = (status) => `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}\r
Connection: close\r
\r
`;
var byCode = {
  HPE_HEADER_OVERFLOW: line(431),
  HPE_CHUNK_EXTENSIONS_OVERFLOW: line(413),
  ERR_HTTP_REQUEST_TIMEOUT: line(408)
};
var badRequest = line(400);
function clientErrorResponse(code) {
  return typeof code === "string" ? byCode[code] ?? badRequest : badRequest;
}

// src/http/query.ts
var emptyQuery = /* @__PURE__ */ new Map();
var decode = (text2) => {
  if (text2.indexOf("%") < 0 && text2.indexOf("+") < 0) return text2;
  const spaced = text2.replace(/\+/g, " ");
  try {
    return decodeURIComponent(spaced);
  } catch {
    return spaced;
  }
};
function parseQuery(raw) {
  const query = /* @__PURE__ */ new Map();
  let start = 0;
  while (start <= raw.length) {
    let end = raw.indexOf("&", start);
    if (end < 0) end = raw.length;
    if (end > start) {
      const eq = raw.indexOf("=", start);
      const hasValue = eq >= 0 && eq < end;
      const name = decode(raw.slice(start, hasValue ? eq : end));
      query.set(name, hasValue ? decode(raw.slice(eq + 1, end)) : "");
    }
    start = end + 1;
  }
  return query;
}

// src/http/server.ts
function createRequestListener(deps) {
  const { match, logger, metrics, drain, accessLog } = deps;
  const logRefusals = accessLog?.refusals === true;
  const logSuccesses = accessLog?.successes === true;
  const timed = metrics !== void 0 || logRefusals || logSuccesses;
  let requestCount = 0;
  const connections = /* @__PURE__ */ new WeakMap();
  function connectionOf(socket) {
    let state = connections.get(socket);
    if (state === void 0) {
      state = { auth: newAuthMemo(), method: "", url: "", path: "", rawQuery: "", query: emptyQuery, found: null };
      connections.set(socket, state);
    }
    return state;
  }
  function finish(res, head, route, started, reply, req, query, requestId, reason = null) {
    if (res.destroyed) return;
    try {
      send(res, reply, head, drain?.draining === true);
    } catch (error) {
      logger.error({ route, err: error instanceof Error ? error.message : String(error) }, "could not write response");
      res.destroy();
      return;
    }
    if (metrics) metrics.http.record(route, reply.status, (performance5.now() - started) / 1e3);
    if (reply.status >= 400 ? logRefusals : logSuccesses) {
      const durationMs = performance5.now() - started;
      accessLog.write({ requestId, route, method: req.method ?? "GET", status: reply.status, durationMs, headers: req.headers, query, reason, body: reply.body });
    }
  }
  function fail(res, head, route, started, requestId, error, req, query) {
    if (!(error instanceof ApiError)) {
      logger.error({ requestId, route, err: error instanceof Error ? error.stack : String(error) }, "request failed");
    }
    const refusal2 = error instanceof ApiError ? error : serverError();
    finish(res, head, route, started, errorReply(refusal2), req, query, requestId, refusal2.denial ?? refusal2.code);
  }
  class Exchange {
    constructor(method, path, query, rawQuery, request, params, requestId, authMemo, res, head, route, started) {
      this.method = method;
      this.path = path;
      this.query = query;
      this.rawQuery = rawQuery;
      this.request = request;
      this.params = params;
      this.requestId = requestId;
      this.authMemo = authMemo;
      this.res = res;
      this.head = head;
      this.route = route;
      this.started = started;
      this.headers = request.headers;
    }
    method;
    path;
    query;
    rawQuery;
    request;
    params;
    requestId;
    authMemo;
    res;
    head;
    route;
    started;
    headers;
    answered = false;
    answer(reply) {
      if (this.answered) return;
      this.answered = true;
      if (reply instanceof Promise) {
        reply.then(
          (r) => this.write(r),
          (error) => this.writeError(error)
        );
      } else this.write(reply);
    }
    answerError(error) {
      if (this.answered) return;
      this.answered = true;
      this.writeError(error);
    }
    // Writing may run from a socket event, where nothing may escape: a failure drops the connection.
    write(reply) {
      try {
        finish(this.res, this.head, this.route, this.started, reply, this.request, this.query, this.requestId);
      } catch (error) {
        this.drop(error);
      }
    }
    writeError(error) {
      try {
        fail(this.res, this.head, this.route, this.started, this.requestId, error, this.request, this.query);
      } catch (thrown) {
        this.drop(thrown);
      }
    }
    drop(error) {
      logger.error({ route: this.route, err: error instanceof Error ? error.message : String(error) }, "could not answer");
      this.res.destroy();
    }
  }
  const listener = (req, res) => {
    const started = timed ? performance5.now() : 0;
    const url = req.url ?? "/";
    const method = req.method ?? "GET";
    const head = method === "HEAD";
    const requestId = ++requestCount;
    if (drain?.draining) return finish(res, head, "shutting_down", started, shuttingDownReply(), req, null, requestId, "shutting_down");
    const connection = connectionOf(req.socket);
    let found;
    let path;
    let raw;
    let query;
    if (connection.found !== null && url === connection.url && method === connection.method) {
      found = connection.found;
      path = connection.path;
      raw = connection.rawQuery;
      query = connection.query;
    } else {
      const q = url.indexOf("?");
      path = q < 0 ? url : url.slice(0, q);
      raw = q < 0 ? "" : url.slice(q + 1);
      try {
        found = match(method, path);
      } catch {
        return finish(res, head, "unmatched", started, errorReply(notFound()), req, null, requestId, "not_found");
      }
      query = q < 0 ? emptyQuery : parseQuery(raw);
      if (!query.has("personal_api_key")) {
        connection.method = method;
        connection.url = url;
        connection.path = path;
        connection.rawQuery = raw;
        connection.query = query;
        connection.found = found;
      } else connection.found = null;
    }
    if (found.kind === "not_found") return finish(res, head, "unmatched", started, errorReply(notFound()), req, query, requestId, "not_found");
    const route = found.route.name;
    if (found.kind === "method_not_allowed" && deps.refuseMethod === void 0) {
      return finish(res, head, route, started, errorReply(methodNotAllowed(method)), req, query, requestId, "method_not_allowed");
    }
    const handler = found.kind === "found" ? found.route.handler : deps.refuseMethod;
    const ctx = new Exchange(method, path, query, raw, req, found.kind === "found" ? found.params : noParams, requestId, connection.auth, res, head, route, started);
    try {
      const reply = handler(ctx);
      if (reply !== later) ctx.answer(reply);
    } catch (error) {
      ctx.answerError(error);
    }
  };
  return Object.assign(listener, { requests: () => requestCount });
}
var noParams = Object.freeze([]);
async function startHttpServer(deps, host, port) {
  const listener = createRequestListener(deps);
  const server = http.createServer({ keepAliveTimeout: 65e3, headersTimeout: 3e4, requestTimeout: 6e4, maxHeaderSize: 16 * 1024 }, listener);
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  server.on("error", (error) => deps.logger.error({ err: error.message, host, port }, "listener error"));
  server.on("clientError", (error, socket) => {
    if (socket.writable && socket.bytesWritten === 0) socket.end(clientErrorResponse(error.code));
    else socket.destroy();
    deps.logger.debug({ err: error.message, code: error.code }, "bad request from client");
  });
  const address = server.address();
  const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    server,
    url: `http://${shownHost}:${address.port}`,
    requests: listener.requests,
    async close(graceMs) {
      const closed = new Promise((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      let timer;
      const deadline = new Promise((resolve) => {
        timer = setTimeout(resolve, graceMs);
      });
      await Promise.race([closed, deadline]);
      clearTimeout(timer);
      server.closeAllConnections();
      await closed;
    }
  };
}

// src/store/persist-changes.ts
function persistChanges(deps) {
  const { store, persistence, refreshEveryMs } = deps;
  deps.metrics.observePersistence(
    () => store.projectIds().map((id) => {
      const state = persistence.status(id);
      return { project: String(id), pending: state.pending, lastSuccessSeconds: state.lastSuccessAt === null ? null : state.lastSuccessAt / 1e3 };
    })
  );
  const persistedAt = /* @__PURE__ */ new Map();
  store.onChange((after, before) => {
    if (after.cohorts?.source !== "upstream") return;
    const changed = after.cohorts.body !== before.cohorts?.body || after.plain?.body !== before.plain?.body || after.cohorts.etag !== before.cohorts?.etag || after.plain?.etag !== before.plain?.etag || after.plainWanted !== before.plainWanted;
    const refreshDue = after.cohorts.fetchedAt - (persistedAt.get(after.projectId) ?? -Infinity) >= refreshEveryMs;
    if (!changed && !refreshDue) return;
    persistedAt.set(after.projectId, after.cohorts.fetchedAt);
    void persistence.save(after);
  });
}

// src/store/change-log.ts
function logStoreChanges(store, logger) {
  let ready = store.ready();
  const sources = () => Object.fromEntries(store.list().map((p) => [p.projectId, p.cohorts?.source ?? null]));
  if (ready) logger.info({ projects: store.projectIds(), sources: sources() }, "ready: every project has a snapshot");
  store.onChange((after, before) => {
    const fresh = after.cohorts;
    if (fresh !== null && fresh.body !== before.cohorts?.body) {
      logger.info(
        { project: after.projectId, etag: fresh.etag, flags: fresh.definitions.flags.length, source: fresh.source },
        "flags changed"
      );
    }
    if (!ready && store.ready()) {
      ready = true;
      logger.info({ projects: store.projectIds(), sources: sources() }, "ready: every project has a snapshot");
    }
  });
}

// src/store/store.ts
function createStore(projects) {
  const byId = /* @__PURE__ */ new Map();
  const idByToken = /* @__PURE__ */ new Map();
  const listeners = [];
  for (const project of projects) {
    if (byId.has(project.projectId)) throw new Error(`project ${project.projectId} given twice`);
    byId.set(project.projectId, project);
    if (project.token !== null) {
      if (idByToken.has(project.token)) throw new Error(`project token of ${project.projectId} is used by another project`);
      idByToken.set(project.token, project.projectId);
    }
  }
  const ids = [...byId.keys()].sort((a, b) => a - b);
  return {
    /** The current snapshot of a served project, or undefined. */
    get: (projectId) => byId.get(projectId),
    /** The project a `phc_` token selects, or undefined. */
    projectIdForToken: (token) => idByToken.get(token),
    /** Served project ids, ascending. */
    projectIds: () => ids,
    /** Every current snapshot, by ascending id. */
    list: () => ids.map((id) => byId.get(id)),
    /** Ready once every project has a validated (with-cohorts) snapshot. */
    ready: () => ids.length > 0 && ids.every((id) => byId.get(id)?.cohorts != null),
    /**
     * Replace a project's snapshot with `change(current)`. Returning the same object is a no-op.
     * The token never changes. Throws for a project the store does not serve.
     */
    update(projectId, change) {
      const before = byId.get(projectId);
      if (!before) throw new Error(`project ${projectId} is not served`);
      const after = change(before);
      if (after === before) return before;
      if (after.projectId !== projectId || after.token !== before.token) throw new Error("a snapshot cannot change its project or token");
      byId.set(projectId, after);
      for (const listener of listeners) listener(after, before);
      return after;
    },
    /** Register a listener for every later change. */
    onChange(listener) {
      listeners.push(listener);
    }
  };
}

// src/upstream/poller.ts
var defaultQuotaBody = Buffer.from(
  '{"type":"quota_limited","detail":"You have exceeded your feature flag request quota","code":"payment_required"}'
);
var scheduleClass = {
  updated: "ok",
  not_modified: "ok",
  quota_limited: "ok",
  refused: "refused",
  failed: "failed",
  invalid: "failed"
};
var header2 = (headers, name) => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};
function withVariant(project, variant, fresh, at) {
  if (variant === "plain") return withChanges(project, { plain: fresh });
  if (project.quotaBody === null) return withChanges(project, { cohorts: fresh });
  const renew = (v) => createVariant({ ...v, servedEtag: quotaRecoveryEtag(v, at) });
  return withChanges(project, { cohorts: renew(fresh), plain: project.plain && renew(project.plain), quotaBody: null });
}
function failureMessage(outcome, project) {
  if (outcome === "quota_limited") return "upstream reports the project quota-limited (402); relaying upstream's 402 until a poll succeeds";
  if (project?.cohorts == null) return "poll failed; nothing to serve yet (503 until a poll succeeds)";
  return "poll failed; serving last good snapshot";
}
function createPoller(deps) {
  const { store, client, logger, metrics, now } = deps;
  const abort = new AbortController();
  const status = /* @__PURE__ */ new Map();
  const timers = /* @__PURE__ */ new Map();
  const inFlight = /* @__PURE__ */ new Map();
  const cycles = /* @__PURE__ */ new Map();
  const cycleListeners = [];
  let stopped = false;
  function apply(projectId, variant, result) {
    if (result.kind === "failure") return { outcome: "failed", error: `${result.cause} (${result.code})`, retryAfterMs: null };
    const { status: code, headers, body } = result;
    if (code === 200) {
      const parsed = parseDefinitions(body);
      if (!parsed.ok) return { outcome: "invalid", error: `invalid body: ${parsed.error}`, retryAfterMs: null };
      const fresh = createVariant({
        body,
        definitions: parsed.value,
        upstreamEtag: header2(headers, "etag") ?? null,
        fetchedAt: now(),
        source: "upstream"
      });
      store.update(projectId, (p) => withVariant(p, variant, fresh, now()));
      return { outcome: "updated", error: null, retryAfterMs: null };
    }
    if (code === 304) {
      const current = store.get(projectId)?.[variant];
      if (!current) return { outcome: "failed", error: "304 without a snapshot to keep", retryAfterMs: null };
      const etag = header2(headers, "etag") ?? current.upstreamEtag;
      const refreshed = createVariant({ ...current, upstreamEtag: etag, fetchedAt: now(), source: "upstream" });
      store.update(projectId, (p) => withVariant(p, variant, refreshed, now()));
      return { outcome: "not_modified", error: null, retryAfterMs: null };
    }
    if (code === 402) {
      const quotaBody = body.length > 0 ? body : defaultQuotaBody;
      store.update(projectId, (p) => withChanges(p, { quotaBody }));
      return { outcome: "quota_limited", error: `${upstreamAnswered(code, body)} (quota limited)`, retryAfterMs: null };
    }
    const retryAfterMs = parseRetryAfter(header2(headers, "retry-after"), now());
    const error = upstreamAnswered(code, body);
    if (code === 401 || code === 403 || code === 429) return { outcome: "refused", error, retryAfterMs };
    return { outcome: "failed", error, retryAfterMs };
  }
  function pollVariant(projectId, variant) {
    const id = `${projectId}:${variant}`;
    const running = inFlight.get(id);
    if (running) return running;
    const etag = store.get(projectId)?.[variant]?.upstreamEtag;
    const promise = client.request({
      operation: "local_evaluation",
      method: "GET",
      path: `/api/projects/${projectId}/feature_flags/local_evaluation/${variant === "cohorts" ? "?send_cohorts" : ""}`,
      headers: {
        authorization: `Bearer ${deps.key}`,
        accept: "application/json",
        ...etag ? { "if-none-match": etag } : {}
      },
      signal: abort.signal
    }).then((result) => apply(projectId, variant, result)).catch((error) => ({ outcome: "failed", error: `unexpected: ${error.message}`, retryAfterMs: null })).then((result) => {
      metrics.polls.inc({ project: String(projectId), variant, outcome: result.outcome });
      return result;
    }).finally(() => inFlight.delete(id));
    inFlight.set(id, promise);
    return promise;
  }
  const succeeded = (outcome) => outcome === "updated" || outcome === "not_modified";
  function record(projectId, result, plain, failures, delay) {
    const previous = status.get(projectId);
    const ok2 = succeeded(result.outcome);
    const at = now();
    status.set(projectId, {
      lastPollAt: at,
      lastSuccessAt: ok2 ? at : previous?.lastSuccessAt ?? null,
      lastOutcome: result.outcome,
      lastError: result.error,
      consecutiveFailures: failures,
      nextPollAt: at + delay,
      plain: plain ?? previous?.plain ?? null
    });
    if (!ok2) {
      logger.warn({ project: projectId, outcome: result.outcome, cause: result.error, failures, retryInMs: delay }, failureMessage(result.outcome, store.get(projectId)));
    } else if ((previous?.consecutiveFailures ?? 0) > 0) {
      logger.info({ project: projectId, outcome: result.outcome }, "poll recovered");
    }
  }
  async function cycle(projectId) {
    if (deps.fleet !== void 0 && !await deps.fleet.shouldPoll(projectId)) {
      schedule(projectId, nextDelay({ outcome: "ok", failures: 0, intervalMs: deps.intervalMs, retryAfterMs: null, hasSnapshot: true, random: deps.random }));
      return;
    }
    const main = await pollVariant(projectId, "cohorts");
    let plain = null;
    if (!stopped && store.get(projectId)?.plainWanted && succeeded(main.outcome)) {
      const result = await pollVariant(projectId, "plain");
      plain = { outcome: result.outcome, error: result.error, at: now() };
      if (!succeeded(result.outcome)) {
        logger.warn({ project: projectId, variant: "plain", outcome: result.outcome, cause: result.error }, "poll of the variant without cohorts failed");
      }
    }
    if (stopped) return;
    const failures = succeeded(main.outcome) ? 0 : (status.get(projectId)?.consecutiveFailures ?? 0) + 1;
    const delay = nextDelay({
      outcome: scheduleClass[main.outcome],
      failures,
      intervalMs: deps.intervalMs,
      retryAfterMs: main.retryAfterMs,
      hasSnapshot: store.get(projectId)?.cohorts != null,
      random: deps.random
    });
    record(projectId, main, plain, failures, delay);
    schedule(projectId, delay);
    deps.fleet?.polled(projectId, main.outcome);
    if (succeeded(main.outcome)) for (const listener of cycleListeners) listener(projectId);
  }
  function runCycle(projectId) {
    const running = cycles.get(projectId);
    if (running) return running;
    const promise = cycle(projectId).finally(() => cycles.delete(projectId));
    cycles.set(projectId, promise);
    return promise;
  }
  function schedule(projectId, delay) {
    clearTimeout(timers.get(projectId));
    if (stopped) return;
    const timer = setTimeout(() => void runCycle(projectId), delay);
    timer.unref();
    timers.set(projectId, timer);
  }
  return {
    /** Start every project's loop; the first polls are spread over a short jitter window. */
    start() {
      for (const id of store.projectIds()) schedule(id, initialDelay(deps.intervalMs, deps.random));
    },
    /** Poll a project now (both variants as wanted); resolves when that cycle is done. */
    pollNow(projectId) {
      clearTimeout(timers.get(projectId));
      return runCycle(projectId);
    },
    /**
     * Make sure the plain variant is kept: the first call marks it wanted and fetches it at once, resolving
     * when that fetch is done or failed (never rejects); later calls join that fetch while it runs and
     * otherwise return at once, leaving it to the loop, so callers are not held up while upstream fails.
     */
    async ensurePlain(projectId) {
      const project = store.get(projectId);
      if (!project || stopped) return;
      if (project.plainWanted) {
        await inFlight.get(`${projectId}:plain`);
        return;
      }
      store.update(projectId, (p) => withChanges(p, { plainWanted: true }));
      await pollVariant(projectId, "plain");
    },
    /** Call `listener` after every cycle in which upstream answered (200 or 304), to keep other data in step. */
    onHealthyCycle(listener) {
      cycleListeners.push(listener);
    },
    /** Poll state of a project (null before its first poll). */
    status: (projectId) => status.get(projectId) ?? null,
    /** Stop all loops, abort in-flight polls and wait for them to settle. */
    async stop() {
      stopped = true;
      for (const timer of timers.values()) clearTimeout(timer);
      abort.abort();
      await Promise.allSettled([...cycles.values(), ...inFlight.values()]);
    }
  };
}

// src/app.ts
function drainBudgetMs(shutdownTimeoutMs) {
  return shutdownTimeoutMs - Math.min(1e3, Math.floor(shutdownTimeoutMs / 10));
}
async function loadStaticKeys(file) {
  if (file === null) return [];
  try {
    return parseKeysFile(await readFile(file, "utf8"), file);
  } catch (error) {
    throw new ConfigError([`FLAG_SIDECAR_KEYS_FILE: ${error.message}`]);
  }
}
async function startSidecar(deps) {
  const { config, logger } = deps;
  const now = deps.now ?? Date.now;
  const random = deps.random ?? Math.random;
  const startedAt = now();
  const registry = new Registry();
  const metrics = createMetrics(registry, deps.build);
  const staticKeys = await loadStaticKeys(config.keysFile);
  const persistence = config.snapshotDir ? createPersistence({ dir: config.snapshotDir, logger, metrics, now, retryMinMs: 2e3, retryMaxMs: config.pollIntervalMs }) : null;
  const upstream = config.upstream ? (await import("./client-VEJER4OG.js")).createUpstreamClient({
    url: config.upstream.url,
    timeoutMs: config.upstream.timeoutMs,
    connectTimeoutMs: config.upstream.connectTimeoutMs,
    maxBodyBytes: config.upstream.maxBodyBytes,
    userAgent: `flag-sidecar/${deps.build.version}`,
    metrics
  }) : null;
  const stored = await loadInitialSnapshots({
    projects: config.projects,
    bootstrapFile: config.bootstrapFile,
    persistence,
    logger,
    metrics,
    polling: upstream !== null
  });
  const initial = await resolveProjectTokens(stored, { configured: config.projects, client: upstream, key: config.upstream?.key ?? null, logger }).then((projects) => {
    if (projects.length > 0) return projects;
    throw new ConfigError(["nothing to serve: offline (no FLAG_SIDECAR_UPSTREAM_URL) and no project in the bootstrap file or snapshot dir"]);
  }).catch(async (error) => {
    await upstream?.destroy();
    throw error;
  });
  const store = createStore(initial);
  logStoreChanges(store, logger);
  metrics.observeSnapshots(
    () => store.list().map((p) => ({
      project: String(p.projectId),
      ageSeconds: p.cohorts ? Math.max(0, (now() - p.cohorts.fetchedAt) / 1e3) : null,
      flags: p.cohorts?.definitions.flags.length ?? 0
    }))
  );
  if (persistence) persistChanges({ store, persistence, metrics, refreshEveryMs: 10 * config.pollIntervalMs });
  const fleet = config.fleet && config.upstream ? (await import("./fleet-PIBF33HH.js")).createFleet({ config: config.fleet, upstream: config.upstream.url, registry, logger, now, random }) : null;
  fleet?.start();
  const relay = fleet && config.upstream ? (await import("./snapshot-relay-O4G7VSQM.js")).createSnapshotRelay({
    fleet,
    store,
    intervalMs: config.pollIntervalMs,
    maxBodyBytes: config.upstream.maxBodyBytes,
    logger,
    now,
    random
  }) : null;
  if (fleet && relay) fleet.onClose(() => relay.close());
  const poller = upstream && config.upstream ? createPoller({
    store,
    client: upstream,
    key: config.upstream.key,
    intervalMs: config.pollIntervalMs,
    logger,
    metrics,
    now,
    random,
    ...relay ? { fleet: relay.hooks } : {}
  }) : null;
  const polling = relay && poller ? relay.control(poller) : poller;
  const fleetCaches = fleet ? (await import("./fleet-caches-EZ2FU2E7.js")).createFleetCaches({
    fleet,
    logger,
    now,
    random,
    knownProject: (id) => store.get(id) !== void 0,
    repoll: (id) => relay ? relay.refresh(id) : poller?.pollNow(id) ?? Promise.resolve()
  }) : null;
  const shared = fleet ? (await import("./shared-keys-M2OKQYPW.js")).createSharedKeys({ redis: fleet.redis, keys: fleet.keys, metrics: fleet.metrics, logger, now, ...config.auth }) : null;
  const { resolver, introspector, secretKeys, keyRecords } = await createKeyVerification({ config, staticKeys, store, upstream, shared, metrics, logger, now });
  const access = createAccess({ store, resolver, introspector, secretKeys, metrics, now });
  const readThroughLookups = metrics.cacheLookups.of("read_through");
  const cache = createReadThroughCache({
    maxBytes: config.cache.maxBytes,
    maxEntries: config.cache.maxEntries,
    staleMaxMs: config.cache.staleMaxMs,
    now,
    observe: (result) => void (readThroughLookups[result] += 1)
  });
  metrics.observeCache(cache.size);
  const answers = config.flagsAnswerCacheMaxBytes > 0 ? new AnswerCache(config.flagsAnswerCacheMaxBytes) : null;
  store.onChange((after, before) => {
    if (after.cohorts?.body !== before.cohorts?.body) cache.invalidate(after.projectId);
  });
  const events = config.events.url === null ? null : await (await import("./relay-7MEXX5XQ.js")).eventRelayFor(config, { userAgent: `flag-sidecar/${deps.build.version}`, registry, metrics, logger, now, random });
  const drain = createDrain();
  const servers = [];
  try {
    const keyExpiresIn = introspector?.expiresIn ?? null;
    const routes = apiRoutes({ config, store, access, cache, answers, upstream, poller: polling, logger, metrics, now, drain, fleetCaches, keyExpiresIn });
    fleetCaches?.start();
    const refuseMethod = (ctx) => {
      const ofrep = ofrepWrongMethod(ctx);
      if (ofrep !== null) return Promise.resolve(ofrep);
      return Promise.resolve(access.authorize("method_not_allowed", "upstream", ctx, null)).then(() => {
        throw methodNotAllowed(ctx.method);
      });
    };
    const capture = captureRoutes({
      relay: events,
      knownToken: (token) => store.projectIdForToken(token) !== void 0,
      anyToken: config.events.anyToken,
      logger
    });
    const accessLog = (listener) => createAccessLog({ logger, ...config.accessLog, listener, now });
    servers.push(
      await startHttpServer({ match: createRouter([...routes, ...capture]), logger, metrics, refuseMethod, drain, accessLog: accessLog("api") }, config.listen.host, config.listen.port)
    );
    capConnections(servers[0].server, { listener: "api", max: config.maxConnections.api, logger, metrics, now });
    const ops2 = opsRoutes({
      store,
      registry,
      pollStatus: poller ? (id) => relay?.pollStatus(id) ?? poller.status(id) : null,
      persistStatus: persistence ? (id) => persistence.status(id) : null,
      pollIntervalMs: config.pollIntervalMs,
      build: deps.build,
      upstream: upstream?.origin ?? null,
      keys: resolver.describe(),
      startedAt,
      now,
      cache: () => ({ ...cache.size(), max_bytes: config.cache.maxBytes, max_entries: config.cache.maxEntries }),
      answers: answers && (() => ({ entries: answers.size, bytes: answers.bytes, max_bytes: answers.maxBytes })),
      draining: () => drain.draining,
      fleet: fleet && { status: () => fleet.status(), project: (id) => relay?.status(id) ?? null },
      events: events ? () => events.status() : null
    });
    servers.push(await startHttpServer({ match: createRouter(ops2), logger, accessLog: accessLog("ops") }, config.opsListen.host, config.opsListen.port));
    capConnections(servers[1].server, { listener: "ops", max: config.maxConnections.ops, logger, metrics, now });
  } catch (error) {
    await Promise.all(servers.map((s) => s.close(0)));
    await upstream?.destroy();
    await events?.stop(0);
    await fleet?.close();
    throw error;
  }
  const limitsText = await readFile("/proc/self/limits", "utf8").catch(() => "");
  const overLimit = capsOverLimit(parseOpenFileLimit(limitsText), config.maxConnections);
  if (overLimit !== null) logger.warn({ maxConnections: config.maxConnections }, overLimit);
  if (wasmSha1Unavailable !== null) logger.info({ reason: wasmSha1Unavailable }, "bucketing hash in JavaScript, not WebAssembly");
  else if (wasmSha1x4Unavailable !== null) logger.info({ reason: wasmSha1x4Unavailable }, "bucketing hash one flag at a time, not four at once (no WebAssembly SIMD)");
  poller?.start();
  if (relay && poller) relay.start(poller);
  const [api, ops] = servers;
  logger.info(
    { api: api.url, ops: ops.url, mode: upstream ? "online" : "offline", projects: store.projectIds(), ready: store.ready() },
    "flag-sidecar listening"
  );
  let stopping = null;
  return {
    apiUrl: api.url,
    opsUrl: ops.url,
    registry,
    store,
    poller,
    apiRequests: api.requests,
    stop() {
      stopping ??= (async () => {
        drain.begin();
        const deadline = performance6.now() + drainBudgetMs(config.shutdownTimeoutMs);
        await api.close(drainBudgetMs(config.shutdownTimeoutMs));
        await drain.settled(Math.max(0, deadline - performance6.now()));
        await events?.stop(Math.max(0, deadline - performance6.now()));
        await poller?.stop();
        await persistence?.close();
        await keyRecords?.flush();
        await fleet?.close();
        await ops.close(0);
        await upstream?.close();
        logger.info("flag-sidecar stopped");
      })();
      return stopping;
    }
  };
}
export {
  drainBudgetMs,
  startSidecar
};
//# sourceMappingURL=app-2JUUVNFM.js.map
