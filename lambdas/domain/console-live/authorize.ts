import type { Db } from '../../shared/clients';
import { AppError } from '../../shared/errors';
import { logger } from '../../shared/logger';
import { verifyAccessToken, type UserPoolSettings } from '../../shared/session-tokens';
import { getWorkspaceOfAccount } from '../../stores/workspace-store';
import type { IotArnBase, IotAuthorizerResult, IotPolicy, MqttConnect } from '../doors/device-mqtt';
import { authenticateUser } from '../tenancy/users';
import { CONSOLE_TOPIC_ROOT } from './live';

/**
 * A console's MQTT client ID: `console-` and 8 to 64 letters, digits, `_` or `-` (no policy
 * wildcard, nothing that could be a device's ID).
 */
export const CONSOLE_CLIENT_ID = /^console-[A-Za-z0-9_-]{8,64}$/;

/** A workspace ID as the console names it in the username: `wks-` and 20 lowercase letters or digits. */
const WORKSPACE_ID = /^wks-[a-z0-9]{20}$/;

/** How often IoT Core asks the authorizer again about an open console connection (its minimum, 300 s). */
export const CONSOLE_REFRESH_SECONDS = 300;
/** IoT Core's bounds on `disconnectAfterInSeconds`. */
const DISCONNECT_MIN_SECONDS = 300;
const DISCONNECT_MAX_SECONDS = 86_400;

/**
 * The IoT policy of one console connection: it connects with its own client ID, subscribes to and
 * receives the topics of one workspace (`fleetstream/console/<workspace>/…`), and nothing else: no
 * publish, no other workspace, no device topic.
 */
export const consolePolicy = (clientId: string, workspaceId: string, arn: IotArnBase): IotPolicy => ({
  Version: '2012-10-17',
  Statement: [
    { Effect: 'Allow', Action: 'iot:Connect', Resource: `${arn}:client/${clientId}` },
    { Effect: 'Allow', Action: 'iot:Subscribe', Resource: `${arn}:topicfilter/${CONSOLE_TOPIC_ROOT}/${workspaceId}/*` },
    { Effect: 'Allow', Action: 'iot:Receive', Resource: `${arn}:topic/${CONSOLE_TOPIC_ROOT}/${workspaceId}/*` },
  ],
});

const denied = (reason: string): IotAuthorizerResult => {
  logger.info('console MQTT connection refused', { reason });
  return {
    isAuthenticated: false,
    principalId: 'denied',
    disconnectAfterInSeconds: DISCONNECT_MIN_SECONDS,
    refreshAfterInSeconds: CONSOLE_REFRESH_SECONDS,
    policyDocuments: [],
  };
};

/** What the console authorizer checks against: the registry and the console's user pool. */
export interface ConsoleAuthorizerDeps {
  db: Db;
  pool: UserPoolSettings;
  /** The clock, in milliseconds. */
  now?: () => number;
}

/**
 * The console's MQTT door (over WebSocket): client ID `console-…`, username = the workspace whose
 * changes it wants, password = the signed-in user's Cognito access token, verified as the API's
 * authorizer verifies it. The user's account must hold the workspace; the answer's policy names
 * that workspace's topics only (a console connects again when the user switches workspace). The
 * connection ends when the token does (IoT Core's 300 s minimum apart), and IoT Core asks again
 * every 300 s: a deleted workspace or a token past its end closes it then.
 */
export const authorizeConsoleConnect = async (deps: ConsoleAuthorizerDeps, connect: MqttConnect, arn: IotArnBase): Promise<IotAuthorizerResult> => {
  const { clientId, username, password } = connect;
  if (!clientId || !CONSOLE_CLIENT_ID.test(clientId)) return denied('not a console client ID');
  if (!username || !WORKSPACE_ID.test(username)) return denied('the username is not a workspace ID');
  if (!password) return denied('no access token');
  try {
    const claims = await verifyAccessToken(password, deps.pool);
    const caller = await authenticateUser(deps.db, claims.sub);
    const workspace = await getWorkspaceOfAccount(deps.db, caller.accountId, username, { consistent: false });
    if (!workspace) return denied('the workspace is not one of the user’s account');
    const now = deps.now?.() ?? Date.now();
    const left = claims.exp ? Math.floor(claims.exp - now / 1000) : DISCONNECT_MAX_SECONDS;
    return {
      isAuthenticated: true,
      // IoT Core wants [a-zA-Z0-9]{1,128}.
      principalId: `console${claims.sub.replace(/[^A-Za-z0-9]/g, '')}`.slice(0, 128),
      disconnectAfterInSeconds: Math.max(DISCONNECT_MIN_SECONDS, Math.min(DISCONNECT_MAX_SECONDS, left)),
      refreshAfterInSeconds: CONSOLE_REFRESH_SECONDS,
      policyDocuments: [JSON.stringify(consolePolicy(clientId, username, arn))],
      context: { accountId: caller.accountId, workspaceId: username },
    };
  } catch (error) {
    if (error instanceof AppError && error.status === 401) return denied(error.message);
    throw error;
  }
};
