/**
 * The request listener over a real socket (port 0): what it remembers per keep-alive connection (the last request
 * line's route and query) never answers a different request, handlers answering later (`later` + ctx.answer) are
 * written like the others, request bodies are read whole however they arrive, and a reply's flat header list is
 * written as its header object would be.
 */
import { connect, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/errors.js';
import { readBody, readBodyThen } from '../../src/http/body.js';
import { reusableReply, valueReply } from '../../src/http/respond.js';
import { createRouter, later, type Route } from '../../src/http/router.js';
import { startHttpServer, type RunningServer } from '../../src/http/server.js';
import { createLogger } from '../../src/logger.js';

let server: RunningServer | null = null;
afterEach(async () => {
  await server?.close(100);
  server = null;
});

const echo = (name: string): Route['handler'] => (ctx) => valueReply(200, { route: name, path: ctx.path, query: [...ctx.query], params: ctx.params });

async function start(limit = 64, logger = createLogger('silent')): Promise<RunningServer> {
  const routes: Route[] = [
    { name: 'item', methods: ['GET'], template: '/items/:id', handler: echo('item') },
    { name: 'item_update', methods: ['PATCH'], template: '/items/:id', handler: echo('item_update') },
    { name: 'list', methods: ['GET'], template: '/items', handler: echo('list') },
    {
      name: 'body',
      methods: ['POST'],
      template: '/body',
      handler: (ctx) => {
        readBodyThen(ctx.request, limit, (error, body) => {
          if (error !== null) return ctx.answerError(error);
          // Answer with a promise half the time, to cover both ways of answering later.
          const reply = valueReply(200, { bytes: (body as Buffer).toString('latin1') });
          ctx.answer(body?.length === 3 ? Promise.resolve(reply) : reply);
        });
        return later;
      },
    },
    {
      name: 'twice',
      methods: ['GET'],
      template: '/twice',
      handler: (ctx) => {
        ctx.answer(valueReply(200, { first: true }));
        ctx.answer(valueReply(200, { second: true }));
        ctx.answerError(new Error('too late'));
        return later;
      },
    },
    {
      name: 'later_error',
      methods: ['GET'],
      template: '/later-error',
      handler: (ctx) => {
        setImmediate(() => ctx.answerError(new ApiError(409, 'invalid_request', 'conflict', 'Not now.')));
        return later;
      },
    },
  ];
  server = await startHttpServer({ match: createRouter(routes), logger }, '127.0.0.1', 0);
  return server;
}

/** A raw keep-alive connection: send exact bytes (split as given), read one response at a time. */
async function open(url: string): Promise<{ send(parts: string[], pauseMs?: number): Promise<{ status: number; body: string }>; socket: Socket }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  await new Promise((resolve) => socket.once('connect', resolve));
  let buffer = '';
  let waiting: (() => void) | null = null;
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    buffer += chunk;
    waiting?.();
  });
  async function response(): Promise<{ status: number; body: string }> {
    for (;;) {
      const end = buffer.indexOf('\r\n\r\n');
      if (end >= 0) {
        const head = buffer.slice(0, end);
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buffer.length >= end + 4 + length) {
          const body = buffer.slice(end + 4, end + 4 + length);
          buffer = buffer.slice(end + 4 + length);
          return { status: Number(head.slice(9, 12)), body };
        }
      }
      await new Promise<void>((resolve) => (waiting = resolve));
    }
  }
  return {
    socket,
    async send(parts, pauseMs = 0) {
      for (const part of parts) {
        socket.write(part);
        if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
      }
      return response();
    },
  };
}

