import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);

// src/http/routes/write-resource.ts
var endpointName = /^[a-zA-Z][a-zA-Z0-9_-]{0,127}$/;
function isWrittenResource(value) {
  if (value === "flags" || value === "reads") return true;
  return typeof value === "string" && value.startsWith("endpoint:") && endpointName.test(value.slice(9));
}
var endpointOf = (resource) => resource.startsWith("endpoint:") ? resource.slice(9) : null;
function writtenResource(route, name) {
  if (!route.startsWith("endpoint_")) return "flags";
  return name !== void 0 && endpointName.test(name) ? `endpoint:${name}` : "reads";
}

export {
  isWrittenResource,
  endpointOf,
  writtenResource
};
//# sourceMappingURL=chunk-BV2GPDZD.js.map
