// A minimal keep-alive HTTP client for the instruction-count bench: COUNT identical POSTs of BODY_FILE to PATH
// over CONNS raw connections (each sends its next request when its last answer is whole); exits 1 unless every
// answer was a 200. Usage: node post-client.mjs PORT PATH BODY_FILE KEY COUNT [CONNS]
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { onAnswers } from './keep-alive-answers.mjs';

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
      const next = () => {
        if (left <= 0) return void socket.end(resolve);
        left -= 1;
        socket.write(request);
      };
      socket.on('error', reject);
      socket.on('connect', next);
      onAnswers(socket, (answer) => {
        if (!answer.startsWith('HTTP/1.1 200')) bad += 1;
        next();
      });
    }),
  ),
);
if (bad > 0) {
  console.error(`${bad} answers were not 200`);
  process.exit(1);
}
