/**
 * Static checks of the Helm chart (issue 7): Helm cannot be installed on these machines, so the chart is checked
 * on its text. Each `find…`/`check…` function returns one problem string per broken rule (empty when all is
 * well), so a test can show that every check fails on input broken in exactly that way.
 */
import { isMap, isScalar, parseDocument, type Node as YamlNode } from 'yaml';

/** A plain JSON-like object (what YAML mappings parse to). */
export type Tree = { [key: string]: unknown };

const isTree = (value: unknown): value is Tree => typeof value === 'object' && value !== null && !Array.isArray(value);

/** One Go-template action: its text between `{{` and `}}` (trim markers dropped), its 1-based line and offsets. */
export interface Action {
  readonly text: string;
  readonly line: number;
  /** Offset of its `{{`. */
  readonly start: number;
  /** Offset just past its `}}`. */
  readonly end: number;
}

/**
 * The actions of a Go template, found as Go's lexer finds them: an action ends at the first `}}` outside a quoted
 * ("…") or raw (`…`) string, so `{{ "}}" }}` and `{{`{{ $labels.pod }}`}}` are single actions. Comments
 * (`{{/* … *\/}}`, which may hold any text) are skipped.
 */
export function templateActions(text: string): Action[] {
  const actions: Action[] = [];
  let at = 0;
  while (true) {
    const start = text.indexOf('{{', at);
    if (start < 0) return actions;
    const comment = /^\{\{-?\s*\/\*/.exec(text.slice(start, start + 8));
    if (comment) {
      const close = text.indexOf('*/', start + comment[0].length);
      const end = text.indexOf('}}', close < 0 ? text.length : close);
      at = end < 0 ? text.length : end + 2;
      continue;
    }
    let i = start + 2;
    let quote: string | null = null;
    while (i < text.length) {
      const c = text[i] as string;
      if (quote) {
        if (c === '\\' && quote === '"') i++;
        else if (c === quote) quote = null;
      } else if (c === '"' || c === '`') {
        quote = c;
      } else if (c === '}' && text[i + 1] === '}') {
        break;
      }
      i++;
    }
    const body = text.slice(start + 2, i).replace(/^-\s/, ' ').replace(/\s-$/, ' ').trim();
    actions.push({ text: body, line: text.slice(0, start).split('\n').length, start, end: i + 2 });
    at = i + 2;
  }
}

/** A `.Values` path used in a template, e.g. `image.tag` for `.Values.image.tag` or `$.Values.image.tag`. */
export interface ValuesPath {
  readonly path: string;
  readonly line: number;
}

/**
 * Every literal `.Values.a.b` / `$.Values.a.b` path inside the actions of a template. Paths reached through a
 * variable or the dot of `with`/`range` cannot be resolved statically and are not reported.
 */
export function valuesPaths(template: string): ValuesPath[] {
  const found: ValuesPath[] = [];
  for (const action of templateActions(template)) {
    const code = action.text.replace(/"(?:[^"\\]|\\.)*"|`[^`]*`/g, '""');
    for (const match of code.matchAll(/(?<![\w$)\]])\$?\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)/g)) {
      found.push({ path: (match[1] as string).slice(1), line: action.line });
    }
  }
  return found;
}

/** True when `path` (dot-separated) names a key present in `values`, mapping by mapping. */
export function hasPath(values: unknown, path: string): boolean {
  let node: unknown = values;
  for (const key of path.split('.')) {
    if (!isTree(node) || !Object.hasOwn(node, key)) return false;
    node = node[key];
  }
  return true;
}

/** Problems: template paths that values.yaml does not define. */
export function findUndefinedPaths(templates: Record<string, string>, values: Tree): string[] {
  const problems: string[] = [];
  for (const [file, text] of Object.entries(templates)) {
    for (const { path, line } of valuesPaths(text)) {
      if (!hasPath(values, path)) problems.push(`${file}:${line}: .Values.${path} is not in values.yaml`);
    }
  }
  return problems;
}

