import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts', 'test/contract/**/*.test.ts', 'test/faults/**/*.test.ts', 'test/chart/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: 'forks',
    // Provisions helm, promtool, a private Redis and a private TMPDIR for the run (and checks it is left empty).
    globalSetup: ['test/support/global-setup.ts'],
  },
});