const get = (path: string, method = 'GET'): string => `${method} ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;
const post = (body: string, length: number | null = body.length): string =>
  `POST /body HTTP/1.1\r\nHost: x\r\n${length === null ? 'Transfer-Encoding: chunked' : `Content-Length: ${length}`}\r\n\r\n`;

describe('per-connection request memo', () => {
  it('answers each request line on one connection with its own route, method and query', async () => {
    const { url } = await start();
    const c = await open(url);
    const cases: Array<[string, number, unknown]> = [
      [get('/items/7'), 200, { route: 'item', path: '/items/7', query: [], params: ['7'] }],
      [get('/items/7'), 200, { route: 'item', path: '/items/7', query: [], params: ['7'] }],
      [get('/items/7', 'PATCH'), 200, { route: 'item_update', path: '/items/7', query: [], params: ['7'] }],
      [get('/items/7', 'DELETE'), 405, null],
      [get('/items/7'), 200, { route: 'item', path: '/items/7', query: [], params: ['7'] }],
      [get('/items/8?a=1'), 200, { route: 'item', path: '/items/8', query: [['a', '1']], params: ['8'] }],
      [get('/items/8?a=2'), 200, { route: 'item', path: '/items/8', query: [['a', '2']], params: ['8'] }],
      [get('/items/8?personal_api_key=phx_secret'), 200, { route: 'item', path: '/items/8', query: [['personal_api_key', 'phx_secret']], params: ['8'] }],
      [get('/items/8?personal_api_key=phx_other'), 200, { route: 'item', path: '/items/8', query: [['personal_api_key', 'phx_other']], params: ['8'] }],
      [get('/items/8?a=2'), 200, { route: 'item', path: '/items/8', query: [['a', '2']], params: ['8'] }],
      [get('/items'), 200, { route: 'list', path: '/items', query: [], params: [] }],
      [get('/nowhere'), 404, null],
      [get('/items/%E0%A4%A'), 404, null],
      [get('/items'), 200, { route: 'list', path: '/items', query: [], params: [] }],
    ];
    for (const [request, status, body] of cases) {
      const answer = await c.send([request]);
      expect([request, answer.status]).toEqual([request, status]);
      if (body !== null) expect(JSON.parse(answer.body)).toEqual(body);
    }
    // Every request taken is counted (the startup collections wait for a quiet second by it), refused ones too.
    expect(server?.requests()).toBe(cases.length);
    c.socket.destroy();
  });
});

describe('answering later', () => {
  it('writes the first answer only; the connection goes on', async () => {
    const { url } = await start();
    const c = await open(url);
    expect(await c.send([get('/twice')])).toEqual({ status: 200, body: JSON.stringify({ first: true }) });
    expect((await c.send([get('/items')])).status).toBe(200);
    c.socket.destroy();
  });

  it('writes an error given to answerError as upstream-style JSON', async () => {
    const { url } = await start();
    const c = await open(url);
    const answer = await c.send([get('/later-error')]);
    expect([answer.status, JSON.parse(answer.body)]).toEqual([409, { type: 'invalid_request', code: 'conflict', detail: 'Not now.', attr: null }]);
    c.socket.destroy();
  });
});

describe('request bodies', () => {
  it('reads a body whole however it is split, declared or chunked; refuses one past the limit', async () => {
    const { url } = await start(8);
    const c = await open(url);
    // Declared length, in one write with the headers, or a byte at a time after them.
    expect(await c.send([post('abc') + 'abc'])).toEqual({ status: 200, body: JSON.stringify({ bytes: 'abc' }) });
    expect(await c.send([post('abcdefg'), 'a', 'b', 'cdef', 'g'], 5)).toEqual({ status: 200, body: JSON.stringify({ bytes: 'abcdefg' }) });
    expect(await c.send([post('')])).toEqual({ status: 200, body: JSON.stringify({ bytes: '' }) });
    // Chunked: complete at the last chunk.
    expect(await c.send([post('', null), '3\r\nabc\r\n', '2\r\nde\r\n', '0\r\n\r\n'], 5)).toEqual({ status: 200, body: JSON.stringify({ bytes: 'abcde' }) });
    // Past the limit: declared (decided before reading), or found while reading a chunked body.
    expect((await c.send([post('123456789') + '123456789'])).status).toBe(413);
    c.socket.destroy();
    const d = await open(url);
    expect((await d.send([post('', null), '5\r\n12345\r\n', '5\r\n67890\r\n', '0\r\n\r\n'], 5)).status).toBe(413);
    d.socket.destroy();
  });

  it('a request cut off mid-body is dropped quietly, and the next connection is served', async () => {
    // Nobody is left to answer: nothing is logged as a failed request (and nothing escapes as an 'error' event).
    const logged: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logged.push(chunk.toString());
        done();
      },
    });
    const { url } = await start(64, createLogger('debug', sink));
    for (const cut of [post('abcdefgh') + 'abc', post('', null) + '3\r\nabc\r\n']) {
      const c = await open(url);
      c.socket.write(cut);
      await new Promise((resolve) => setTimeout(resolve, 20));
      c.socket.destroy(); // no 'error' listener on the request: node emits nothing, nothing escapes
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
    const d = await open(url);
    expect(await d.send([post('abc') + 'abc'])).toEqual({ status: 200, body: JSON.stringify({ bytes: 'abc' }) });
    d.socket.destroy();
    expect(logged.filter((line) => line.includes('"level":"error"'))).toEqual([]);
  });

  it('readBody rejects with the stream error of a request cut off mid-body', async () => {
    const { PassThrough } = await import('node:stream');
    const request = Object.assign(new PassThrough(), { headers: { 'content-length': '10' } });
    const read = readBody(request as never, 100);
    request.write('12345');
    request.destroy(new Error('aborted'));
    await expect(read).rejects.toThrow('aborted');
  });
});

describe('replies written from a header list', () => {
  it('send the same status, headers and body as the same reply with a header object, HEAD included', async () => {
    const body = Buffer.from('{"ok":true}');
    const headers = { 'content-type': 'application/json', 'content-length': String(body.length), etag: 'W/"1"', 'x-flag-sidecar-cache': 'hit', age: '3', vary: 'Accept, Authorization' };
    const routes: Route[] = [
      { name: 'plain', methods: ['GET', 'HEAD'], template: '/plain', handler: () => ({ status: 203, headers, body }) },
      { name: 'listed', methods: ['GET', 'HEAD'], template: '/listed', handler: () => reusableReply(203, headers, body) },
      { name: 'empty', methods: ['GET'], template: '/empty', handler: () => reusableReply(304, { etag: 'W/"1"', age: '0' }, null) },
      // A reply spread from a listed one with a header added: the added header must be written.
      { name: 'spread', methods: ['GET', 'HEAD'], template: '/spread', handler: () => ({ ...listed, headers: { ...listed.headers, 'x-extra': 'yes' } }) },
    ];
    const listed = reusableReply(203, headers, body);
    expect(() => {
      (listed.headers as Record<string, string>).age = '4'; // listed headers are frozen: they cannot drift from their list
    }).toThrow(TypeError);
    server = await startHttpServer({ match: createRouter(routes), logger: createLogger('silent') }, '127.0.0.1', 0);
    const seen = async (path: string, method: string) => {
      const response = await fetch(`${server?.url}${path}`, { method });
      const all = [...response.headers].filter(([name]) => name !== 'date');
      return { status: response.status, headers: all, body: await response.text() };
    };
    for (const method of ['GET', 'HEAD']) {
      const plain = await seen('/plain', method);
      expect(plain.headers).toContainEqual(['vary', 'Accept, Authorization']);
      expect(await seen('/listed', method)).toEqual(plain);
      const spread = await seen('/spread', method);
      expect(spread.headers).toContainEqual(['x-extra', 'yes']);
      expect(spread.headers.filter(([name]) => name !== 'x-extra')).toEqual(plain.headers);
    }
    const empty = await seen('/empty', 'GET');
    expect(empty.status).toBe(304);
    expect(empty.headers).toContainEqual(['etag', 'W/"1"']);
  });
});
