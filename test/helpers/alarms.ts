/**
 * Alarms opened on a running stack as its detection opens them (domain/alarms/alarms.ts openAlarm,
 * on the stack's own registry table): the API opens none, and the tests of what the API does with
 * alarms (acknowledge, list, isolation, fuzz) need some.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { findRuntime } from '../../local/runtime-file';

type Place = { workspace_id: string; fleet_id: string; device_id: string };

/** Opens an alarm of a rule on a device, on this registry table; returns its ID. */
export const openAlarmOn = async (db: { doc: DynamoDBDocumentClient; table: string }, place: Place, ruleId: string) => {
  // Imported here: the modules read the environment once, when the runtime has set it.
  const { getAlarmRuleOfWorkspace } = await import('../../lambdas/stores/alarm-rule-store');
  const { openAlarm } = await import('../../lambdas/domain/alarms/alarms');
  const rule = await getAlarmRuleOfWorkspace(db, place.workspace_id, ruleId);
  if (!rule) throw new Error(`no alarm rule ${ruleId} in ${place.workspace_id}`);
  // The transition is not told: no notifier runs in these tests, and the alarm is what they need.
  const alarm = await openAlarm({ db, notify: async () => {} }, rule, place, { details: {}, transitionId: `test-${ruleId}-${place.device_id}` });
  if (!alarm) throw new Error(`no alarm opened for ${ruleId} on ${place.device_id}`);
  return alarm.id;
};

/** Opens an alarm of a rule on a device of a stack started with a data directory (`startLocalStack`); returns its ID. */
export const openAlarmOnStack = async (dataDir: string, place: Place, ruleId: string) => {
  const { env } = findRuntime(dataDir) as { env: Record<string, string> };
  const doc = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint: env.AWS_ENDPOINT_URL_DYNAMODB,
      region: env.AWS_REGION ?? 'us-east-1',
      credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID ?? 'local', secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? 'local' },
    }),
    { marshallOptions: { removeUndefinedValues: true } },
  );
  try {
    return await openAlarmOn({ doc, table: env.REGISTRY_TABLE }, place, ruleId);
  } finally {
    doc.destroy();
  }
};
