// Preload (`node --import …/loaded-modules.mjs`) that records every module the process loads, for tests of what
// a configuration never needs: each URL the ES module loader resolves (through loaded-modules-hooks.mjs) and, at
// exit, each file in the CommonJS cache, one line each, appended to the file named by LOADED_MODULES_FILE.
import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';

const file = process.env.LOADED_MODULES_FILE;
if (!file) throw new Error('loaded-modules.mjs needs LOADED_MODULES_FILE');
register('./loaded-modules-hooks.mjs', import.meta.url, { data: { file } });
const require = createRequire(import.meta.url);
process.on('exit', () => appendFileSync(file, Object.keys(require.cache).map((path) => `file://${path}\n`).join('')));
