import { jest } from '@jest/globals';
import type { APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { randomBytes } from 'node:crypto';
import { handler } from '../../../lambdas/handlers/device-authorizer/handler';
import { createDevice } from '../../../lambdas/domain/registry/devices';
import { authenticateDevice, createIdentity, revokeIdentity } from '../../../lambdas/domain/registry/identities';
import type { EventMessage } from '../../../lambdas/schemas/forward';
import type { Db } from '../../../lambdas/shared/clients';
import { REGISTRY_TABLE } from '../../../lambdas/shared/env';
import { UnauthorizedError } from '../../../lambdas/shared/errors';
import { metrics } from '../../../lambdas/shared/metrics';
import { claimAuthenticationSample } from '../../../lambdas/stores/authentication-sample-store';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';
import { deviceToken } from '../../helpers/device-token';

const ENDPOINT = 'https://devices.example.com/v3/device';

type Credentials = Parameters<typeof deviceToken>[0];
const METHOD_ARN = 'arn:aws:execute-api:eu-west-1:123456789012:abcdef/v3/POST/device/data';

let db: Db;
beforeAll(async () => {
  // the handler works on the table its environment names, as in Lambda
  db = await freshTable(REGISTRY_TABLE);
});

const deviceWithCredentials = async () => {
  const account = await newAccount(db);
  const device = await createDevice(db, account.caller, account.workspace_id, { name: 'sensor', phys_id: '' });
  const { identity, credentials } = await createIdentity(db, account.caller, account.workspace_id, device.id, { type: 'sym' }, ENDPOINT);
  return { ...account, device, identity, credentials };
};

/** A forward queue that keeps what it is given. */
const recordingForward = () => {
  const events: EventMessage[] = [];
  return { events, forward: async (messages: EventMessage[]) => void events.push(...messages) };
};

const errorsOf = (events: EventMessage[]) => events.map((e) => (e.payload as { error: string }).error);

describe('device token authentication', () => {
  it('names the device and reports a granted authentication event', async () => {
    const { account_id, workspace_id, device, identity, credentials } = await deviceWithCredentials();
    const { events, forward } = recordingForward();

    const caller = await authenticateDevice(db, forward, `Bearer ${await deviceToken(credentials)}`);

    expect(caller).toEqual({ accountId: account_id, workspaceId: workspace_id, deviceId: device.id, identityId: identity.id });
    expect(events).toEqual([
      {
        kind: 'event',
        ts: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z$/),
        type: 'authentication',
        direction: 'd2c',
        workspace_id,
        fleet_id: device.fleet_id,
        device_id: device.id,
        payload: { clientid: device.id, proto: 'https', error: '', verified: 'true', result: 'granted' },
      },
    ]);
  });

  it.each([
    ['an expired token', { expiresIn: -120 }, 'token expired'],
    ['a token living longer than an hour', { expiresIn: 24 * 3600 }, 'token lifetime exceeds 3600 s'],
    ['a token of another algorithm', { alg: 'HS512' as const }, 'algorithm not allowed (HS256 only)'],
    ['a token naming an unknown identity', { claims: { key: 'idn-00000000000000000000' } }, 'unknown identity'],
  ])('refuses %s and reports it', async (_name, options, error) => {
    const { device, credentials } = await deviceWithCredentials();
    const { events, forward } = recordingForward();

    await expect(authenticateDevice(db, forward, `Bearer ${await deviceToken(credentials, options)}`)).rejects.toThrow(UnauthorizedError);

    expect(events).toEqual([
      expect.objectContaining({ device_id: device.id, payload: { clientid: device.id, proto: 'https', error, verified: 'false', result: 'denied' } }),
    ]);
  });

  it('accepts a token whose clock runs a little ahead', async () => {
    const { device, credentials } = await deviceWithCredentials();

    const caller = await authenticateDevice(db, recordingForward().forward, `Bearer ${await deviceToken(credentials, { expiresIn: 3600 + 30 })}`);

    expect(caller.deviceId).toBe(device.id);
  });

  it('refuses a token signed with another key', async () => {
    const { credentials } = await deviceWithCredentials();
    const forged = { ...credentials, prvkey: randomBytes(32).toString('base64') };
    const { events, forward } = recordingForward();

    await expect(authenticateDevice(db, forward, `Bearer ${await deviceToken(forged)}`)).rejects.toThrow(UnauthorizedError);

    expect(errorsOf(events)).toEqual(['bad signature']);
  });

  it('refuses a token of a revoked identity', async () => {
    const { caller, workspace_id, device, identity, credentials } = await deviceWithCredentials();
    const token = await deviceToken(credentials);
    await revokeIdentity(db, caller, workspace_id, device.id, identity.id);
    const { events, forward } = recordingForward();

    await expect(authenticateDevice(db, forward, `Bearer ${token}`)).rejects.toThrow(UnauthorizedError);

    expect(errorsOf(events)).toEqual(['identity revoked']);
  });

  it('refuses a device’s key presented for another device of the account', async () => {
    const { caller, workspace_id, credentials } = await deviceWithCredentials();
    const other = await createDevice(db, caller, workspace_id, { name: 'other', phys_id: '' });
    const { events, forward } = recordingForward();

    await expect(authenticateDevice(db, forward, `Bearer ${await deviceToken(credentials, { claims: { sub: other.id } })}`)).rejects.toThrow(UnauthorizedError);

    expect(events.map((e) => [e.device_id, (e.payload as { error: string }).error])).toEqual([[other.id, 'unknown identity']]);
  });

  it.each([
    ['no header', undefined],
    ['another scheme', 'Basic dXNlcjpwYXNz'],
    ['a malformed token', 'Bearer not.a.jwt'],
    ['a token without a device ID', 'Bearer eyJhbGciOiJIUzI1NiJ9.eyJleHAiOjk5OTk5OTk5OTl9.c2lnbmF0dXJl'],
    // sub dev-00000000000000000000, key idn-00000000000000000000, signed with nothing
    [
      'an unknown device',
      'Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJkZXYtMDAwMDAwMDAwMDAwMDAwMDAwMDAiLCJrZXkiOiJpZG4tMDAwMDAwMDAwMDAwMDAwMDAwMDAiLCJleHAiOjk5OTk5OTk5OTl9.c2lnbmF0dXJl',
    ],
  ])('refuses %s without an event (no device to report it for)', async (_name, authorization) => {
    const { events, forward } = recordingForward();

    await expect(authenticateDevice(db, forward, authorization)).rejects.toThrow(UnauthorizedError);

    expect(events).toEqual([]);
  });

  it('answers even when the forward queue fails', async () => {
    const { device, credentials } = await deviceWithCredentials();
    const failing = async () => {
      throw new Error('SQS is down');
    };

    const caller = await authenticateDevice(db, failing, `Bearer ${await deviceToken(credentials)}`);

    expect(caller.deviceId).toBe(device.id);
  });
});

