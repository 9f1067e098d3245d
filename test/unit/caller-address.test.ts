import { describe, expect, it } from 'vitest';
import { addressGroup } from '../../src/auth/caller-address.js';

describe('the address group key checks are shared out by', () => {
  it.each([
    ['an IPv4 address', '203.0.113.7', '203.0.113.7'],
    ['an IPv4-mapped IPv6 address, as its IPv4 address', '::ffff:203.0.113.7', '203.0.113.7'],
    ['an IPv6 address, as its /64', '2001:db8:1:2:aaaa:bbbb:cccc:dddd', '2001:db8:1:2::/64'],
    ['another address of that /64, spelled with leading zeros', '2001:0db8:0001:0002::1', '2001:db8:1:2::/64'],
    ['an IPv6 address with :: in its first half', '2001:db8::1', '2001:db8:0:0::/64'],
    ['the IPv6 loopback', '::1', '0:0:0:0::/64'],
    ['an IPv6 address with a zone', 'fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['an IPv6 address with an embedded IPv4 tail', '64:ff9b::198.51.100.1', '64:ff9b:0:0::/64'],
    ['no address (a closed socket)', undefined, 'unknown'],
  ])('%s', (_, remote, group) => {
    expect(addressGroup(remote)).toBe(group);
  });

  it('tells two /64s apart', () => {
    expect(addressGroup('2001:db8:1:2::1')).not.toBe(addressGroup('2001:db8:1:3::1'));
  });
});
