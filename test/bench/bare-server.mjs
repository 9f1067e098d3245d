// The benchmark's reference: a bare node:http server returning the same response as the sidecar (body bytes and
// the same header set), with no routing, auth, metrics or clock. With `read-body`, it reads the request body
// ('data' / 'end') before answering, as any server answering a POST by its body must. With `sink`, it reads the
// body and answers BODY_FILE with only content-type and content-length (the capture answer's headers), and counts
// the requests it took (GET /__count); `sink-parse` also gunzips a gzip body and JSON.parses it.
// Usage: node bare-server.mjs BODY_FILE PORT ETAG [read-body|sink|sink-parse]
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { gunzipSync } from 'node:zlib';

const [file, port, etag, mode] = process.argv.slice(2);
const body = readFileSync(file);
const common = { etag, 'cache-control': 'private, must-revalidate', 'x-flag-sidecar-source': 'bootstrap', age: '0' };
const headers200 = { 'content-type': 'application/json', 'content-length': String(body.length), ...common };
const headers304 = common;
const sinkHeaders = { 'content-type': 'application/json', 'content-length': String(body.length) };
let taken = 0;
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
const sink = (req, res) => {
  if (req.method === 'GET' && req.url === '/__count') return void res.end(String(taken));
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    if (mode === 'sink-parse') {
      const raw = Buffer.concat(chunks);
      JSON.parse((raw[0] === 0x1f && raw[1] === 0x8b ? gunzipSync(raw) : raw).toString('utf8'));
    }
    taken += 1;
    res.writeHead(200, sinkHeaders);
    res.end(body);
  });
};
const handler = mode === 'read-body' ? readingBody : mode === 'sink' || mode === 'sink-parse' ? sink : answer;
const server = createServer({ keepAliveTimeout: 65_000 }, handler);
server.listen(Number(port), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
