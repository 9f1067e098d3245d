// What the bench's raw keep-alive clients (post-client.mjs, get-client.mjs) share: reading whole HTTP/1.1 answers
// off a socket, and sending one request over and over on a few connections with the warm-up and the count on the
// same connections.
import { execFileSync } from 'node:child_process';
import { connect } from 'node:net';

/**
 * Calls `onAnswer(answer)` once per whole answer (its status line, headers and Content-Length body, as latin1 text),
 * in order; the answers carry a Content-Length (no chunked bodies: the servers measured send none).
 */
export function onAnswers(socket, onAnswer) {
  let buffer = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk) => {
    buffer += chunk;
    for (;;) {
      const end = buffer.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = Number(/content-length: (\d+)/i.exec(buffer.slice(0, end))?.[1] ?? 0);
      if (buffer.length < end + 4 + length) return;
      const answer = buffer.slice(0, end + 4 + length);
      buffer = buffer.slice(end + 4 + length);
      onAnswer(answer);
    }
  });
}

/**
 * Sends `request` (bytes, or a function giving the bytes of request number 1, 2, …) WARM then COUNT times over CONNS
 * connections to 127.0.0.1:PORT, each connection sending its next request when its last answer is whole; resolves
 * to how many answers did not start with `expected`.
 * With CG_PID set, the callgrind counters of that process are zeroed after the WARM answers and dumped after the
 * last, on the same connections: a connection opened between warm-up and measurement would colour the count (the
 * server's first request on a new connection, and the end of the old ones, run code with no feedback yet, and V8
 * drops optimized code for them; under valgrind it takes most of the window to optimize it again).
 */
export async function sendRepeatedly({ port, request, warm, count, conns, expected }) {
  const callgrind = (command) => {
    if (process.env.CG_PID) execFileSync('callgrind_control', [command, process.env.CG_PID], { stdio: 'ignore' });
  };
  let sent = 0;
  let answered = 0;
  const total = warm + count;
  let bad = 0;
  let paused = [];
  if (warm === 0) callgrind('-z');
  await Promise.all(
    Array.from({ length: conns }, () =>
      new Promise((resolve, reject) => {
        const socket = connect(port, '127.0.0.1');
        const send = () => {
          sent += 1;
          socket.write(typeof request === 'function' ? request(sent) : request);
        };
        const next = () => {
          if (sent >= total) return void socket.end(resolve);
          // Warm-up ends when every warm-up request is answered: the others wait, then all go on together.
          if (sent === warm && answered < warm) return void paused.push(send);
          send();
        };
        socket.on('error', reject);
        socket.on('connect', next);
        onAnswers(socket, (answer) => {
          if (!answer.startsWith(expected)) bad += 1;
          answered += 1;
          if (answered === warm) {
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
  return bad;
}
