// Records every flag call posthog-node's own tests make, with what the SDK decided.
// Loaded by jest (setupFilesAfterEnv) inside a checkout of posthog-js packages/node; appends one JSON
// line per outermost public flag call to $SDK_CASES_OUT. extract.ts turns the lines into the fixture.
// A recorded value is the SDK's answer in a passing test; `asserted` says whether the test checks it.
'use strict'
const fs = require('node:fs')
const path = require('node:path')
const { AsyncLocalStorage } = require('node:async_hooks')
const ts = require(process.env.SDK_CASES_TYPESCRIPT)
const { PostHog } = require('@/entrypoints/index.node')
const { FeatureFlagsPoller } = require('@/extensions/feature-flags/feature-flags')

const OUT = process.env.SDK_CASES_OUT
const INCONCLUSIVE = '__inconclusive__'
const PUBLIC = [
  'getFeatureFlag',
  'isFeatureEnabled',
  'getFeatureFlagPayload',
  'getFeatureFlagResult',
  'getAllFlags',
  'getAllFlagsAndPayloads',
  'evaluateFlags',
]
const context = new AsyncLocalStorage()
const sources = new Map()

function plain(value) {
  try {
    return value === undefined ? null : JSON.parse(JSON.stringify(value))
  } catch {
    return null
  }
}

function callSite() {
  const stack = new Error().stack.split('\n')
  for (const line of stack) {
    const match = /\((\/[^)]*__tests__\/[^/)]*\.spec\.ts):(\d+):(\d+)\)/.exec(line) ?? /at (\/[^ ]*__tests__\/[^/ ]*\.spec\.ts):(\d+):(\d+)/.exec(line)
    if (match) return { file: match[1], line: Number(match[2]), column: Number(match[3]) }
  }
  return undefined
}

function sourceOf(file) {
  if (!sources.has(file)) {
    sources.set(file, ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true))
  }
  return sources.get(file)
}

function holdsExpect(node) {
  let found = false
  const visit = (n) => {
    if (found) return
    if (ts.isCallExpression(n) && ts.isIdentifier(n.expression) && n.expression.text === 'expect') found = true
    else ts.forEachChild(n, visit)
  }
  visit(node)
  return found
}

// Whether the statement holding the call asserts on it, directly or through a variable it declares.
function assertion(site) {
  const source = sourceOf(site.file)
  const pos = source.getPositionOfLineAndCharacter(site.line - 1, site.column - 1)
  let statement
  let block
  const visit = (n) => {
    if (pos < n.getStart(source) || pos >= n.getEnd()) return
    if (ts.isBlock(n)) block = n
    if (ts.isExpressionStatement(n) || ts.isVariableStatement(n) || ts.isReturnStatement(n)) statement = n
    ts.forEachChild(n, visit)
  }
  visit(source)
  if (!statement) return { asserted: null, literals: [] }
  const asserted = assertedBy(statement, block, source)
  return { ...asserted, test: testName(statement) }
}

// The it()/describe() titles around a statement: the test the call belongs to even when the test does not
// await it (posthog-node's consistency tests call the SDK in an un-awaited forEach).
function testName(node) {
  const titles = []
  for (let n = node; n; n = n.parent) {
    if (ts.isCallExpression(n) && ts.isIdentifier(n.expression) && ['it', 'test', 'describe'].includes(n.expression.text)) {
      const first = n.arguments[0]
      if (first && (ts.isStringLiteral(first) || ts.isNoSubstitutionTemplateLiteral(first))) titles.unshift(first.text)
    }
  }
  return titles.join(' ')
}

function assertedBy(statement, block, source) {
  if (holdsExpect(statement)) return { asserted: 'direct', literals: [] }
  const names = []
  if (ts.isVariableStatement(statement)) {
    for (const d of statement.declarationList.declarations) if (ts.isIdentifier(d.name)) names.push(d.name.text)
  } else if (ts.isExpressionStatement(statement) && ts.isBinaryExpression(statement.expression.expression ?? statement.expression)) {
    const e = statement.expression.expression ?? statement.expression
    if (ts.isIdentifier(e.left)) names.push(e.left.text)
  }
  if (!names.length || !block) return { asserted: null, literals: [] }
  const literals = new Set()
  let found = false
  for (const later of block.statements) {
    if (later.getStart(source) <= statement.getEnd() || !holdsExpect(later)) continue
    let refers = false
    const visit2 = (n) => {
      if (ts.isIdentifier(n) && names.includes(n.text)) refers = true
      if (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) literals.add(n.text)
      ts.forEachChild(n, visit2)
    }
    const before = new Set(literals)
    visit2(later)
    if (refers) found = true
    else for (const l of literals) if (!before.has(l)) literals.delete(l)
  }
  return found ? { asserted: 'via-variable', literals: [...literals].sort() } : { asserted: null, literals: [] }
}