describe('authentication events of tokens anyone can make', () => {
  const forgedFor = (credentials: Credentials, options: Parameters<typeof deviceToken>[1] = {}) =>
    deviceToken({ ...credentials, prvkey: randomBytes(32).toString('base64') }, options);

  it('forwards one event a minute per device for tokens not signed with its key, and counts every refusal', async () => {
    const { device, credentials } = await deviceWithCredentials();
    const { events, forward } = recordingForward();
    const added = jest.spyOn(metrics, 'addMetric');
    const minute = new Date(Math.floor(Date.now() / 60_000) * 60_000);
    const nextMinute = new Date(minute.getTime() + 60_000);
    const attempt = async (token: string, now: Date) => expect(authenticateDevice(db, forward, `Bearer ${token}`, { now })).rejects.toThrow(UnauthorizedError);

    try {
      for (let i = 0; i < 5; i++) await attempt(await forgedFor(credentials), minute);
      await attempt(await deviceToken(credentials, { claims: { key: 'idn-00000000000000000000' } }), new Date(minute.getTime() + 59_000));
      for (let i = 0; i < 3; i++) await attempt(await forgedFor(credentials), nextMinute);

      expect(events.map((e) => [e.device_id, (e.payload as { error: string; verified: string }).error])).toEqual([
        [device.id, 'bad signature'],
        [device.id, 'bad signature'],
      ]);
      expect(added.mock.calls.filter(([name]) => name === 'DeviceAuthenticationFailures')).toHaveLength(9);
    } finally {
      added.mockRestore();
    }
  });

  it('forwards every check of a token signed with the device’s key, granted or refused, beside the sampled forgeries', async () => {
    const { device, credentials } = await deviceWithCredentials();
    const { events, forward } = recordingForward();
    const now = new Date();

    for (let i = 0; i < 3; i++) {
      await expect(authenticateDevice(db, forward, `Bearer ${await forgedFor(credentials)}`, { now })).rejects.toThrow(UnauthorizedError);
      await expect(authenticateDevice(db, forward, `Bearer ${await deviceToken(credentials, { expiresIn: -600 })}`, { now })).rejects.toThrow(
        UnauthorizedError,
      );
      await authenticateDevice(db, forward, `Bearer ${await deviceToken(credentials)}`, { now });
    }

    const results = events.map((e) => (e.payload as { result: string; error: string }).error || 'granted');
    expect(results.filter((r) => r === 'bad signature')).toHaveLength(1);
    expect(results.filter((r) => r === 'token expired')).toHaveLength(3);
    expect(results.filter((r) => r === 'granted')).toHaveLength(3);
    expect(events.every((e) => e.device_id === device.id)).toBe(true);
  });

  it('lets one claim of a device’s minute win across containers (the table’s conditional write), and the next minute’s again', async () => {
    const deviceId = `dev-${randomBytes(10).toString('hex')}`;
    const minute = Math.floor(Date.now() / 60_000);

    const first = await Promise.all(Array.from({ length: 10 }, () => claimAuthenticationSample(db, deviceId, minute)));
    const again = await claimAuthenticationSample(db, deviceId, minute);
    const next = await Promise.all(Array.from({ length: 10 }, () => claimAuthenticationSample(db, deviceId, minute + 1)));
    const earlier = await claimAuthenticationSample(db, deviceId, minute);

    expect([first.filter(Boolean).length, again, next.filter(Boolean).length, earlier]).toEqual([1, false, 1, false]);
  });
});

