/** The console's runtime configuration, served as `/config.json` beside it (never part of the build). */
export interface ConsoleConfig {
  /** `{base_url}`, absolute, ending in `/v3`. */
  apiUrl: string;
  region: string;
  userPoolId: string;
  userPoolClientId: string;
  /** The user pool's JSON API; absent on AWS (the region's Cognito endpoint). */
  cognitoEndpoint?: string;
  /**
   * The live updates' MQTT over WebSocket address (`wss://<console domain>/mqtt` on AWS,
   * `ws://127.0.0.1:<MQTT_WS_PORT>/mqtt` on `npm start`); absent: pages read again on their own.
   */
  liveUrl?: string;
}

/** Checks a parsed `/config.json`; throws with the missing or wrong fields named. */
export const parseConfig = (raw: unknown): ConsoleConfig => {
  const value = (raw ?? {}) as Record<string, unknown>;
  const wrong = ['apiUrl', 'region', 'userPoolId', 'userPoolClientId'].filter((k) => typeof value[k] !== 'string' || !value[k]);
  if (value.cognitoEndpoint !== undefined && typeof value.cognitoEndpoint !== 'string') wrong.push('cognitoEndpoint');
  if (value.liveUrl !== undefined && (typeof value.liveUrl !== 'string' || !/^wss?:\/\/.+/.test(value.liveUrl))) wrong.push('liveUrl (a ws:// or wss:// URL)');
  if (typeof value.apiUrl === 'string' && !/^https?:\/\/.+\/v3\/?$/.test(value.apiUrl)) wrong.push('apiUrl (an absolute URL ending in /v3)');
  if (wrong.length) throw new Error(`The console's configuration (/config.json) is incomplete: ${wrong.join(', ')}.`);
  return {
    apiUrl: (value.apiUrl as string).replace(/\/+$/, ''),
    region: value.region as string,
    userPoolId: value.userPoolId as string,
    userPoolClientId: value.userPoolClientId as string,
    ...(value.cognitoEndpoint ? { cognitoEndpoint: value.cognitoEndpoint as string } : {}),
    ...(value.liveUrl ? { liveUrl: value.liveUrl as string } : {}),
  };
};
