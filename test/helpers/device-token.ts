import { SignJWT } from 'jose';

export interface DeviceTokenOptions {
  /** Seconds from now to exp; negative for an expired token. */
  expiresIn?: number;
  /** Other claims, or overrides of sub and key. */
  claims?: Record<string, unknown>;
  alg?: 'HS256' | 'HS384' | 'HS512';
}

/**
 * A device token as device clients make it: HS256, `sub` = device ID, `key` = identity ID, `exp`,
 * signed with the base64-decoded `prvkey` of the credentials.
 */
export const deviceToken = (
  credentials: { devinfo: { device_id: string; key_id: string }; prvkey: string },
  { expiresIn = 3600, claims = {}, alg = 'HS256' }: DeviceTokenOptions = {},
) =>
  new SignJWT({ sub: credentials.devinfo.device_id, key: credentials.devinfo.key_id, ...claims })
    .setProtectedHeader({ alg, typ: 'JWT' })
    .setExpirationTime(Math.floor(Date.now() / 1000) + expiresIn)
    .sign(Buffer.from(credentials.prvkey, 'base64'));

/** A client of the device API (`{base_url}/device`) that presents a device token. */
export const deviceClient = (baseUrl: string, token: string) => {
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${baseUrl}/device${path}`, {
      method,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
  };
  return { call, get: (path: string) => call('GET', path), post: (path: string, body?: unknown) => call('POST', path, body) };
};
