/**
 * node:http, required rather than imported. An ES import of node:http makes Node 26 read every export of the
 * module to build its namespace, and a few of them are lazy getters that load node's bundled undici (the engine of
 * the global fetch and WebSocket, which the sidecar never uses): ~0.8 MiB of source and the objects it builds, in
 * every process. `require` returns the CommonJS exports and touches none of them (docs/benchmarks.md as of c3f48ec, "Footprint and
 * start-up", third pass). `test/integration/module-loading.test.ts` checks it stays unloaded.
 */
import { createRequire } from 'node:module';
import { setFlagsFromString } from 'node:v8';
import type * as Http from 'node:http';

/**
 * How many hidden classes one inline cache of V8 tracks before it goes megamorphic (V8's default: 4), set before
 * node:http loads (this module is the first the bundle evaluates that creates an EventEmitter). node:http's
 * per-request code inlines node:events' `EventEmitter.init` and `_addListener`, whose inline caches are shared by
 * every emitter of the process. A bare server reaches them with three or four classes (the socket, the request,
 * the response, the server); the sidecar, before its first request, also with the module loader's FileHandles
 * (its chunks are read with fs/promises), the http Agent node:http creates, the ops listener's Server, the stdio
 * streams and cluster's emitter (prom-client): 6 to 7 classes at each site. Past 4, every request paid V8's
 * megamorphic stub-cache lookups in OutgoingMessage, IncomingMessage, addListener, clearIncoming and Readable.on
 * (~1.5k instructions per request, docs/benchmarks.md as of c3f48ec, "Read paths"); no order or shape of the sidecar's own
 * objects can bring these sites back to four. At 16 they stay polymorphic (map checks inlined by TurboFan),
 * with room for the emitters of online mode. No effect on what any code computes.
 *
 * Node 20 only, where it was measured to help. On Node 26 (the image's) these sites stay polymorphic without it
 * (its start hands them fewer classes) and the counts did not move, while changing any V8 flag at run time makes
 * node reject its embedded code cache for every built-in loaded afterwards (node:http and the modules it needs
 * compiled from source: ~30M instructions more per start). Node 22 and 24 were not measured.
 */
if (process.versions.node.startsWith('20.')) setFlagsFromString('--max-valid-polymorphic-map-count=16');

export const http = createRequire(import.meta.url)('node:http') as typeof Http;
