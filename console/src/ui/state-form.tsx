import { useState } from 'preact/hooks';
import type { ApiClient, StateChange } from '../lib/api';
import { parseJsonObject } from '../lib/json-input';
import { checkFleetDesired, desiredKeysText, STATE_DOCUMENT_MAX_BYTES } from '../lib/state';
import { ErrorBox, Field, Submit, useAction } from './components';
import { useConfirm } from './confirm';
import { fleetWideConfirmation, targetOf, useSettingsErrors, type Target } from './schedule';

/** What a device of a state rollout gets, for the confirmation. */
const STATE_NOTE =
  'Each device gets these desired keys as its rollout releases them (merged into its desired state; null removes a key), and counts as done once it reports them.';

/**
 * The fleet-wide desired state: keys (a JSON object; `null` removes a key) set on the devices of the
 * target as a rollout of kind `state`, with the same targets, rollout settings and confirmation
 * (the dry run's count) as a job on fleets. One device's state is edited on its page.
 */
export const ChangeStateForm = ({ api, target, onChanged }: { api: ApiClient; target: Target; onChanged: (change: StateChange) => void }) => {
  const [text, setText] = useState('{\n  \n}');
  const parsed = parseJsonObject(text, STATE_DOCUMENT_MAX_BYTES);
  const problems = parsed.ok ? checkFleetDesired(parsed.value) : [parsed.error];
  const { busy, error, run } = useAction();
  const confirm = useConfirm();
  useSettingsErrors(target, error);
  if (target.kind !== 'fleets') return null;
  const invalid = problems.length > 0 || target.invalid;
  return (
    <form
      class="stack"
      aria-labelledby="state-new"
      onSubmit={async (e) => {
        e.preventDefault();
        if (!parsed.ok || invalid) return;
        const what = `desired state ${desiredKeysText(parsed.value)}`;
        const dry = await run(() => api.dryRunFleetState(target.workspaceId, parsed.value, targetOf(target), target.rollout));
        if (!dry || !(await confirm.ask(fleetWideConfirmation(what, dry, target, { verb: 'Set', note: STATE_NOTE })))) return;
        const change = await run(() => api.changeFleetState(target.workspaceId, parsed.value, targetOf(target), target.rollout));
        if (change) onChanged(change);
      }}
    >
      <h3 id="state-new">Set a desired state</h3>
      <Field label="Desired keys (JSON object)" hint='A value sets the key on each device, null removes it: {"interval": 60, "mode": "eco"}.'>
        <textarea
          name="state-desired"
          rows={6}
          spellcheck={false}
          aria-invalid={problems.length > 0}
          aria-describedby="state-desired-check"
          value={text}
          onInput={(e) => setText(e.currentTarget.value)}
        />
      </Field>
      <p id="state-desired-check" class={problems.length ? 'invalid' : 'ok'} role="status" data-testid="state-desired-check">
        {problems.length ? problems.join(' ') : `Valid: sets ${desiredKeysText(parsed.ok ? parsed.value : {})}.`}
      </p>
      <Submit busy={busy} disabled={busy || invalid}>
        Set desired state
      </Submit>
      <ErrorBox error={error} />
      {confirm.dialog}
    </form>
  );
};
