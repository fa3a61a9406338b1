import { join } from 'node:path';
import { startLocalCognito, TriggerInvokeRefusedError, type LocalCognito } from '../cognito-local';
import type { UserPoolSpec, UserPoolTriggerSpec } from './cognito';
import type { MayInvoke } from './policies';
import { ACCOUNT, type RunContext } from './run-context';

/** The user pool running on cognito-local, when the template has one, and its triggers that may not run. */
export interface RunningUserPool {
  cognito: LocalCognito | undefined;
  /** Why a trigger fails every call, by trigger name: filled once the permissions are read. */
  triggerRefusals: Map<string, string>;
}

/**
 * Starts the user pool and its clients as the template makes them, on cognito-local; its triggers
 * run the template's functions (once they run) when the pool may invoke them (`refuseTriggers`).
 */
export const startUserPool = async (run: RunContext, userPool: UserPoolSpec | undefined): Promise<RunningUserPool> => {
  const { options, log, stops, dataDir, region, physical, resolve, lambdas } = run;
  let cognito: LocalCognito | undefined;
  const triggerRefusals = new Map<string, string>();
  const invokeTrigger = async ({ name, functionId }: UserPoolTriggerSpec, event: unknown) => {
    const refusal = triggerRefusals.get(name);
    if (refusal) throw new TriggerInvokeRefusedError(refusal);
    return lambdas.get(functionId)!.invoke(event);
  };
  if (userPool) {
    log(`starting the user pool ${userPool.id} (cognito-local) with ${userPool.clients.length} clients and ${userPool.triggers.length} triggers…`);
    cognito = await startLocalCognito({
      port: options.cognitoPort ?? 0,
      dataDir: dataDir && join(dataDir, 'cognito'),
      pool: resolve(userPool.settings),
      clients: userPool.clients.map((c) => resolve(c.settings)),
      triggers: Object.fromEntries(userPool.triggers.map((t) => [t.name, (event: unknown) => invokeTrigger(t, event)])),
      onMessage: options.onMessage,
    });
    stops.push(cognito.stop);
    const poolId = cognito.userPoolId;
    physical.set(userPool.id, {
      ref: poolId,
      attributes: {
        Arn: `arn:aws:cognito-idp:${region}:${ACCOUNT}:userpool/${poolId}`,
        ProviderName: `cognito-idp.${region}.amazonaws.com/${poolId}`,
        ProviderURL: `https://cognito-idp.${region}.amazonaws.com/${poolId}`,
        UserPoolId: poolId,
      },
    });
    for (const [i, c] of userPool.clients.entries()) {
      physical.set(c.id, { ref: cognito!.clientIds[i], attributes: { ClientId: cognito!.clientIds[i], Name: String(resolve(c.settings.ClientName)) } });
    }
  }
  return { cognito, triggerRefusals };
};

/** Refuses each trigger whose function's resource policy does not let cognito-idp invoke it for this pool: Cognito would not call it. */
export const refuseTriggers = (
  { log, physical, invokeRefusals }: RunContext,
  userPool: UserPoolSpec | undefined,
  { triggerRefusals }: RunningUserPool,
  mayInvoke: MayInvoke,
): void => {
  for (const trigger of userPool?.triggers ?? []) {
    const poolArn = physical.get(userPool!.id)!.attributes.Arn;
    if (mayInvoke(trigger.functionId, poolArn, 'cognito-idp.amazonaws.com')) continue;
    const refusal = `Cognito may not invoke ${trigger.functionId}: no AWS::Lambda::Permission for cognito-idp.amazonaws.com on user pool ${userPool!.id}`;
    triggerRefusals.set(trigger.name, refusal);
    invokeRefusals.push(`${trigger.name}: ${refusal}`);
    log(`${refusal}: its ${trigger.name} trigger fails every call (UnexpectedLambdaException)`);
  }
};