/** The key paths of a values tree down to scalars, lists and empty or free-form mappings (`freeForm` paths). */
export function leafPaths(values: Tree, freeForm: ReadonlySet<string>, prefix = ''): string[] {
  const paths: string[] = [];
  for (const [key, value] of Object.entries(values)) {
    const path = prefix === '' ? key : `${prefix}.${key}`;
    if (isTree(value) && Object.keys(value).length > 0 && !freeForm.has(path)) paths.push(...leafPaths(value, freeForm, path));
    else paths.push(path);
  }
  return paths;
}

/** Problems: values keys no template reads (neither the key itself nor a mapping above it is used). */
export function findUnusedValues(templates: Record<string, string>, values: Tree, freeForm: ReadonlySet<string>): string[] {
  const used = new Set(Object.values(templates).flatMap((text) => valuesPaths(text).map((p) => p.path)));
  const isUsed = (path: string): boolean => {
    const parts = path.split('.');
    return parts.some((_, i) => used.has(parts.slice(0, i + 1).join('.')));
  };
  return leafPaths(values, freeForm)
    .filter((path) => !isUsed(path))
    .map((path) => `values.yaml: ${path} is read by no template`);
}

/** Problems: keys of a values.yaml with no comment of their own (above the key, or at the end of its line). */
export function findUncommentedKeys(text: string): string[] {
  const problems: string[] = [];
  const walk = (node: unknown, path: string): void => {
    if (!isMap(node)) return;
    node.items.forEach((pair, index) => {
      const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
      const keyPath = path === '' ? key : `${path}.${key}`;
      const keyNode = pair.key as YamlNode | null;
      const valueNode = pair.value as YamlNode | null;
      // The yaml parser puts the comment above a mapping's first key on the mapping itself.
      const commented = Boolean(keyNode?.commentBefore) || Boolean(valueNode?.comment) || (index === 0 && Boolean(node.commentBefore));
      if (!commented) problems.push(`values.yaml: ${keyPath} has no comment`);
      walk(pair.value, keyPath);
    });
  };
  walk(parseDocument(text).contents, '');
  return problems;
}

/**
 * Helm's merge of a values file over a chart's defaults: mappings merge key by key, anything else replaces,
 * and null deletes the key.
 */
export function coalesce(defaults: Tree, overrides: Tree): Tree {
  const merged: Tree = { ...defaults };
  for (const [key, value] of Object.entries(overrides)) {
    const base = merged[key];
    if (value === null) delete merged[key];
    else if (isTree(value) && isTree(base)) merged[key] = coalesce(base, value);
    else merged[key] = value;
  }
  return merged;
}

/** The `expr:` block scalars of a PrometheusRule template, with their alert names. */
export function alertExprs(template: string): Array<{ alert: string; expr: string }> {
  const found: Array<{ alert: string; expr: string }> = [];
  const lines = template.split('\n');
  let alert = '';
  lines.forEach((line, index) => {
    const name = /^\s*- alert:\s*(\S+)/.exec(line);
    if (name) alert = name[1] as string;
    const expr = /^(\s*)expr:\s*\|-?\s*$/.exec(line);
    if (!expr) return;
    const indent = (expr[1] as string).length;
    const body: string[] = [];
    for (const next of lines.slice(index + 1)) {
      if (next.trim() !== '' && next.length - next.trimStart().length <= indent) break;
      body.push(next);
    }
    found.push({ alert, expr: body.join('\n') });
  });
  return found;
}

