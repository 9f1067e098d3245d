import { randomBytes } from 'node:crypto';
import { makeDefinitions } from './definitions.js';
import { compileDefinitions } from '../../src/eval/compile.js';
const one = Buffer.byteLength(JSON.stringify(makeDefinitions(100))) / 100 + 260;
const defs = makeDefinitions(Math.round((2_400_000 * 1.1) / one)) as any;
for (const f of defs.flags) f.description = randomBytes(120).toString('base64');
const text = JSON.stringify(defs);
for (let r = 0; r < 3; r++) { const s = performance.now(); for (let i = 0; i < 5; i++) compileDefinitions(JSON.parse(text)); console.log('parse+compile', ((performance.now() - s) / 5).toFixed(1), 'ms'); }
const s = performance.now(); for (let i = 0; i < 5; i++) JSON.parse(text); console.log('parse', ((performance.now() - s) / 5).toFixed(1));
