import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);

// src/auth/keys-file.ts
var scopePattern = /^(\*|[a-z_]+:(read|write))$/;
var isObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
function parseKeysFile(text, file) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`${file}: not valid JSON: ${error.message}`);
  }
  if (!isObject(value) || !Array.isArray(value.keys)) throw new Error(`${file}: expected {"keys": [...]}`);
  const problems = [];
  const keys = [];
  const seen = /* @__PURE__ */ new Set();
  value.keys.forEach((entry, index) => {
    const where = `keys[${index}]`;
    if (!isObject(entry)) return problems.push(`${where} is not an object`);
    const { sha256, label, scopes, projects } = entry;
    if (typeof sha256 !== "string" || !/^[0-9a-f]{64}$/i.test(sha256)) problems.push(`${where}.sha256 is not 64 hex digits`);
    else if (seen.has(sha256.toLowerCase())) problems.push(`${where}.sha256 is listed twice`);
    if (typeof label !== "string" || label === "") problems.push(`${where}.label is not a non-empty string`);
    if (!Array.isArray(scopes) || scopes.some((s) => typeof s !== "string" || !scopePattern.test(s))) {
      problems.push(`${where}.scopes is not a list of scopes like "feature_flag:read" or "*"`);
    }
    const projectsOk = projects === void 0 || projects === null || Array.isArray(projects) && projects.every((p) => Number.isInteger(p) && p > 0);
    if (!projectsOk) problems.push(`${where}.projects is not a list of project ids`);
    if (problems.length > 0) return;
    seen.add(sha256.toLowerCase());
    keys.push({
      digest: sha256.toLowerCase(),
      label,
      scopes,
      projects: Array.isArray(projects) ? projects : null
    });
  });
  if (problems.length > 0) throw new Error(`${file}: ${problems.join("; ")}`);
  return keys;
}

// src/http/node-http.ts
import { createRequire } from "node:module";
import { setFlagsFromString } from "node:v8";
if (process.versions.node.startsWith("20.")) setFlagsFromString("--max-valid-polymorphic-map-count=16");
var http = createRequire(import.meta.url)("node:http");

export {
  parseKeysFile,
  http
};
//# sourceMappingURL=chunk-NK6ITCOZ.js.map
