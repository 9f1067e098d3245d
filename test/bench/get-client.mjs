// A minimal keep-alive HTTP client for the instruction-count bench's read paths: WARM then COUNT identical GETs of
// PATH over CONNS raw connections (each sends its next request when its last answer is whole); exits 1 unless
// every answer had STATUS. IF_NONE_MATCH ('-' for none) is sent as If-None-Match. With CG_PID set, the callgrind
// counters of that process are zeroed after the WARM answers and dumped after the last, on the same connections
// (keep-alive-answers.mjs says why).
// Usage: node get-client.mjs PORT PATH KEY WARM COUNT STATUS [IF_NONE_MATCH] [CONNS]
import { sendRepeatedly } from './keep-alive-answers.mjs';

const [port, path, key, warm, count, status, ifNoneMatch = '-', conns = '1'] = process.argv.slice(2);
const request = Buffer.from(
  `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${key}\r\n${ifNoneMatch === '-' ? '' : `If-None-Match: ${ifNoneMatch}\r\n`}\r\n`,
);
const bad = await sendRepeatedly({ port: Number(port), request, warm: Number(warm), count: Number(count), conns: Number(conns), expected: `HTTP/1.1 ${status}` });
if (bad > 0) {
  console.error(`${bad} answers were not ${status}`);
  process.exit(1);
}
