/** A page of the console, as its address names it (`#/w/<workspace>/devices/<device>`). */
export type Route =
  | { page: 'signin' }
  | { page: 'workspaces' }
  | { page: 'overview'; workspaceId: string }
  | { page: 'devices'; workspaceId: string; q?: string }
  | { page: 'device'; workspaceId: string; deviceId: string }
  | { page: 'jobs'; workspaceId: string; group?: string }
  | { page: 'groups'; workspaceId: string }
  | { page: 'group'; workspaceId: string; groupId: string }
  | { page: 'rollouts'; workspaceId: string }
  | { page: 'alarms'; workspaceId: string }
  | { page: 'rollout'; workspaceId: string; rolloutId: string }
  | { page: 'firmware'; workspaceId: string }
  | { page: 'data'; workspaceId: string; deviceId?: string }
  | { page: 'integrations'; workspaceId: string }
  | { page: 'usage'; workspaceId: string }
  | { page: 'settings'; workspaceId: string };

const WORKSPACE_PAGES = ['overview', 'devices', 'alarms', 'groups', 'jobs', 'rollouts', 'firmware', 'data', 'integrations', 'usage', 'settings'] as const;

/**
 * Reads a location hash; an unknown one is the workspaces page. What follows a `?` is the page's
 * parameters (the devices' query `q`, the jobs page's `group`), so that a search can be shared.
 */
export const parseRoute = (hash: string): Route => {
  const [path, search = ''] = hash.replace(/^#\/?/, '').split(/\?(.*)/s);
  const params = new URLSearchParams(search);
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'signin') return { page: 'signin' };
  if (parts[0] === 'w' && parts[1]) {
    const workspaceId = parts[1];
    if (parts[2] === 'devices' && parts[3]) return { page: 'device', workspaceId, deviceId: parts[3] };
    if (parts[2] === 'rollouts' && parts[3]) return { page: 'rollout', workspaceId, rolloutId: parts[3] };
    if (parts[2] === 'data' && parts[3]) return { page: 'data', workspaceId, deviceId: parts[3] };
    if (parts[2] === 'groups' && parts[3]) return { page: 'group', workspaceId, groupId: parts[3] };
    if (parts[2] === 'devices' && params.get('q')) return { page: 'devices', workspaceId, q: params.get('q')! };
    if (parts[2] === 'jobs' && params.get('group')) return { page: 'jobs', workspaceId, group: params.get('group')! };
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
    case 'group':
      return `#/w/${e(route.workspaceId)}/groups/${e(route.groupId)}`;
    case 'devices':
      return `#/w/${e(route.workspaceId)}/devices${route.q ? `?q=${e(route.q)}` : ''}`;
    case 'jobs':
      return `#/w/${e(route.workspaceId)}/jobs${route.group ? `?group=${e(route.group)}` : ''}`;
    case 'data':
      return route.deviceId ? `#/w/${e(route.workspaceId)}/data/${e(route.deviceId)}` : `#/w/${e(route.workspaceId)}/data`;
    default:
      return `#/w/${e(route.workspaceId)}/${route.page}`;
  }
};
