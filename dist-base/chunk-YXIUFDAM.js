import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);

// src/store/snapshot.ts
import { createHash } from "node:crypto";
function summarizeDefinitions(definitions) {
  return {
    flags: definitions.flags.map((f) => {
      const version = f.raw.version;
      return { id: f.id, key: f.key, active: f.active, deleted: f.deleted, version: typeof version === "number" ? version : null };
    }),
    cohortCount: Object.keys(definitions.cohorts).length
  };
}
var parsedByBody = /* @__PURE__ */ new WeakMap();
function takeParsedDefinitions(body) {
  const parsed = parsedByBody.get(body);
  parsedByBody.delete(body);
  return parsed;
}
function normalizeEtag(value) {
  let v = value.trim();
  if (v.startsWith("W/")) v = v.slice(2);
  if (v.length >= 2 && v.startsWith('"') && v.endsWith('"')) v = v.slice(1, -1);
  return v;
}
function computeEtag(body) {
  return `W/"${createHash("sha256").update(body).digest("hex").slice(0, 16)}"`;
}
function etagMatches(ifNoneMatch, etagValue) {
  if (ifNoneMatch.trim() === "*") return true;
  if (!ifNoneMatch.includes(",")) return normalizeEtag(ifNoneMatch) === etagValue;
  return ifNoneMatch.split(",").some((candidate) => normalizeEtag(candidate) === etagValue);
}
function createVariant(input) {
  const servedEtag = input.servedEtag ?? null;
  const etag = servedEtag ?? input.upstreamEtag ?? computeEtag(input.body);
  const common = {
    etag,
    "cache-control": "private, must-revalidate",
    "x-flag-sidecar-source": input.source
  };
  const given = input.definitions;
  let definitions;
  if ("parsed" in given) {
    definitions = summarizeDefinitions(given);
    parsedByBody.set(input.body, given.parsed);
  } else definitions = given;
  return Object.freeze({
    body: input.body,
    definitions,
    upstreamEtag: input.upstreamEtag,
    fetchedAt: input.fetchedAt,
    source: input.source,
    servedEtag,
    etag,
    etagValue: normalizeEtag(etag),
    headers200: Object.freeze({
      "content-type": "application/json",
      "content-length": String(input.body.length),
      ...common
    }),
    headers304: Object.freeze(common)
  });
}
function quotaRecoveryEtag(variant, at) {
  const base = variant.upstreamEtag ?? computeEtag(variant.body);
  return `W/"${createHash("sha256").update(`${base}
${at}`).digest("hex").slice(0, 16)}"`;
}
function emptyProject(projectId, token) {
  return Object.freeze({ projectId, token, cohorts: null, plain: null, plainWanted: false, quotaBody: null });
}
function withChanges(project, changes) {
  return Object.freeze({ ...project, ...changes });
}

// src/upstream/payload.ts
var isObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
function invalid(error) {
  return { ok: false, error };
}
function checkFilters(filters, index) {
  const groups = filters.groups;
  if (groups !== void 0 && groups !== null) {
    if (!Array.isArray(groups)) return `flags[${index}].filters.groups is not an array`;
    for (let g = 0; g < groups.length; g++) {
      const group = groups[g];
      if (typeof group !== "object" || group === null || Array.isArray(group)) return `flags[${index}].filters.groups[${g}] is not an object`;
      if (group.properties !== void 0 && group.properties !== null && !Array.isArray(group.properties)) {
        return `flags[${index}].filters.groups[${g}].properties is not an array`;
      }
    }
  }
  const multivariate = filters.multivariate;
  const variants = typeof multivariate === "object" && multivariate !== null && !Array.isArray(multivariate) ? multivariate.variants : void 0;
  if (variants !== void 0 && variants !== null && !Array.isArray(variants)) {
    return `flags[${index}].filters.multivariate.variants is not an array`;
  }
  const payloads = filters.payloads;
  if (payloads !== void 0 && payloads !== null && (typeof payloads !== "object" || Array.isArray(payloads))) {
    return `flags[${index}].filters.payloads is not an object`;
  }
  return null;
}
function parseFlag(item, index) {
  if (typeof item !== "object" || item === null || Array.isArray(item)) return `flags[${index}] is not an object`;
  const value = item;
  const { id, key, active, deleted, filters } = value;
  if (typeof key !== "string" || key === "") return `flags[${index}].key is not a non-empty string`;
  if (id !== void 0 && id !== null && !Number.isInteger(id)) return `flags[${index}].id is not an integer`;
  if (typeof active !== "boolean") return `flags[${index}].active is not a boolean`;
  if (deleted !== void 0 && deleted !== null && typeof deleted !== "boolean") return `flags[${index}].deleted is not a boolean`;
  let checked = {};
  if (filters !== void 0 && filters !== null) {
    if (typeof filters !== "object" || Array.isArray(filters)) return `flags[${index}].filters is not an object`;
    checked = filters;
    const problem = checkFilters(checked, index);
    if (problem !== null) return problem;
  }
  return {
    id: typeof id === "number" ? id : null,
    key,
    active,
    deleted: deleted === true,
    filters: checked,
    raw: value
  };
}
function validateDefinitions(value) {
  if (!isObject(value)) return invalid("body is not a JSON object");
  if (!Array.isArray(value.flags)) return invalid('body has no "flags" array');
  const flags = [];
  for (let index = 0; index < value.flags.length; index++) {
    const flag = parseFlag(value.flags[index], index);
    if (typeof flag === "string") return invalid(flag);
    flags.push(flag);
  }
  const mapping = value.group_type_mapping ?? {};
  if (!isObject(mapping)) return invalid('"group_type_mapping" is not an object');
  for (const [index, name] of Object.entries(mapping)) {
    if (typeof name !== "string") return invalid(`group_type_mapping["${index}"] is not a string`);
  }
  const cohorts = value.cohorts ?? {};
  if (!isObject(cohorts)) return invalid('"cohorts" is not an object');
  for (const [id, cohort] of Object.entries(cohorts)) {
    if (!isObject(cohort)) return invalid(`cohorts["${id}"] is not an object`);
  }
  return { ok: true, value: { flags, groupTypeMapping: mapping, cohorts, parsed: value } };
}
function parseDefinitions(body) {
  let text;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(body);
  } catch (error) {
    return invalid(`body is not valid JSON: ${error.message}`);
  }
  return parseDefinitionsText(text);
}
function parseDefinitionsText(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return invalid(`body is not valid JSON: ${error.message}`);
  }
  return validateDefinitions(value);
}

export {
  validateDefinitions,
  parseDefinitions,
  parseDefinitionsText,
  takeParsedDefinitions,
  etagMatches,
  createVariant,
  quotaRecoveryEtag,
  emptyProject,
  withChanges
};
//# sourceMappingURL=chunk-YXIUFDAM.js.map
