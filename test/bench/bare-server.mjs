// The benchmark's reference: a bare node:http server returning the same response as the sidecar (body bytes and
// the same header set), with no routing, auth, metrics or clock. With `read-body`, it reads the request body
// ('data' / 'end') before answering, as any server answering a POST by its body must.
// Usage: node bare-server.mjs BODY_FILE PORT ETAG [read-body]
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

const [file, port, etag, mode] = process.argv.slice(2);
const body = readFileSync(file);
const common = { etag, 'cache-control': 'private, must-revalidate', 'x-flag-sidecar-source': 'bootstrap', age: '0' };
const headers200 = { 'content-type': 'application/json', 'content-length': String(body.length), ...common };
const headers304 = common;
const answer = (req, res) => {
  if (req.headers['if-none-match'] === etag) {
    res.writeHead(304, headers304);
    res.end();
    return;
  }
  res.writeHead(200, headers200);
  res.end(body);
};
const readingBody = (req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => answer(req, res));
};
const server = createServer({ keepAliveTimeout: 65_000 }, mode === 'read-body' ? readingBody : answer);
server.listen(Number(port), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