const promqlWords = new Set(['and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'inf', 'nan']);
/**
 * Labels Prometheus (or the Prometheus Operator) puts on every scraped series, and flag_sidecar_instance, which the
 * chart's PodMonitor and ServiceMonitor set (<release namespace>/<release name>).
 */
const targetLabels = ['namespace', 'pod', 'job', 'instance', 'container', 'service', 'endpoint', 'prometheus', 'flag_sidecar_instance'];

/** The metric names and label names one PromQL expression uses (Go-template actions and Grafana `$vars` removed). */
export function promqlNames(expr: string): { metrics: string[]; labels: string[] } {
  let text = expr.replace(/\{\{[\s\S]*?\}\}/g, ' ').replace(/"(?:[^"\\]|\\.)*"/g, '""');
  const labels: string[] = [];
  text = text.replace(/\{([^{}]*)\}/g, (_, matchers: string) => {
    for (const m of matchers.matchAll(/([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)/g)) labels.push(m[1] as string);
    return ' ';
  });
  text = text.replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g, (_, _word: string, list: string) => {
    labels.push(...list.split(',').map((l) => l.trim()).filter(Boolean));
    return ' ';
  });
  text = text.replace(/\[[^\]]*\]/g, ' ').replace(/\$\w+/g, ' ');
  const metrics: string[] = [];
  for (const m of text.matchAll(/(?<![\w.])([A-Za-z_:][\w:]*)(\s*\()?/g)) {
    if (m[2] !== undefined || promqlWords.has((m[1] as string).toLowerCase())) continue;
    metrics.push(m[1] as string);
  }
  return { metrics, labels };
}

/** What the sidecar exposes: each series name with the label names it can carry. */
export type MetricCatalog = ReadonlyMap<string, ReadonlySet<string>>;

/** Problems: metric names the catalog does not have, or labels none of the expression's metrics carries. */
export function checkPromql(where: string, expr: string, catalog: MetricCatalog): string[] {
  const { metrics, labels } = promqlNames(expr);
  if (metrics.length === 0) return [`${where}: references no metric`];
  const problems = metrics.filter((m) => !catalog.has(m)).map((m) => `${where}: ${m} is not a metric the sidecar exposes`);
  const known = new Set([...targetLabels, ...metrics.flatMap((m) => [...(catalog.get(m) ?? [])])]);
  for (const label of labels) if (!known.has(label)) problems.push(`${where}: label ${label} is on none of ${metrics.join(', ')}`);
  return problems;
}

/** Names of the `define`d templates in a set of template files. */
export function definedTemplates(templates: Record<string, string>): Set<string> {
  const names = new Set<string>();
  for (const text of Object.values(templates)) {
    for (const action of templateActions(text)) {
      const m = /^define\s+"([^"]+)"/.exec(action.text);
      if (m) names.add(m[1] as string);
    }
  }
  return names;
}

/** Problems: `include "x"` / `template "x"` calls whose template no file defines. */
export function findUndefinedIncludes(templates: Record<string, string>, defined: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  for (const [file, text] of Object.entries(templates)) {
    for (const action of templateActions(text)) {
      for (const m of action.text.matchAll(/\b(?:include|template)\s+"([^"]+)"/g)) {
        if (!defined.has(m[1] as string)) problems.push(`${file}:${action.line}: template "${m[1]}" is not defined`);
      }
    }
  }
  return problems;
}

/** The body of one `define` block: the text between its action and its matching `end`, or null. */
export function defineBody(text: string, name: string): string | null {
  const actions = templateActions(text);
  const at = actions.findIndex((a) => a.text === `define "${name}"`);
  if (at < 0) return null;
  let depth = 0;
  for (const action of actions.slice(at + 1)) {
    if (/^(if|with|range|block|define)\b/.test(action.text)) depth++;
    else if (action.text === 'end' && depth-- === 0) return text.slice((actions[at] as Action).end, action.start);
  }
  return null;
}

/**
 * Problems: metric selectors of a PromQL expression that lack `required` (text that must appear between the
 * selector's braces, e.g. `{{ $s }}` in a rule template or `flag_sidecar_instance=~"$release"` in the dashboard).
 * A metric with no braces at all lacks it too. Go-template actions may sit inside the braces.
 */
export function findUnscopedSelectors(where: string, expr: string, required: string): string[] {
  const actions: string[] = [];
  // Actions become brace-free markers (the same action, the same marker), so each selector is one `{…}` with no
  // nested braces.
  const marker = (action: string): string => {
    const at = actions.indexOf(action);
    return `\u0001${at < 0 ? actions.push(action) - 1 : at}\u0002`;
  };
  const hide = (text: string): string => text.replace(/\{\{[\s\S]*?\}\}/g, marker);
  const show = (text: string): string => text.replace(/\u0001(\d+)\u0002/g, (_, i: string) => actions[Number(i)] as string);
  const want = hide(required);
  let text = hide(expr);
  text = text.replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g, (m) => ' '.repeat(m.length));
  const problems: string[] = [];
  const token = /"(?:[^"\\]|\\.)*"|\{[^{}]*\}|\[[^\]]*\]|(?<![\w.\u0001])([A-Za-z_:][\w:]*)(\s*\()?/g;
  for (const m of text.matchAll(token)) {
    const name = m[1];
    if (name === undefined || m[2] !== undefined || promqlWords.has(name.toLowerCase())) continue;
    const rest = text.slice((m.index ?? 0) + name.length);
    const selector = /^\s*(\{[^{}]*\})/.exec(rest)?.[1];
    if (selector === undefined || !selector.includes(want)) {
      problems.push(`${where}: ${name}${selector === undefined ? '' : show(selector)} lacks ${required}`);
    }
  }
  return problems;
}

