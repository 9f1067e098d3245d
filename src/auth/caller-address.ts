/**
 * The address a caller's key checks are shared out by (verify-queue.ts): its TCP peer address, never a header a
 * caller could write. An IPv4-mapped IPv6 address counts as its IPv4 address; an IPv6 address counts as its /64,
 * since one host is usually handed a whole /64 and could otherwise take a fresh share per key.
 */
import { isIPv6 } from 'node:net';

/** The address group of `remote` (a socket's remoteAddress); `unknown` when there is none (a closed socket). */
export function addressGroup(remote: string | undefined): string {
  if (remote === undefined || remote === '') return 'unknown';
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(remote);
  if (mapped !== null) return mapped[1] as string;
  if (!isIPv6(remote)) return remote;
  return `${firstHextets(remote.split('%')[0] as string).join(':')}::/64`;
}

/** The first four 16-bit groups of an IPv6 address, without leading zeros (so every spelling gives one group). */
function firstHextets(address: string): string[] {
  const [head = '', tail] = address.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  // An embedded IPv4 tail (::1.2.3.4) stands for two groups; only the first four groups matter here.
  const width = right.reduce((n, part) => n + (part.includes('.') ? 2 : 1), 0);
  const full = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - width).fill('0'), ...right];
  return full.slice(0, 4).map((part) => Number.parseInt(part, 16).toString(16));
}
