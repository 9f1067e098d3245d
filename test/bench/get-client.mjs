// A minimal keep-alive HTTP client for the instruction-count bench's read paths: WARM then COUNT identical GETs of
// PATH over CONNS raw connections (each sends its next request when its last answer is whole); exits 1 unless
// every answer had STATUS. IF_NONE_MATCH ('-' for none) is sent as If-None-Match. With CG_PID set, the callgrind
// counters of that process are zeroed after the WARM answers and dumped after the last, on the same connections:
// a connection opened between warm-up and measurement would colour the count (the server's first request on a
// new connection runs code with no feedback yet, and V8 may drop optimized code for it).
// Usage: node get-client.mjs PORT PATH KEY WARM COUNT STATUS [IF_NONE_MATCH] [CONNS]
import { execFileSync } from 'node:child_process';
import { connect } from 'node:net';
import { onAnswers } from './keep-alive-answers.mjs';

const [port, path, key, warm, count, status, ifNoneMatch = '-', conns = '1'] = process.argv.slice(2);
const request = Buffer.from(
  `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${key}\r\n${ifNoneMatch === '-' ? '' : `If-None-Match: ${ifNoneMatch}\r\n`}\r\n`,
);
const expected = `HTTP/1.1 ${status}`;
const callgrind = (command) => {
  if (process.env.CG_PID) execFileSync('callgrind_control', [command, process.env.CG_PID], { stdio: 'ignore' });
};
const warmCount = Number(warm);
let sent = 0;
let answered = 0;
const total = warmCount + Number(count);
let bad = 0;
let paused = [];
await Promise.all(
  Array.from({ length: Number(conns) }, () =>
    new Promise((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1');
      const send = () => {
        sent += 1;
        socket.write(request);
      };
      const next = () => {
        if (sent >= total) return void socket.end(resolve);
        // Warm-up ends when every warm-up request is answered: the others wait, then all go on together.
        if (sent === warmCount && answered < warmCount) return void paused.push(send);
        send();
      };
      socket.on('error', reject);
      socket.on('connect', next);
      onAnswers(socket, (answer) => {
        if (!answer.startsWith(expected)) bad += 1;
        answered += 1;
        if (answered === warmCount) {
          callgrind('-z');
          const waiting = paused;
          paused = [];
          next();
          for (const go of waiting) go();
        } else next();
      });
    }),
  ),
);
callgrind('-d');
if (bad > 0) {
  console.error(`${bad} answers were not ${status}`);
  process.exit(1);
}
