import type { Db } from '../../shared/clients';
import { ConflictError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import type { Replay } from '../../schemas/integration';
import { moveDeadLetters, receiveDeadLetters, releaseDeadLetters, type DeadLetter } from '../../stores/dead-letter-store';
import { getDeliveredIntegrations, type IntegrationRecord } from '../../stores/integration-store';
import { readForwardRuns } from './forward-pack';
import { requireIntegration, toIntegration, wantsMessage } from './integrations';

export interface ReplayOptions {
  /** The forward queue, and its dead-letter queue. */
  queueUrl: string;
  dlqUrl: string;
  /** Epoch ms after which no more messages are received (the answer must come within API Gateway's 29 s). */
  until: number;
  /** Messages examined at most. */
  maxExamined?: number;
}

/** Seconds a received dead letter stays hidden while a replay runs: others are released at its end, or come back by themselves after this. */
const HIDE_SECONDS = 60;
const MAX_EXAMINED = 2000;

/**
 * Whether a dead letter is the webhook's to replay: all its entries are of the webhook's workspace
 * (a pack holds one workspace's; an old multi-workspace body is left to `fleetstream replay-dlq`),
 * the webhook takes some of them (kind, tag filter), and its delivery ledger does not say the
 * webhook already received it.
 */
const isTheirs = (integration: IntegrationRecord, letter: DeadLetter, delivered: Map<string, string[]>) => {
  const runs = readForwardRuns(letter.body);
  if (!runs?.length || runs.some((run) => run.workspace_id !== integration.workspace_id)) return false;
  if (delivered.get(letter.originId)?.includes(integration.id)) return false;
  return runs.some((run) =>
    run.kind === 'data' && integration.tags.length
      ? (run.tags ?? []).some((tag) => wantsMessage(integration, { kind: 'data', tag }))
      : wantsMessage(integration, { kind: run.kind }),
  );
};

/**
 * Moves the forward queue's dead-lettered messages that a webhook missed back to the forward queue,
 * `fleetstream replay-dlq`'s work for one webhook: the DLQ is shared by every workspace, so each
 * message received is read, and only those of the webhook's workspace that it takes and has not
 * received (isTheirs) are moved; every other message is made visible again, untouched, when the
 * replay ends (or by itself after 60 s, should it stop midway). A moved message goes, as any retry,
 * to each of the workspace's webhooks that have not received it yet (the delivery ledger), so a
 * webhook that did is not sent it twice. At least once: a message is deleted from the DLQ only after
 * it is sent, so a failure in between replays it twice, never loses it.
 *
 * It runs until the DLQ looks empty of other messages (two empty receives), its time is up, or
 * `maxExamined` messages were looked at; `complete` says which.
 * @throws NotFoundError when the workspace or the integration is not the caller's.
 * @throws ConflictError when the integration is disabled (nothing is moved).
 */
export const replayDeadLetters = async (db: Db, caller: Caller, workspaceId: string, integrationId: string, options: ReplayOptions) => {
  const integration = await requireIntegration(db, caller, workspaceId, integrationId);
  if (!integration.enabled) throw new ConflictError('The webhook is disabled: enable it before replaying what it missed.');
  const maxExamined = options.maxExamined ?? MAX_EXAMINED;
  const others: DeadLetter[] = [];
  const replay: Replay = { moved: 0, examined: 0, complete: false };
  try {
    for (let empty = 0; empty < 2; ) {
      if (Date.now() >= options.until || replay.examined >= maxExamined) return { replay, integration: toIntegration(integration) };
      const letters = await receiveDeadLetters(options.dlqUrl, HIDE_SECONDS, 1);
      empty = letters.length ? 0 : empty + 1;
      replay.examined += letters.length;
      const delivered = letters.length
        ? await getDeliveredIntegrations(
            db,
            letters.map((l) => l.originId),
          )
        : new Map<string, string[]>();
      const theirs = letters.filter((letter) => isTheirs(integration, letter, delivered));
      others.push(...letters.filter((letter) => !theirs.includes(letter)));
      const { moved, unsent } = await moveDeadLetters(options.queueUrl, options.dlqUrl, theirs);
      replay.moved += moved.length;
      others.push(...unsent); // stays in the DLQ, visible again
    }
    replay.complete = true;
    return { replay, integration: toIntegration(integration) };
  } finally {
    await releaseDeadLetters(options.dlqUrl, others);
  }
};
