/**
 * node:http, required rather than imported. An ES import of node:http makes Node 26 read every export of the
 * module to build its namespace, and a few of them are lazy getters that load node's bundled undici (the engine of
 * the global fetch and WebSocket, which the sidecar never uses): ~0.8 MiB of source and the objects it builds, in
 * every process. `require` returns the CommonJS exports and touches none of them (docs/benchmarks.md, "Footprint and
 * start-up", third pass). `test/integration/module-loading.test.ts` checks it stays unloaded.
 */
import { createRequire } from 'node:module';
import type * as Http from 'node:http';

export const http = createRequire(import.meta.url)('node:http') as typeof Http;