describe('device authorizer handler', () => {
  const requestWith = (headers: Record<string, string>) => ({ type: 'REQUEST', methodArn: METHOD_ARN, headers }) as unknown as APIGatewayRequestAuthorizerEvent;

  it('allows every device route, so that one cached answer serves them all', async () => {
    const { account_id, workspace_id, device, identity, credentials } = await deviceWithCredentials();

    const result = await handler(requestWith({ authorization: `Bearer ${await deviceToken(credentials)}` }));

    expect(result).toEqual({
      principalId: device.id,
      policyDocument: {
        Version: '2012-10-17',
        Statement: [{ Action: 'execute-api:Invoke', Effect: 'Allow', Resource: 'arn:aws:execute-api:eu-west-1:123456789012:abcdef/v3/*/device/*' }],
      },
      context: { accountId: account_id, workspaceId: workspace_id, deviceId: device.id, identityId: identity.id },
    });
  });

  it.each([
    ['an expired token', { expiresIn: -600 }, 'token expired'],
    ['a token living longer than allowed', { expiresIn: 24 * 3600 }, 'token lifetime exceeds 3600 s'],
  ])(
    'denies %s signed with the device’s key, with the reason in the context (API Gateway’s ACCESS_DENIED, a 401 with details)',
    async (_name, options, reason) => {
      const { credentials } = await deviceWithCredentials();

      const result = await handler(requestWith({ Authorization: `Bearer ${await deviceToken(credentials, options)}` }));

      expect(result).toEqual({
        principalId: 'refused',
        policyDocument: {
          Version: '2012-10-17',
          Statement: [{ Action: 'execute-api:Invoke', Effect: 'Deny', Resource: 'arn:aws:execute-api:eu-west-1:123456789012:abcdef/v3/*/device/*' }],
        },
        context: { refusal: expect.stringContaining(reason) },
      });
    },
  );

  it('denies a revoked identity’s signed token with its reason, and answers a forged one for the same identity with the generic 401', async () => {
    const { caller, workspace_id, device, identity, credentials } = await deviceWithCredentials();
    await revokeIdentity(db, caller, workspace_id, device.id, identity.id);
    const forged = { ...credentials, prvkey: randomBytes(32).toString('base64') };

    const signed = await handler(requestWith({ authorization: `Bearer ${await deviceToken(credentials)}` }));

    expect(signed.policyDocument.Statement[0].Effect).toBe('Deny');
    expect(signed.context).toEqual({ refusal: expect.stringContaining('identity revoked') });
    await expect(handler(requestWith({ authorization: `Bearer ${await deviceToken(forged)}` }))).rejects.toThrow(/^Unauthorized$/);
  });

  it.each([
    ['a token signed with another key', async (c: Credentials) => deviceToken({ ...c, prvkey: randomBytes(32).toString('base64') })],
    [
      'an expired token signed with another key',
      async (c: Credentials) => deviceToken({ ...c, prvkey: randomBytes(32).toString('base64') }, { expiresIn: -600 }),
    ],
    ['a token naming an unknown identity', async (c: Credentials) => deviceToken(c, { claims: { key: 'idn-00000000000000000000' } })],
    ['a token of another algorithm', async (c: Credentials) => deviceToken(c, { alg: 'HS512' })],
    ['a malformed token', async () => 'not.a.jwt'],
  ])('fails with exactly "Unauthorized" (API Gateway’s generic 401, no reason) for %s', async (_name, tokenOf) => {
    const { credentials } = await deviceWithCredentials();

    await expect(handler(requestWith({ Authorization: `Bearer ${await tokenOf(credentials)}` }))).rejects.toThrow(/^Unauthorized$/);
  });

  it('fails with exactly "Unauthorized" for a missing token', async () => {
    await expect(handler(requestWith({}))).rejects.toThrow(/^Unauthorized$/);
  });
});

