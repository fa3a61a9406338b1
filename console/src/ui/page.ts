import type { ApiClient } from '../lib/api';
import { routeHash, type Route } from '../lib/router';

/** What every page of a workspace gets. */
export interface PageProps {
  api: ApiClient;
  workspaceId: string;
  navigate: (route: Route) => void;
}

/** Goes to a page of the console by setting the address's hash (the app follows `hashchange`). */
export const navigate = (route: Route) => {
  location.hash = routeHash(route);
};
