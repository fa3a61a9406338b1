import { useEffect, useMemo, useState } from 'preact/hooks';
import { browserZone, consoleZone, knownZones, setZoneSetting, subscribeZone, zoneSetting } from '../lib/time';

/** The console's zone, re-rendering the component when the setting changes. */
export const useZone = () => {
  const [zone, setZone] = useState(consoleZone);
  useEffect(() => subscribeZone(() => setZone(consoleZone())), []);
  return zone;
};

/**
 * The header's time-zone setting: the browser's zone (the default), UTC, or any IANA zone the
 * browser knows; kept in localStorage, and every time and axis of the console follows it.
 */
export const ZoneSetting = () => {
  useZone();
  const zones = useMemo(knownZones, []);
  const browser = browserZone();
  return (
    <label class="switcher">
      <span>Time zone</span>
      <select name="time-zone" aria-label="Time zone" value={zoneSetting()} onChange={(e) => setZoneSetting(e.currentTarget.value)}>
        <option value="">Browser ({browser})</option>
        {zones.map((z) => (
          <option value={z}>{z}</option>
        ))}
      </select>
    </label>
  );
};