/** Fields whose values are strings in Kubernetes objects: rendered from values, they must be quoted. */
const stringFields = new Set(['name', 'secretName', 'key', 'path', 'mountPath', 'subPath', 'claimName', 'serviceAccountName', 'priorityClassName']);

/**
 * Problems: lines `<string field>: {{ … }}` whose whole value is one action that renders a value (a `.Values`
 * path, `.` inside with/range, or a `$variable`) without `| quote`. Unquoted, a value like `true`, `1234` or
 * `0777` would reach Kubernetes as a bool or a number.
 */
export function findUnquotedStrings(templates: Record<string, string>): string[] {
  const problems: string[] = [];
  for (const [file, text] of Object.entries(templates)) {
    text.split('\n').forEach((line, index) => {
      const m = /^\s*(?:-\s+)?([A-Za-z]+):\s*(\{\{.*\}\})\s*$/.exec(line);
      if (!m || !stringFields.has(m[1] as string)) return;
      const value = m[2] as string;
      const actions = templateActions(value);
      const only = actions[0];
      if (actions.length !== 1 || !only || only.start !== 0 || only.end !== value.length) return;
      const code = only.text;
      const readsValue = /(^|[^\w$])\$?\.Values\b/.test(code) || code === '.' || /^\$\w+$/.test(code);
      if (!readsValue || /\|\s*(quote|squote|toJson)$/.test(code)) return;
      problems.push(`${file}:${index + 1}: ${m[1]}: {{ ${code} }} is not quoted`);
    });
  }
  return problems;
}

/**
 * Problems: template actions inside a YAML comment (after a `#` that starts one). Helm still runs them, so an
 * `include` there renders its text into the comment's line, or past it once it spans several lines.
 */
export function findCommentedActions(file: string, text: string): string[] {
  const problems: string[] = [];
  for (const action of templateActions(text)) {
    const lineStart = text.lastIndexOf('\n', action.start - 1) + 1;
    const before = text
      .slice(lineStart, action.start)
      .replace(/\{\{[\s\S]*?\}\}/g, ' ')
      .replace(/"(?:[^"\\]|\\.)*"|'[^']*'/g, '""');
    if (/(^|\s)#/.test(before)) problems.push(`${file}:${action.line}: {{ ${action.text} }} is inside a YAML comment`);
  }
  return problems;
}

/** The fenced code blocks of a Markdown text in one language (```yaml … ```), without their fences. */
export function codeBlocks(markdown: string, lang: string): string[] {
  const blocks: string[] = [];
  const fence = new RegExp('^([ \\t]*)```' + lang + '[ \\t]*\\n([\\s\\S]*?)^\\1```[ \\t]*$', 'gm');
  for (const m of markdown.matchAll(fence)) {
    const indent = (m[1] as string).length;
    blocks.push((m[2] as string).split('\n').map((l) => l.slice(Math.min(indent, l.length - l.trimStart().length))).join('\n'));
  }
  return blocks;
}

/**
 * The lines of an app chart's pod template that bring in the sidecar: the `$fs` dict, every `include … $fs`
 * and the `with` block's `. | nindent` line, trimmed. Text that shows such a template (NOTES.txt escapes its
 * actions as {{ "{{-" }} … {{ "}}" }}) is unescaped first.
 */
export function sidecarIncludeLines(text: string): string[] {
  return text
    .replaceAll('{{ "{{-" }}', '{{-')
    .replaceAll('{{ "}}" }}', '}}')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => /\$fs\b/.test(l) || /^\{\{- \. \| nindent \d+ \}\}$/.test(l));
}
