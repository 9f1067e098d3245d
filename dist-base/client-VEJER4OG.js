import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);
import {
  classifyFailure,
  createUpstreamClient,
  upstreamHeaders
} from "./chunk-Z7HLARSG.js";
import "./chunk-64F6AQPD.js";
export {
  classifyFailure,
  createUpstreamClient,
  upstreamHeaders
};
//# sourceMappingURL=client-VEJER4OG.js.map
