import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);
import {
  Counter,
  Gauge,
  Histogram,
  Registry,
  collectDefaultMetrics
} from "./chunk-STRLSS22.js";
import "./chunk-64F6AQPD.js";
export {
  Counter,
  Gauge,
  Histogram,
  Registry,
  collectDefaultMetrics
};
//# sourceMappingURL=prom-SAYKW7YQ.js.map
