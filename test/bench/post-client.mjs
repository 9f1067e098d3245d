// A minimal keep-alive HTTP client for the instruction-count bench: WARM then COUNT identical POSTs of BODY_FILE to
// PATH over CONNS raw connections (each sends its next request when its last answer is whole); exits 1 unless every
// answer was a 200. With CG_PID set, the callgrind counters of that process are zeroed after the WARM answers and
// dumped after the last, on the same connections (keep-alive-answers.mjs says why).
// With NEW_PERSON set to a text of BODY_FILE (its distinct id, say), each request has it replaced by `person-N`, N
// counting requests: a new person every request, as a server SDK asking for many users sends.
// Usage: node post-client.mjs PORT PATH BODY_FILE KEY WARM COUNT [CONNS]
import { readFileSync } from 'node:fs';
import { sendRepeatedly } from './keep-alive-answers.mjs';

const [port, path, bodyFile, key, warm, count, conns = '10'] = process.argv.slice(2);
const text = readFileSync(bodyFile, 'utf8');
const framed = (body) =>
  Buffer.concat([
    Buffer.from(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`),
    body,
  ]);
const person = process.env.NEW_PERSON;
if (person !== undefined && !text.includes(person)) {
  console.error(`NEW_PERSON ${person} is not in ${bodyFile}`);
  process.exit(2);
}
const [head, tail] = person === undefined ? [] : [text.slice(0, text.indexOf(person)), text.slice(text.indexOf(person) + person.length)];
const request = person === undefined ? framed(Buffer.from(text)) : (n) => framed(Buffer.from(`${head}person-${n}${tail}`));
const bad = await sendRepeatedly({ port: Number(port), request, warm: Number(warm), count: Number(count), conns: Number(conns), expected: 'HTTP/1.1 200' });
if (bad > 0) {
  console.error(`${bad} answers were not 200`);
  process.exit(1);
}
