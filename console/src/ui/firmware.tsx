import { useState } from 'preact/hooks';
import type { Firmware } from '../lib/api';
import { formatBytes, uploadFirmware, type UploadStep } from '../lib/firmware';
import { routeHash } from '../lib/router';
import type { PageProps } from './page';
import { Busy, ErrorBox, Field, Name, Pager, Submit, useAction, useLoad, usePages, when } from './components';
import { useConfirm } from './confirm';

const PAGE = 50;
const NAME_RULE = '^[A-Za-z0-9_.\\-]{1,64}$';

/** Where an upload is, in words (with its bar while the bytes go). */
const StepStatus = ({ step }: { step: UploadStep }) => {
  switch (step.step) {
    case 'reading':
      return <Busy label={`Computing the SHA-256 of ${formatBytes(step.size)}…`} />;
    case 'registering':
      return <Busy label="Registering the version…" />;
    case 'uploading':
      return (
        <Busy
          label={`Uploading: ${formatBytes(step.sent)} of ${formatBytes(step.total)} (${step.total ? Math.floor((100 * step.sent) / step.total) : 0} %)`}
          value={step.sent}
          max={step.total}
        />
      );
    case 'checking':
      return <Busy label="Uploaded: waiting for the version to be ready…" />;
    case 'ready':
      return (
        <p role="status" class="ok" data-testid="upload-ready">
          {step.firmware.firmware_id} {step.firmware.version} is ready: its image is stored ({formatBytes(step.firmware.size)}, SHA-256{' '}
          <code>{step.firmware.sha256.slice(0, 12)}…</code>).
        </p>
      );
  }
};

/** Uploads an image: the file's SHA-256 in the browser, the registration, the PUT with its progress, then ready. */
const UploadForm = ({ api, workspaceId, onReady }: Pick<PageProps, 'api' | 'workspaceId'> & { onReady: (firmware: Firmware) => void }) => {
  const [file, setFile] = useState<File | undefined>(undefined);
  const [firmwareId, setFirmwareId] = useState('');
  const [version, setVersion] = useState('');
  const [description, setDescription] = useState('');
  const [step, setStep] = useState<UploadStep | undefined>(undefined);
  const upload = useAction();
  return (
    <form
      class="stack card"
      aria-labelledby="upload-h"
      onSubmit={async (e) => {
        e.preventDefault();
        if (!file) return;
        setStep(undefined);
        const firmware = await upload.run(() =>
          uploadFirmware({ workspaceId, firmwareId, version, description, file }, setStep, {
            api,
            request: () => new XMLHttpRequest(),
            subtle: globalThis.crypto?.subtle,
          }),
        );
        if (firmware) onReady(firmware);
        else setStep(undefined);
      }}
    >
      <h3 id="upload-h">Upload firmware</h3>
      <p class="hint">The image goes straight to storage, checked there against the SHA-256 computed here; the version is ready once it is stored.</p>
      <Field label="Image file">
        <input type="file" name="firmware-file" required onChange={(e) => setFile(e.currentTarget.files?.[0])} />
      </Field>
      <Field label="Firmware ID" hint="Letters, digits, _ . - (at most 64), as devices name their firmware.">
        <input name="upload-firmware-id" required pattern={NAME_RULE} value={firmwareId} onInput={(e) => setFirmwareId(e.currentTarget.value)} />
      </Field>
      <Field label="Version">
        <input name="upload-version" required pattern={NAME_RULE} value={version} onInput={(e) => setVersion(e.currentTarget.value)} />
      </Field>
      <Field label="Description (optional)">
        <input name="upload-description" maxLength={1024} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
      </Field>
      <Submit busy={upload.busy} disabled={upload.busy || !file}>
        Upload firmware
      </Submit>
      {step && <StepStatus step={step} />}
      {step?.step === 'ready' && (
        <p>
          <a href={routeHash({ page: 'jobs', workspaceId })}>Schedule it as a FOTA</a> (on a device or on fleets).
        </p>
      )}
      <ErrorBox
        error={upload.error}
        hints={{ 409: 'This version is registered with other bytes, or already ready: choose another version, or delete this one first.' }}
      />
    </form>
  );
};

/** Firmware: the workspace's versions and their state, uploads, deletes. */
export const FirmwarePage = ({ api, workspaceId }: PageProps) => {
  const pages = usePages(workspaceId);
  const firmwares = useLoad(() => api.listFirmwares(workspaceId, { limit: PAGE, cursor: pages.cursor }), [workspaceId, pages.cursor]);
  const remove = useAction();
  const deleteConfirm = useConfirm();
  return (
    <>
      <UploadForm api={api} workspaceId={workspaceId} onReady={() => firmwares.reload()} />
      <section aria-labelledby="firmwares-h">
        <h2 id="firmwares-h">Firmware versions</h2>
        <ErrorBox error={firmwares.error} />
        <ErrorBox error={remove.error} hints={{ 409: 'A FOTA that has not ended uses this version: cancel it, or wait until it ends, then delete.' }} />
        {firmwares.data && !firmwares.data.items.length && pages.first && <p>No firmware registered yet.</p>}
        {firmwares.data && firmwares.data.items.length > 0 && (
          <table class="list" data-testid="firmwares">
            <thead>
              <tr>
                <th scope="col">Firmware</th>
                <th scope="col">Version</th>
                <th scope="col">State</th>
                <th scope="col">Size</th>
                <th scope="col">SHA-256</th>
                <th scope="col">Description</th>
                <th scope="col">Registered</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {firmwares.data.items.map((f) => (
                <tr data-firmware={`${f.firmware_id} ${f.version}`}>
                  <td>{f.firmware_id}</td>
                  <td>{f.version}</td>
                  <td data-testid="firmware-status">{f.status === 'ready' ? 'ready' : 'awaiting upload'}</td>
                  <td>{formatBytes(f.size)}</td>
                  <td>
                    <code title={f.sha256}>{f.sha256.slice(0, 12)}…</code>
                  </td>
                  <td>{f.description ? <Name text={f.description} /> : '—'}</td>
                  <td>{when(f.created_at)}</td>
                  <td>
                    <button
                      type="button"
                      aria-label={`Delete firmware ${f.firmware_id} ${f.version}`}
                      disabled={remove.busy}
                      onClick={async () => {
                        const sure = await deleteConfirm.ask({
                          title: `Delete firmware ${f.firmware_id} ${f.version}?`,
                          consequence: (
                            <p>
                              The version and its uploaded image ({formatBytes(f.size)}) are deleted for good: it can no longer be scheduled, and devices can no
                              longer download it. (A FOTA that has not ended and uses it makes the API refuse the delete.)
                            </p>
                          ),
                          confirmLabel: 'Delete the version',
                        });
                        if (!sure) return;
                        if (await remove.run(() => api.deleteFirmware(workspaceId, f.firmware_id, f.version))) firmwares.reload();
                      }}
                    >
                      Delete
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <Pager pages={pages} next={firmwares.data?.next} onRefresh={firmwares.reload} />
        {deleteConfirm.dialog}
      </section>
    </>
  );
};
