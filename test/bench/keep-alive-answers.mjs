// What the bench's raw keep-alive clients (post-client.mjs, get-client.mjs) share: reading whole HTTP/1.1 answers
// off a socket. Calls `onAnswer(answer)` once per whole answer (its status line, headers and Content-Length body,
// as latin1 text), in order; the answers carry a Content-Length (no chunked bodies: the servers measured send none).
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
