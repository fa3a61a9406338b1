import type { Details } from './api-gateway-responses';

/** A route as the gateway serves it: from the route table, or from a template's methods (cloud-assembly mode). */
export interface GatewayRoute {
  readonly method: string;
  /** Path below the stage, with `{name}` parameters. */
  readonly path: string;
  /** What `loadHandler` is given: a route table handler folder, or a function's logical ID. */
  readonly handler: string;
  /** The key of its authorizer in `authorizers`, or 'none'. */
  readonly auth: string;
  /** The integration streams its answer (ResponseTransferMode STREAM). */
  readonly stream?: boolean;
}

/** A route ready to be matched. */
export interface CompiledRoute {
  route: GatewayRoute;
  /** The route's path split into segments; `{name}` segments are parameters. */
  segments: string[];
}

/** A route that matched a request, with its decoded path parameters. */
export interface RouteMatch {
  route: GatewayRoute;
  pathParameters: Record<string, string>;
}

/** Splits a route's path into the segments it is matched by. */
export const compileRoute = (route: GatewayRoute): CompiledRoute => ({ route, segments: route.path.split('/').slice(1) });

/**
 * Matches a request path, still percent-encoded and split on its literal slashes, against a route:
 * as API Gateway does, an encoded slash (`%2F`) or dot (`%2e%2e`) stays inside its segment and is
 * never a separator or a `..` that climbs, and parameters are decoded only once matched.
 */
const matchRoute = (compiled: CompiledRoute, segments: string[]): Record<string, string> | undefined => {
  // A trailing slash is ignored, as by API Gateway and the handlers' router.
  const wanted = segments.length > 1 && segments.at(-1) === '' ? segments.slice(0, -1) : segments;
  if (wanted.length !== compiled.segments.length) return undefined;
  const params: Record<string, string> = {};
  for (const [i, part] of compiled.segments.entries()) {
    const name = /^\{(\w+)\}$/.exec(part)?.[1];
    if (name) {
      if (!wanted[i]) return undefined;
      params[name] = decodeURIComponent(wanted[i]);
    } else if (wanted[i] !== part) return undefined;
  }
  return params;
};

/** The first route of `method` whose path matches `path` (below the stage, still percent-encoded). */
export const findRoute = (routes: readonly CompiledRoute[], method: string, path: string): RouteMatch | undefined => {
  const segments = path.split('/').slice(1);
  for (const compiled of routes) {
    if (compiled.route.method !== method) continue;
    const pathParameters = matchRoute(compiled, segments);
    if (pathParameters) return { route: compiled.route, pathParameters };
  }
  return undefined;
};

/** `decodeURIComponent`, or undefined for malformed percent-encoding (`%zz`, a cut or invalid UTF-8 sequence). */
const decoded = (text: string): string | undefined => {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
};

/**
 * Splits the request target into its encoded path and its decoded query parameters (`+` is a
 * space, as in forms), or names the parts whose percent-encoding is malformed.
 */
export const parseTarget = (target: string) => {
  const at = target.indexOf('?');
  const path = at < 0 ? target : target.slice(0, at);
  const rawQuery = at < 0 ? '' : target.slice(at + 1);
  const details: Details = [];
  if (path.split('/').some((segment) => decoded(segment) === undefined)) {
    details.push({ field: 'path', message: 'Malformed percent-encoding in the path.' });
  }
  const query: Array<[string, string]> = [];
  for (const pair of rawQuery.split('&')) {
    if (!pair) continue;
    const eq = pair.indexOf('=');
    const [key, value] = (eq < 0 ? [pair, ''] : [pair.slice(0, eq), pair.slice(eq + 1)]).map((part) => decoded(part.replace(/\+/g, ' ')));
    if (key === undefined || value === undefined) {
      details.push({ field: 'query', message: `Malformed percent-encoding in the query: ${JSON.stringify(pair.slice(0, 64))}.` });
      continue;
    }
    query.push([key, value]);
  }
  return { path, query, details };
};
