import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);
import {
  createLogOutput,
  createLogger,
  redactPaths
} from "./chunk-X7V2ZQEL.js";
import "./chunk-64F6AQPD.js";
export {
  createLogOutput,
  createLogger,
  redactPaths
};
//# sourceMappingURL=logger-K27K3DEC.js.map
