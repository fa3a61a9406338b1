import { useEffect, useMemo, useState } from 'preact/hooks';
import { createApiClient, type ApiClient, type Workspace } from '../lib/api';
import { createCognitoClient, cognitoEndpointOf, type Session } from '../lib/cognito';
import type { ConsoleConfig } from '../lib/config';
import { parseRoute, routeHash, type Route } from '../lib/router';
import { createSessionStore } from '../lib/session';
import { configureLive } from '../lib/live';
import { AlarmsPage, OpenAlarmCount } from './alarms';
import { AuthPage } from './auth';
import { Busy, ErrorBox, Name, useLoad } from './components';
import { DataPage } from './data';
import { DevicePage } from './device';
import { DevicesPage } from './devices';
import { FirmwarePage } from './firmware';
import { GroupPage, GroupsPage } from './groups';
import { IntegrationsPage } from './integrations';
import { JobsPage } from './jobs';
import { OverviewPage } from './overview';
import { LiveIndicator } from './live';
import { navigate } from './page';
import { RolloutPage, RolloutsPage } from './rollouts';
import { SettingsPage } from './settings';
import { useZone, ZoneSetting } from './time-zone';
import { UsagePage } from './usage';
import { WorkspacesPage } from './workspaces';

const useRoute = () => {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
};

const NAV = [
  ['overview', 'Overview'],
  ['devices', 'Fleets and devices'],
  ['alarms', 'Alarms'],
  ['groups', 'Groups'],
  ['jobs', 'Jobs and FOTA'],
  ['rollouts', 'Rollouts'],
  ['firmware', 'Firmware'],
  ['data', 'Data'],
  ['integrations', 'Integrations'],
  ['usage', 'Usage'],
  ['settings', 'Settings'],
] as const;

/** The console: sign-in until there is a session, then the page the address names. */
export const App = ({ config }: { config: ConsoleConfig }) => {
  const cognito = useMemo(
    () => createCognitoClient({ endpoint: cognitoEndpointOf(config.region, config.cognitoEndpoint), clientId: config.userPoolClientId }),
    [config],
  );
  // the store holds the session (saved across reloads); this state only re-renders on its changes
  const [, setSession] = useState<Session | undefined>(undefined);
  const store = useMemo(() => createSessionStore(cognito, localStorage, setSession), [cognito]);
  const session = store.current();
  const api = useMemo(() => createApiClient({ baseUrl: config.apiUrl, headers: store.headers, onUnauthorized: () => store.set(undefined) }), [config, store]);
  const route = useRoute();
  // Live updates as the signed-in user, with a token refreshed as the API's (none signed out).
  const signedIn = Boolean(session);
  useEffect(() => {
    const token = async () => ((await store.headers()).Authorization ?? '').replace(/^Bearer /, '');
    configureLive(signedIn && config.liveUrl ? { url: config.liveUrl, token } : undefined);
  }, [config, store, signedIn]);

  if (!session) return <AuthPage cognito={cognito} onSignedIn={(s) => store.set(s)} />;
  return <Shell api={api} route={route} email={session.email} signOut={store.signOut} />;
};

