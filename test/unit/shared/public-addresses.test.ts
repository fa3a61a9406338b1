import fc from 'fast-check';
import { isPrivateAddress, isPrivateHost, isPublicAddress } from '../../../lambdas/shared/public-addresses';
import { webhookPoster } from '../../../lambdas/shared/webhook-client';

/** An IPv4 address as four octets, in dotted-quad form. */
const dotted = (octets: number[]) => octets.join('.');
/** The two 16-bit groups of an IPv4 address, in hex, as IPv6 writes them. */
const groups = (octets: number[]) => [((octets[0] << 8) | octets[1]).toString(16), ((octets[2] << 8) | octets[3]).toString(16)];

// IPv4 blocks a webhook must never reach (IANA's IPv4 special-purpose registry, the ones that matter).
const PRIVATE_V4_BLOCKS: Array<[number[], number]> = [
  [[0, 0, 0, 0], 8],
  [[10, 0, 0, 0], 8],
  [[100, 64, 0, 0], 10],
  [[127, 0, 0, 0], 8],
  [[169, 254, 0, 0], 16],
  [[172, 16, 0, 0], 12],
  [[192, 168, 0, 0], 16],
  [[192, 0, 0, 0], 24],
  [[198, 18, 0, 0], 15],
  [[224, 0, 0, 0], 4],
  [[240, 0, 0, 0], 4],
];

/** Any address of a block: its network's bits kept, the rest drawn. */
const inBlock = ([network, prefix]: [number[], number]) =>
  fc.integer({ min: 0, max: 2 ** (32 - prefix) - 1 }).map((host) => {
    const base = network.reduce((n, o) => n * 256 + o, 0);
    const value = base - (base % 2 ** (32 - prefix)) + host;
    return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255];
  });
const privateV4 = fc.oneof(...PRIVATE_V4_BLOCKS.map(inBlock));
const anyV4 = fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 4, maxLength: 4 });

/** The IPv6 forms that carry an IPv4 address: mapped, compatible, NAT64 (both prefixes), 6to4, SIIT. */
const embeddings = (octets: number[]) => {
  const [high, low] = groups(octets);
  return [
    `::ffff:${dotted(octets)}`,
    `::ffff:${high}:${low}`,
    `::${dotted(octets)}`,
    `::${high}:${low}`,
    `64:ff9b::${dotted(octets)}`,
    `64:ff9b::${high}:${low}`,
    `64:ff9b:1::${high}:${low}`,
    `2002:${high}:${low}::1`,
    `::ffff:0:${high}:${low}`,
  ];
};

describe('public addresses (the webhook target rules, fast-check)', () => {
  it('refuses every address of the private IPv4 blocks, and each IPv6 form that carries one', () => {
    fc.assert(
      fc.property(privateV4, (octets) => {
        expect(isPrivateAddress(dotted(octets))).toBe(true);
        for (const form of embeddings(octets)) expect([form, isPrivateAddress(form)]).toEqual([form, true]);
        for (const form of embeddings(octets)) expect([form, isPrivateHost(`[${form}]`)]).toEqual([form, true]);
      }),
      { numRuns: 500 },
    );
  });

  it('judges an IPv4-mapped address as its IPv4 address, and refuses the other IPv4-carrying forms whatever they carry', () => {
    fc.assert(
      fc.property(anyV4, (octets) => {
        const [mapped, mappedHex, ...others] = embeddings(octets);
        expect(isPublicAddress(mapped)).toBe(isPublicAddress(dotted(octets)));
        expect(isPublicAddress(mappedHex)).toBe(isPublicAddress(dotted(octets)));
        for (const form of others) expect([form, isPublicAddress(form)]).toEqual([form, false]);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses every IPv6 address outside 2000::/3 (global unicast)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 }), (parts) => {
        const address = parts.map((p) => p.toString(16)).join(':');
        if ((parts[0] & 0xe000) !== 0x2000) expect([address, isPublicAddress(address)]).toEqual([address, false]);
      }),
      { numRuns: 1000 },
    );
  });

  it.each([
    ['8.8.8.8', true],
    ['203.0.114.7', true],
    ['2606:4700::1111', true],
    ['2a00:1450:4001:80b::200e', true],
    ['127.0.0.53', false],
    ['169.254.169.254', false],
    ['255.255.255.255', false],
    ['192.88.99.1', false],
    ['::', false],
    ['::1', false],
    ['::ffff:10.0.0.1', false],
    ['100::1', false],
    ['100::ffff:ffff:ffff:ffff', false],
    ['64:ff9b::808:808', false],
    ['2002:808:808::1', false],
    ['2001::1', false],
    ['2001:db8::1', false],
    ['3fff::1', false],
    ['fd00::1', false],
    ['fe80::1', false],
    ['ff02::1', false],
    ['not-an-ip', false],
  ])('judges %s public: %s', (address, expected) => {
    expect(isPublicAddress(address)).toBe(expected);
    expect(isPrivateAddress(address)).toBe(address !== 'not-an-ip' && !expected);
  });

  it.each([
    ['localhost.', true],
    ['localhost..', true],
    ['api.localhost.', true],
    ['db.internal.', true],
    ['router.home.arpa.', true],
    ['intranet.', true],
    ['[::ffff:7f00:1]', true],
    ['[64:ff9b::a9fe:a9fe]', true],
    ['hooks.example.com.', false],
    ['hooks.example.com', false],
    ['[2606:4700::1111]', false],
  ])('judges the host %s private: %s', (host, expected) => {
    expect(isPrivateHost(host)).toBe(expected);
  });
});

describe('delivery (webhookPoster) in the cloud', () => {
  const post = webhookPoster({ timeoutMs: 1000, allowPrivate: false });
  const to = (url: string) => post({ url, body: Buffer.from('{}'), headers: {} } as never);

  it.each([
    'https://[64:ff9b::7f00:1]/hook',
    'https://[2002:7f00:1::1]/hook',
    'https://[::7f00:1]/hook',
    'https://[::ffff:a9fe:a9fe]/hook',
    'https://[100::1]/hook',
    'https://localhost./hook',
    'https://metadata.google.internal./hook',
  ])('refuses %s without connecting, though it was stored before the rules were complete', async (url) => {
    expect(await to(url)).toEqual({ ok: false, error: expect.stringMatching(/ is a private address$/) });
  });
});