describe('what a refusal tells the device', () => {
  it.each([
    ['an expired token', { expiresIn: -600 }, /token expired/],
    ['a token living longer than allowed', { expiresIn: 24 * 3600 }, /token lifetime exceeds 3600 s/],
  ])('names the reason for %s signed with the device’s key', async (_name, options, reason) => {
    const { credentials } = await deviceWithCredentials();

    const refusal = await authenticateDevice(db, recordingForward().forward, `Bearer ${await deviceToken(credentials, options)}`).catch((e: unknown) => e);

    expect(refusal).toBeInstanceOf(UnauthorizedError);
    expect((refusal as UnauthorizedError).details).toEqual([{ field: 'header.authorization', message: expect.stringMatching(reason) }]);
  });

  it('keeps a revoked identity’s key, so that its tokens are told apart from forgeries', async () => {
    const { caller, workspace_id, device, identity, credentials } = await deviceWithCredentials();
    await revokeIdentity(db, caller, workspace_id, device.id, identity.id);

    const signed = await authenticateDevice(db, recordingForward().forward, `Bearer ${await deviceToken(credentials)}`).catch((e: unknown) => e);
    const forged = await authenticateDevice(
      db,
      recordingForward().forward,
      `Bearer ${await deviceToken({ ...credentials, prvkey: randomBytes(32).toString('base64') })}`,
    ).catch((e: unknown) => e);

    expect((signed as UnauthorizedError).details).toEqual([{ field: 'header.authorization', message: expect.stringMatching(/identity revoked/) }]);
    expect(forged).toBeInstanceOf(UnauthorizedError);
    expect((forged as UnauthorizedError).details).toEqual([]);
  });
});