const Shell = ({ api, route, email, signOut }: { api: ApiClient; route: Route; email: string; signOut: () => Promise<void> }) => {
  const workspaces = useLoad(() => api.listWorkspaces(), [api]);
  // every time on every page is printed in the console's zone: a change of it renders the pages again
  useZone();
  const workspaceId = 'workspaceId' in route ? route.workspaceId : undefined;
  // a signed-in user lands on the overview of their first workspace (the workspaces page when none)
  useEffect(() => {
    // the sign-in page, or the console's bare address (no page named)
    const home = route.page === 'signin' || /^#?\/?$/.test(location.hash);
    if (!home || !workspaces.data) return;
    const first = workspaces.data[0];
    navigate(first ? { page: 'overview', workspaceId: first.id } : { page: 'workspaces' });
  }, [route.page, workspaces.data]);
  const current = workspaces.data?.find((w) => w.id === workspaceId);
  return (
    <>
      <header class="top">
        <a href="#/workspaces" class="brand">
          Fleetstream
        </a>
        {workspaces.data && (
          <label class="switcher">
            <span>Workspace</span>
            <select
              aria-label="Workspace"
              title={current?.name}
              value={workspaceId ?? ''}
              onChange={(e) => {
                const id = e.currentTarget.value;
                if (id)
                  navigate(
                    route.page === 'device' || route.page === 'workspaces' || route.page === 'signin' || route.page === 'overview'
                      ? { page: 'overview', workspaceId: id }
                      : route.page === 'rollout'
                        ? { page: 'rollouts', workspaceId: id }
                        : route.page === 'group'
                          ? { page: 'groups', workspaceId: id }
                          : route.page === 'data'
                            ? { page: 'data', workspaceId: id }
                            : { page: route.page, workspaceId: id },
                  );
              }}
            >
              <option value="">Choose a workspace…</option>
              {workspaces.data.map((w: Workspace) => (
                <option value={w.id} title={w.name}>
                  {w.name}
                </option>
              ))}
            </select>
          </label>
        )}
        <span class="spacer" />
        <ZoneSetting />
        <LiveIndicator />
        <span class="who" title={email}>
          {email}
        </span>
        <button type="button" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      {workspaceId && (
        <nav class="tabs" aria-label="Workspace pages">
          {NAV.map(([page, title]) => (
            <a
              href={routeHash({ page, workspaceId })}
              aria-current={
                route.page === page ||
                (page === 'devices' && route.page === 'device') ||
                (page === 'rollouts' && route.page === 'rollout') ||
                (page === 'groups' && route.page === 'group')
                  ? 'page'
                  : undefined
              }
            >
              {title}
              {page === 'alarms' && (
                <>
                  {' '}
                  <OpenAlarmCount api={api} workspaceId={workspaceId} />
                </>
              )}
            </a>
          ))}
        </nav>
      )}
      <main>
        <ErrorBox error={workspaces.error} />
        {workspaces.loading && !workspaces.data && <Busy label="Loading your workspaces…" />}
        {workspaceId && current && (
          <h1 class="ws-title">
            <Name text={current.name} wide />
          </h1>
        )}
        {route.page === 'workspaces' || route.page === 'signin' ? (
          <WorkspacesPage api={api} workspaces={workspaces.data} reload={workspaces.reload} />
        ) : (
          workspaceId && <WorkspacePage api={api} route={route} workspaceId={workspaceId} reloadWorkspaces={workspaces.reload} />
        )}
      </main>
    </>
  );
};

const WorkspacePage = ({ api, route, workspaceId, reloadWorkspaces }: { api: ApiClient; route: Route; workspaceId: string; reloadWorkspaces: () => void }) => {
  const props = { api, workspaceId, navigate };
  switch (route.page) {
    case 'device':
      return <DevicePage {...props} deviceId={route.deviceId} />;
    case 'jobs':
      return <JobsPage {...props} group={route.group} />;
    case 'groups':
      return <GroupsPage {...props} />;
    case 'group':
      return <GroupPage {...props} groupId={route.groupId} />;
    case 'rollouts':
      return <RolloutsPage {...props} />;
    case 'alarms':
      return <AlarmsPage {...props} />;
    case 'rollout':
      return <RolloutPage {...props} rolloutId={route.rolloutId} />;
    case 'firmware':
      return <FirmwarePage {...props} />;
    case 'overview':
      return <OverviewPage {...props} />;
    case 'data':
      return <DataPage {...props} deviceId={route.deviceId} />;
    case 'integrations':
      return <IntegrationsPage {...props} />;
    case 'usage':
      return <UsagePage {...props} />;
    case 'settings':
      return <SettingsPage {...props} onWorkspaceDeleted={reloadWorkspaces} />;
    default:
      return <DevicesPage {...props} q={route.page === 'devices' ? route.q : undefined} />;
  }
};