function flagsCalls() {
  const calls = globalThis.fetch?.mock?.calls ?? []
  return calls.filter((c) => String(c[0]).includes('/flags/?')).length
}

function resultValue(method, result) {
  if (method === 'evaluateFlags') {
    const out = {}
    for (const [key, entry] of Object.entries(result?._flags ?? {})) {
      out[key] = { enabled: entry.enabled ?? null, variant: entry.variant ?? null, payload: plain(entry.payload) }
    }
    return out
  }
  if (method === 'getFeatureFlagResult') {
    return result === undefined ? null : { enabled: result.enabled, variant: result.variant ?? null, payload: plain(result.payload) }
  }
  return plain(result)
}

function ownerOf(proto, name) {
  for (let p = proto; p; p = Object.getPrototypeOf(p)) if (Object.prototype.hasOwnProperty.call(p, name)) return p
  return undefined
}

for (const method of PUBLIC) {
  const owner = ownerOf(PostHog.prototype, method)
  const original = owner[method]
  owner[method] = async function (...args) {
    if (context.getStore()) return original.apply(this, args)
    const site = callSite()
    const state = { local: {} }
    const before = flagsCalls()
    let result
    let error
    try {
      result = await context.run(state, () => original.apply(this, args))
    } catch (e) {
      error = e
    }
    try {
      record(this, method, args, result, error, flagsCalls() - before, state.local, site)
    } catch (e) {
      fs.appendFileSync(OUT, JSON.stringify({ test: expect.getState().currentTestName, recordError: String(e) }) + '\n')
    }
    if (error) throw error
    return result
  }
}

const computeValue = FeatureFlagsPoller.prototype.computeFlagValueLocally
FeatureFlagsPoller.prototype.computeFlagValueLocally = async function (flag, ...rest) {
  const state = context.getStore()
  try {
    const value = await computeValue.call(this, flag, ...rest)
    if (state) state.local[flag.key] = plain(value)
    return value
  } catch (e) {
    if (state) state.local[flag.key] = INCONCLUSIVE
    throw e
  }
}

function record(client, method, args, result, error, remoteCalls, local, site) {
  if (!site) return
  const { asserted, literals, test } = assertion(site)
  const call = { method }
  let options
  if (['getAllFlags', 'getAllFlagsAndPayloads', 'evaluateFlags'].includes(method)) {
    if (typeof args[0] === 'string') {
      call.distinctId = args[0]
      options = args[1]
    } else options = args[0]
  } else {
    call.key = args[0]
    call.distinctId = args[1]
    options = method === 'getFeatureFlagPayload' ? args[3] : args[2]
    if (method === 'getFeatureFlagPayload' && args[2] !== undefined) call.matchValue = args[2]
  }
  Object.assign(call, options ?? {})
  const poller = client.featureFlagsPoller
  const entry = {
    file: path.relative(process.cwd(), site.file),
    test: test ?? expect.getState().currentTestName,
    line: site.line,
    asserted,
    assertLiterals: literals,
    call: plain(call),
    flags: plain(poller?.featureFlags ?? null),
    cohorts: plain(poller?.cohorts ?? null),
    groupTypeMapping: plain(poller?.groupTypeMapping ?? null),
    hasPersonalKey: Boolean(poller),
    remoteCalls,
    local,
    error: error ? String(error) : null,
    result: resultValue(method, result),
    now: new Date().toISOString(),
  }
  fs.appendFileSync(OUT, JSON.stringify(entry) + '\n')
}

afterEach(() => {
  const { currentTestName, assertionCalls } = expect.getState()
  fs.appendFileSync(OUT, JSON.stringify({ test: currentTestName, assertionCalls }) + '\n')
})
