// The benchmark's reference: a bare node:http server returning the same response as the sidecar (body bytes and
// the same header set), with no routing, auth, metrics or clock. Usage: node bare-server.mjs BODY_FILE PORT ETAG
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

const [file, port, etag] = process.argv.slice(2);
const body = readFileSync(file);
const common = { etag, 'cache-control': 'private, must-revalidate', 'x-flag-sidecar-source': 'bootstrap', age: '0' };
const headers200 = { 'content-type': 'application/json', 'content-length': String(body.length), ...common };
const headers304 = common;
const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  if (req.headers['if-none-match'] === etag) {
    res.writeHead(304, headers304);
    res.end();
    return;
  }
  res.writeHead(200, headers200);
  res.end(body);
});
server.listen(Number(port), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
