import { dataMessage, eventMessage, FORWARD_PACK_MAX_BYTES, packForward } from '../../../lambdas/domain/events';
import { ForwardQueueMessageSchema, type ForwardMessage } from '../../../lambdas/schemas/forward';

const place = (workspace_id: string) => ({ workspace_id, fleet_id: 'flt-aaaaaaaaaaaaaaaaaaaa', device_id: 'dev-aaaaaaaaaaaaaaaaaaaa' });
const point = (workspace_id: string, n: number, payload: unknown = { n }) =>
  dataMessage({ ...place(workspace_id), tag: 't', timestamp_device: new Date(n).toISOString(), timestamp_in: new Date(n).toISOString(), payload }, 'd');
const event = (workspace_id: string, n: number) => eventMessage(place(workspace_id), 'data', 'd2c', { n }, new Date(n).toISOString());

const unpack = (bodies: string[]) =>
  bodies.map((body) => {
    const parsed = ForwardQueueMessageSchema.parse(JSON.parse(body));
    if (parsed.kind !== 'pack') throw new Error('not a pack');
    return parsed.entries;
  });

describe('packForward', () => {
  it('packs one workspace’s points apart from its events, and each workspace apart, keeping their order', () => {
    const messages: ForwardMessage[] = [point('wks-a', 1), event('wks-a', 1), point('wks-b', 2), point('wks-a', 3), event('wks-b', 4)];

    const packs = unpack(packForward(messages));

    expect(packs).toEqual([[messages[0], messages[3]], [messages[1]], [messages[2]], [messages[4]]]);
  });

  it('starts a new pack before one would pass the size limit, and every pack reads back whole', () => {
    const messages = Array.from({ length: 3000 }, (_, n) => point('wks-a', n, { n, text: 'x'.repeat(200) }));

    const bodies = packForward(messages);

    expect(bodies.length).toBeGreaterThan(1);
    expect(bodies.every((body) => Buffer.byteLength(body) <= FORWARD_PACK_MAX_BYTES)).toBe(true);
    // Full packs: one fewer would not hold them.
    expect(bodies.length).toBe(Math.ceil(bodies.reduce((sum, b) => sum + Buffer.byteLength(b), 0) / FORWARD_PACK_MAX_BYTES));
    expect(unpack(bodies).flat()).toEqual(messages);
  });

  it('keeps characters SQS refuses escaped, so a pack travels every SQS engine and parses back exactly', () => {
    const awkward = point('wks-a', 1, { emoji: '😀', nonchar: '\uFFFF', key: { '': 1 } });

    const [body] = packForward([awkward]);

    expect(/^[\x20-\x7e]*$/.test(body)).toBe(true);
    expect(unpack([body])).toEqual([[awkward]]);
  });
});
