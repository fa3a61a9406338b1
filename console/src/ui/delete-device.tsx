import type { ApiClient, Device } from '../lib/api';
import { ApiError } from '../lib/errors';
import { jobOpen } from '../lib/jobs';
import type { Route } from '../lib/router';
import { ErrorBox, useAction } from './components';
import { useConfirm } from './confirm';

const count = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;

/** What deleting a device takes with it, read now: its identities not revoked, its jobs and FOTA not ended. */
const whatGoes = async (api: ApiClient, workspaceId: string, deviceId: string) => {
  const [identities, jobs, fota] = await Promise.all([
    api.listIdentities(workspaceId, deviceId),
    api.listJobs(deviceId),
    api.getFota(deviceId).catch((e) => (e instanceof ApiError && e.status === 404 ? null : Promise.reject(e))),
  ]);
  return {
    identities: identities.filter((i) => !i.revoked_at).length,
    jobs: jobs.filter((j) => jobOpen(j.status)).length,
    fota: Boolean(fota && jobOpen(fota.status)),
  };
};

/**
 * `Delete device`: asks first, naming what goes (the device, its credentials revoked, its open jobs
 * and FOTA canceled) with a choice to delete its data points too (`?purge=data`), then goes back to
 * the devices list.
 */
export const DeleteDevice = ({
  api,
  workspaceId,
  device,
  navigate,
}: {
  api: ApiClient;
  workspaceId: string;
  device: Device;
  navigate: (route: Route) => void;
}) => {
  const remove = useAction();
  const confirm = useConfirm();
  return (
    <section aria-labelledby="delete-device-h">
      <h3 id="delete-device-h">Delete this device</h3>
      <button
        type="button"
        class="danger"
        disabled={remove.busy}
        onClick={async () => {
          const goes = await remove.run(() => whatGoes(api, workspaceId, device.id));
          if (!goes) return;
          // the checkbox is read when the dialog closes (the dialog's content is drawn once)
          const choice = { purge: false };
          const sure = await confirm.ask({
            title: `Delete device ${device.name}?`,
            consequence: (
              <>
                <ul data-testid="delete-device-consequence">
                  <li>
                    The device <strong>{device.name}</strong> (<code>{device.id}</code>) leaves every list, search, group and rollout; its ID is never used
                    again.
                  </li>
                  <li>
                    {goes.identities
                      ? `Its credentials are revoked at once (${count(goes.identities, 'identity', 'identities')}): an open MQTT session is closed and its tokens are refused.`
                      : 'It has no credentials left to revoke; an open MQTT session is closed.'}
                  </li>
                  <li>
                    {goes.jobs || goes.fota
                      ? `Its ${[goes.jobs ? count(goes.jobs, 'open job') : '', goes.fota ? 'firmware update' : ''].filter(Boolean).join(' and its ')} ${
                          goes.jobs + (goes.fota ? 1 : 0) === 1 ? 'is' : 'are'
                        } canceled (counted so in their rollouts).`
                      : 'It has no open job or firmware update to cancel.'}
                  </li>
                </ul>
                <label>
                  <input
                    type="checkbox"
                    name="purge-data"
                    onChange={(e) => {
                      choice.purge = e.currentTarget.checked;
                    }}
                  />{' '}
                  Also delete its data points now (otherwise they are kept until the workspace's retention)
                </label>
              </>
            ),
            confirmLabel: 'Delete the device',
          });
          if (!sure) return;
          if (await remove.run(() => api.deleteDevice(workspaceId, device.id, { purge: choice.purge }))) navigate({ page: 'devices', workspaceId });
        }}
      >
        Delete device
      </button>
      <ErrorBox error={remove.error} />
      {confirm.dialog}
    </section>
  );
};
