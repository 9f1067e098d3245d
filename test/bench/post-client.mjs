// A minimal keep-alive HTTP client for the instruction-count bench: COUNT identical POSTs of BODY_FILE to PATH
// over CONNS raw connections (each sends its next request when its last answer is whole); exits 1 unless every
// answer was a 200. Usage: node post-client.mjs PORT PATH BODY_FILE KEY COUNT [CONNS]
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';

const [port, path, bodyFile, key, count, conns = '10'] = process.argv.slice(2);
const body = readFileSync(bodyFile);
const request = Buffer.concat([
  Buffer.from(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`),
  body,
]);
let left = Number(count);
let bad = 0;
await Promise.all(
  Array.from({ length: Number(conns) }, () =>
    new Promise((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1');
      let buffer = '';
      const next = () => {
        if (left <= 0) return void socket.end(resolve);
        left -= 1;
        socket.write(request);
      };
      socket.setEncoding('latin1');
      socket.on('error', reject);
      socket.on('connect', next);
      socket.on('data', (chunk) => {
        buffer += chunk;
        for (;;) {
          const end = buffer.indexOf('\r\n\r\n');
          if (end < 0) return;
          const length = Number(/content-length: (\d+)/i.exec(buffer.slice(0, end))?.[1] ?? 0);
          if (buffer.length < end + 4 + length) return;
          if (!buffer.startsWith('HTTP/1.1 200')) bad += 1;
          buffer = buffer.slice(end + 4 + length);
          next();
        }
      });
    }),
  ),
);
if (bad > 0) {
  console.error(`${bad} answers were not 200`);
  process.exit(1);
}
