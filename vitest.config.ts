import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts', 'test/contract/**/*.test.ts', 'test/faults/**/*.test.ts', 'test/chart/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: 'forks',
    // Provisions helm, promtool, a private Redis and a private TMPDIR for the run (and checks it is left empty).
    globalSetup: ['test/support/global-setup.ts'],
    // Two workers at least: vitest's default (one less than the cores) ran one file at a time on a 2-core CI
    // machine while most of the suite waits on timers, sockets and child processes (a pass: 231 s -> 154 s).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // A worker's files share its modules instead of each importing src/ anew (import 30 s -> 7 s, a pass on 2
    // cores 154 s -> 110 s): every test closes the servers, processes and timers it starts, and shuffled file
    // orders pass on Node 20 and 26 (--sequence.shuffle.files). A test that needs fresh module state must not
    // rely on running first.
    isolate: false,
  },
});
