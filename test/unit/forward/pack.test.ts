import { dataMessage, eventMessage } from '../../../lambdas/domain/webhooks/events';
import { FORWARD_PACK_MAX_BYTES, packForward, readForwardBody } from '../../../lambdas/domain/webhooks/forward-pack';
import { webhookBody } from '../../../lambdas/domain/webhooks/forwarding';
import type { ForwardMessage } from '../../../lambdas/schemas/forward';
import { toQueueBody } from '../../../lambdas/shared/json';
import { entryMessage } from '../../helpers/sqs';

const place = (workspace_id: string) => ({ workspace_id, fleet_id: 'flt-aaaaaaaaaaaaaaaaaaaa', device_id: 'dev-aaaaaaaaaaaaaaaaaaaa' });
const point = (workspace_id: string, n: number, payload: unknown = { n }, tag = 't') =>
  dataMessage({ ...place(workspace_id), tag, timestamp_device: new Date(n).toISOString(), timestamp_in: new Date(n).toISOString(), payload }, 'd');
const event = (workspace_id: string, n: number) => eventMessage(place(workspace_id), 'data', 'd2c', { n }, new Date(n).toISOString());

/** Each body's messages, read back as the forwarder reads them. */
const unpack = (bodies: string[]) =>
  bodies.map((body) => {
    const entries = readForwardBody(body);
    if (!entries) throw new Error(`unreadable: ${body.slice(0, 200)}`);
    return entries.map(entryMessage);
  });

describe('packForward', () => {
  it('packs one workspace’s points apart from its events, and each workspace apart, keeping their order', () => {
    const messages: ForwardMessage[] = [point('wks-a', 1), event('wks-a', 1), point('wks-b', 2), point('wks-a', 3), event('wks-b', 4)];

    const packs = unpack(packForward(messages));

    expect(packs).toEqual([[messages[0], messages[3]], [messages[1]], [messages[2]], [messages[4]]]);
  });

  it('writes a header line and then each entry on a line of its own, as the webhook entry it becomes', () => {
    const messages = [point('wks-a', 1, { v: 1 }, 'temp'), point('wks-a', 2, 'line\nbreak', 'hum')];

    const [body] = packForward(messages);
    const [header, ...lines] = body.split('\n');

    expect(JSON.parse(header)).toEqual({ kind: 'entries', workspace_id: 'wks-a', of: 'data', count: 2, tags: ['temp', 'hum'] });
    expect(lines.map((line) => JSON.parse(line))).toEqual(messages.map(({ kind, ...entry }) => entry));
    // The body the forwarder builds from those lines is the interface's batch, IDs first.
    const batch = JSON.parse(
      webhookBody(
        'b',
        readForwardBody(body)!.map((e) => e.json),
      ).toString(),
    );
    expect(batch).toEqual({ batch_id: 'b', result: messages.map(({ kind, ...entry }, i) => ({ id: String(i), ...entry })) });
    expect(Object.keys(batch.result[0])[0]).toBe('id');
  });

  it('starts a new pack before one would pass the size limit, and every pack reads back whole', () => {
    const messages = Array.from({ length: 3000 }, (_, n) => point('wks-a', n, { n, text: 'x'.repeat(200) }, `tag-${n % 7}`));

    const bodies = packForward(messages);

    expect(bodies.length).toBeGreaterThan(1);
    expect(bodies.every((body) => Buffer.byteLength(body) <= FORWARD_PACK_MAX_BYTES)).toBe(true);
    // Full packs: one fewer would not hold them.
    expect(bodies.length).toBe(Math.ceil(bodies.reduce((sum, b) => sum + Buffer.byteLength(b), 0) / FORWARD_PACK_MAX_BYTES));
    expect(unpack(bodies).flat()).toEqual(messages);
  });

  it('keeps characters SQS refuses escaped, so a pack travels every SQS engine and reads back exactly', () => {
    const awkward = point('wks-a', 1, { emoji: '😀', nonchar: '\uFFFF', key: { '': 1 }, text: '}\n{"kind":"entries"' }, 'tä');

    const [body] = packForward([awkward]);

    expect(/^[\x20-\x7e\n]*$/.test(body)).toBe(true);
    expect(body.split('\n')).toHaveLength(2);
    expect(unpack([body])).toEqual([[awkward]]);
    expect(readForwardBody(body)![0].tag).toBe('tä');
  });
});

describe('readForwardBody', () => {
  const [body] = packForward([point('wks-a', 1), point('wks-a', 2)]);
  const [header, ...lines] = body.split('\n');
  const withHeader = (change: object) => [JSON.stringify({ ...JSON.parse(header), ...change }), ...lines].join('\n');

  it('checks each line’s shape, and parses it too when asked (the forwarder asks on a redelivery)', () => {
    const broken = [header, lines[0], '{"workspace_id":}'].join('\n');

    expect(readForwardBody(broken)).toHaveLength(2);
    expect(readForwardBody(broken, { parseEntries: true })).toBeUndefined();
    expect(readForwardBody(body, { parseEntries: true })).toHaveLength(2);
  });

  it('reads the JSON bodies from before rendering: a pack of both kinds, and a single message', () => {
    const mixed = [point('wks-a', 1), event('wks-a', 2)];

    expect(unpack([toQueueBody({ kind: 'pack', entries: mixed }), toQueueBody(mixed[1])])).toEqual([mixed, [mixed[1]]]);
  });

  it.each([
    ['a header of another kind', withHeader({ kind: 'pack' })],
    ['more lines than the header counts', withHeader({ count: 1 })],
    ['fewer lines than the header counts', withHeader({ count: 3 })],
    ['tags that do not match the lines', withHeader({ tags: ['t'] })],
    ['events with tags', withHeader({ of: 'event' })],
    ['a line that is not a JSON object', [header, lines[0], '"just a string"'].join('\n')],
    ['a line that is an empty object', [header, lines[0], '{}'].join('\n')],
    ['an empty line', [header, lines[0], ''].join('\n')],
    ['a header that is not JSON', ['{"kind":"entries"', ...lines].join('\n')],
    ['JSON that is no forward message', toQueueBody({ kind: 'data', workspace_id: 'wks-a' })],
    ['no JSON at all', 'hello'],
  ])('refuses %s (it goes to the DLQ)', (_, bad) => {
    expect(readForwardBody(bad)).toBeUndefined();
  });
});
