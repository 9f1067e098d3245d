/**
 * The flood of test/bench/key-flood.ts, in a process of its own so that its client loop does not delay the proxy,
 * the fake upstream or the probes' clocks: `npx tsx test/bench/key-flood-client.ts URL TOTAL CONNECTIONS CHURN`
 * sends TOTAL distinct made-up `phx_` keys from 127.0.0.1 and prints what they got as one JSON line.
 */
import { flood } from '../support/key-flood.js';

const [url = '', total = '0', connections = '0', churn = '0'] = process.argv.slice(2);
const bogus = flood(url, Number(total), Number(connections), churn !== '1');
await bogus.done;
console.log(JSON.stringify({ answered: bogus.answered(), statuses: Object.fromEntries(bogus.statuses) }));
