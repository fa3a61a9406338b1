import { parseConfig } from '../../../console/src/lib/config';
import { withConnection } from '../../../console/src/lib/live';

const base = { apiUrl: 'https://x.example.com/v3', region: 'eu-west-1', userPoolId: 'p', userPoolClientId: 'c' };

describe('the console’s live updates: its address and its messages', () => {
  it('reads liveUrl from config.json when it is a ws:// or wss:// URL, and refuses anything else', () => {
    expect(parseConfig({ ...base, liveUrl: 'wss://abc-ats.iot.eu-west-1.amazonaws.com/mqtt' }).liveUrl).toBe('wss://abc-ats.iot.eu-west-1.amazonaws.com/mqtt');
    expect(parseConfig({ ...base, liveUrl: 'ws://127.0.0.1:8083/mqtt' }).liveUrl).toBe('ws://127.0.0.1:8083/mqtt');
    expect(parseConfig(base).liveUrl).toBeUndefined();
    expect(() => parseConfig({ ...base, liveUrl: 'https://example.com/mqtt' })).toThrow(/liveUrl \(a ws:\/\/ or wss:\/\/ URL\)/);
  });

  it('changes the connection of the device a message names, and its time, and no other device', () => {
    const rows = [
      { id: 'dev-1', connected: true, last_connected_at: 'a', last_disconnected_at: null },
      { id: 'dev-2', connected: true, last_connected_at: 'b', last_disconnected_at: null },
    ];

    const after = rows.map((d) => withConnection(d, { device_id: 'dev-1', fleet_id: 'f', connected: false, at: 'c' }));

    expect(after).toEqual([{ id: 'dev-1', connected: false, last_connected_at: 'a', last_disconnected_at: 'c' }, rows[1]]);
    expect(withConnection(after[0], { device_id: 'dev-1', fleet_id: 'f', connected: true, at: 'd' })).toMatchObject({
      connected: true,
      last_connected_at: 'd',
    });
  });
});
