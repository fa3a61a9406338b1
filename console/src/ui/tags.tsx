import { useLayoutEffect, useState } from 'preact/hooks';
import type { ApiClient, Device } from '../lib/api';
import { checkTagRows, tagClause, tagErrorsOf, tagPatch, tagRows, TAG_VALUE_MAX, TAGS_MAX, type TagRow } from '../lib/find';
import { routeHash } from '../lib/router';
import { ErrorBox, Submit, useAction } from './components';

/** A device's tags as chips, each a link to the devices that carry the same tag. */
export const TagChips = ({ workspaceId, tags }: { workspaceId: string; tags: Record<string, string> | undefined }) => {
  const rows = tagRows(tags);
  if (!rows.length) return <span>none</span>;
  return (
    <span class="tags" data-testid="device-tags">
      {rows.map(({ key, value }) => (
        <a class="chip" href={routeHash({ page: 'devices', workspaceId, q: tagClause(key, value) })} title={`Devices tagged ${key}=${value}`}>
          {key}={value}
        </a>
      ))}
    </span>
  );
};

/**
 * Edits a device's tags: change a value or a key, remove a row, add one; saved as one PATCH of the
 * differences (`null` removes). Each row says what is wrong with it, as typed and as the API's 400
 * names it (`tags.<key>`).
 */
export const TagsEditor = ({ api, workspaceId, device, onSaved }: { api: ApiClient; workspaceId: string; device: Device; onSaved: (d: Device) => void }) => {
  const [rows, setRows] = useState<TagRow[]>(() => tagRows(device.tags));
  const save = useAction();
  // the rows follow the device as loaded or saved (in the commit that shows it: no old tags put back)
  useLayoutEffect(() => setRows(tagRows(device.tags)), [device.tags]);
  const checked = checkTagRows(rows);
  const fromApi = tagErrorsOf(save.error, rows);
  const patch = tagPatch(device.tags, rows);
  const changed = Object.keys(patch).length > 0;
  const invalid = Object.keys(checked.rows).length > 0 || Boolean(checked.whole);
  const edit = (i: number, change: Partial<TagRow>) => {
    save.setError(undefined);
    setRows((all) => all.map((row, k) => (k === i ? { ...row, ...change } : row)));
  };
  return (
    <form
      class="stack card"
      aria-labelledby="tags-h"
      onSubmit={async (e) => {
        e.preventDefault();
        if (invalid || !changed) return;
        const updated = await save.run(() => api.patchDevice(workspaceId, device.id, { tags: patch }));
        if (updated) onSaved(updated);
      }}
    >
      <h3 id="tags-h">Tags</h3>
      <p class="hint">
        Keys: letters, digits, _ . - (1 to 64); values up to {TAG_VALUE_MAX} characters; at most {TAGS_MAX} tags. Search by them on the devices list (
        <code>tags.site = "milan"</code>).
      </p>
      <div class="tag-rows" data-testid="tag-rows">
        {rows.map((row, i) => {
          const message = checked.rows[i] ?? fromApi.rows[i];
          const errorId = `tag-${i}-error`;
          return (
            <>
              <input
                name={`tag-key-${i}`}
                aria-label={`Tag ${i + 1} key`}
                value={row.key}
                aria-invalid={Boolean(message)}
                aria-describedby={message ? errorId : undefined}
                onInput={(e) => edit(i, { key: e.currentTarget.value })}
              />
              <input
                name={`tag-value-${i}`}
                aria-label={`Tag ${i + 1} value`}
                value={row.value}
                maxLength={TAG_VALUE_MAX}
                onInput={(e) => edit(i, { value: e.currentTarget.value })}
              />
              <button type="button" aria-label={`Remove tag ${row.key || i + 1}`} onClick={() => setRows((all) => all.filter((_, k) => k !== i))}>
                Remove
              </button>
              {message && (
                <small id={errorId} class="invalid" data-testid="tag-error">
                  {message}
                </small>
              )}
            </>
          );
        })}
      </div>
      {!rows.length && <p>No tags.</p>}
      <div class="toolbar">
        <button type="button" disabled={rows.length >= TAGS_MAX} onClick={() => setRows((all) => [...all, { key: '', value: '', was: '' }])}>
          Add a tag
        </button>
        <Submit busy={save.busy} disabled={save.busy || invalid || !changed}>
          Save tags
        </Submit>
        {changed && !save.busy && <span class="hint">Unsaved changes.</span>}
      </div>
      {(checked.whole || fromApi.whole.length > 0) && (
        <div class="error" role="alert">
          <strong>{checked.whole ?? 'The tags were refused.'}</strong>
          {fromApi.whole.length > 0 && (
            <ul>
              {fromApi.whole.map((line) => (
                <li>{line}</li>
              ))}
            </ul>
          )}
        </div>
      )}
      {/* any other failure (a 404, the network): said as every page says errors */}
      {!fromApi.whole.length && !Object.keys(fromApi.rows).length && <ErrorBox error={save.error} />}
    </form>
  );
};
