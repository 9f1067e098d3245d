import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);
import {
  createMetrics
} from "./chunk-R6EN27N5.js";
import "./chunk-STRLSS22.js";
import "./chunk-64F6AQPD.js";
export {
  createMetrics
};
//# sourceMappingURL=metrics-MADTSDIR.js.map
