/**
 * What the run's globalSetup (global-setup.ts) hands the test files through vitest's provide/inject.
 */

declare module 'vitest' {
  /** Values provided once per run by test/support/global-setup.ts; read them with `inject(name)`. */
  export interface ProvidedContext {
    /** The port of the run's private redis-server on 127.0.0.1. */
    runRedisPort: number;
    /** redis://127.0.0.1:<runRedisPort> */
    runRedisUrl: string;
    /** Absolute paths of the provisioned external tools. */
    tools: { helm: string; promtool: string };
  }
}

export {};
