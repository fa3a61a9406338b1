/** A page of the console, as its address names it (`#/w/<workspace>/devices/<device>`). */
export type Route =
  | { page: 'signin' }
  | { page: 'workspaces' }
  | { page: 'overview'; workspaceId: string }
  | { page: 'devices'; workspaceId: string }
  | { page: 'device'; workspaceId: string; deviceId: string }
  | { page: 'jobs'; workspaceId: string }
  | { page: 'rollouts'; workspaceId: string }
  | { page: 'rollout'; workspaceId: string; rolloutId: string }
  | { page: 'firmware'; workspaceId: string }
  | { page: 'data'; workspaceId: string; deviceId?: string }
  | { page: 'integrations'; workspaceId: string }
  | { page: 'usage'; workspaceId: string }
  | { page: 'settings'; workspaceId: string };

const WORKSPACE_PAGES = ['overview', 'devices', 'jobs', 'rollouts', 'firmware', 'data', 'integrations', 'usage', 'settings'] as const;

/** Reads a location hash; an unknown one is the workspaces page. */
export const parseRoute = (hash: string): Route => {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'signin') return { page: 'signin' };
  if (parts[0] === 'w' && parts[1]) {
    const workspaceId = parts[1];
    if (parts[2] === 'devices' && parts[3]) return { page: 'device', workspaceId, deviceId: parts[3] };
    if (parts[2] === 'rollouts' && parts[3]) return { page: 'rollout', workspaceId, rolloutId: parts[3] };
    if (parts[2] === 'data' && parts[3]) return { page: 'data', workspaceId, deviceId: parts[3] };
    // The workspace's home: its overview.
    if (!parts[2]) return { page: 'overview', workspaceId };
    const page = (WORKSPACE_PAGES as readonly string[]).includes(parts[2]) ? (parts[2] as (typeof WORKSPACE_PAGES)[number]) : 'devices';
    return { page, workspaceId };
  }
  return { page: 'workspaces' };
};

/** The hash of a route (`parseRoute(routeHash(r))` is `r`). */
export const routeHash = (route: Route): string => {
  const e = encodeURIComponent;
  switch (route.page) {
    case 'signin':
    case 'workspaces':
      return `#/${route.page}`;
    case 'device':
      return `#/w/${e(route.workspaceId)}/devices/${e(route.deviceId)}`;
    case 'rollout':
      return `#/w/${e(route.workspaceId)}/rollouts/${e(route.rolloutId)}`;
    case 'data':
      return route.deviceId ? `#/w/${e(route.workspaceId)}/data/${e(route.deviceId)}` : `#/w/${e(route.workspaceId)}/data`;
    default:
      return `#/w/${e(route.workspaceId)}/${route.page}`;
  }
};
