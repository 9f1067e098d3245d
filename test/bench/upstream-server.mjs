// A stand-in upstream for the read-through benchmarks: local_evaluation from a snapshot file (with ETag/304),
// any flag retrieve answered with the same flag body after DELAY_MS, any named-endpoint run (POST
// /api/projects/1/endpoints/NAME/run/) with RUN_FILE after DELAY_MS, and GET /__count with the number of
// retrieves and runs served. Usage: node upstream-server.mjs SNAPSHOT_FILE FLAG_FILE PORT DELAY_MS [RUN_FILE]
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

const [snapshotFile, flagFile, port, delayMs, runFile] = process.argv.slice(2);
const snapshot = readFileSync(snapshotFile);
const flag = readFileSync(flagFile);
const run = runFile ? readFileSync(runFile) : Buffer.from('{}');
const etag = `W/"${createHash('sha256').update(snapshot).digest('hex').slice(0, 16)}"`;
let retrieves = 0;
const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  const path = (req.url ?? '/').split('?')[0];
  if (path === '/__count') return void res.end(String(retrieves));
  if (path.includes('/local_evaluation')) {
    if (req.headers['if-none-match'] === etag) return void res.writeHead(304, { etag }).end();
    return void res.writeHead(200, { 'content-type': 'application/json', etag }).end(snapshot);
  }
  if (/^\/api\/projects\/1\/feature_flags\/\d+\/?$/.test(path)) {
    retrieves += 1;
    setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(flag), Number(delayMs));
    return;
  }
  if (/^\/api\/projects\/1\/endpoints\/[^/]+\/run\/?$/.test(path)) {
    retrieves += 1;
    req.resume();
    req.on('end', () => setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(run), Number(delayMs)));
    return;
  }
  res.writeHead(404, { 'content-type': 'application/json' }).end('{"type":"invalid_request","code":"not_found","detail":"Not found.","attr":null}');
});
server.listen(Number(port), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
