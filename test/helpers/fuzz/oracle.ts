/**
 * Sends fuzzed requests and judges each answer against the OpenAPI document and the interface's
 * rules: no 5xx; a documented status; a body that matches the documented schema; the status the
 * request's family requires, if any; and a registry left exactly as it was by any answer ≥ 400
 * to a request that could write. Counts every request by status, and keeps, per kind of
 * failure, the shortest request that showed it.
 */
import { documentedKey, type Operation, type Validators } from './openapi';
import { describeRequest, type Auth, type FuzzRequest } from './requests';
import { sendRaw, type RawResponse } from './raw-http';
import { diffSnapshots, type Snapshot } from './registry-snapshot';

export interface Violation {
  /** Stable across runs, to group findings: `5xx`, `undocumented 409`, `expected 404, got 400`, … */
  kind: string;
  detail: string;
}

export interface Finding {
  operationId: string;
  family: string;
  kind: string;
  count: number;
  /** The shortest request that showed it, and what came back. */
  example: string;
}

export interface OracleOptions {
  /** `http://127.0.0.1:port/v3` */
  baseUrl: string;
  validators: Validators;
  snapshot: () => Promise<Snapshot>;
  credentials: () => Promise<Record<Auth, Record<string, string>>>;
}

const isErrorEnvelope = (text: string) => {
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown; details?: unknown }; request_id?: unknown };
    return (
      typeof body.error?.code === 'string' && typeof body.error.message === 'string' && Array.isArray(body.error.details) && typeof body.request_id === 'string'
    );
  } catch {
    return false;
  }
};

/** The stage prefix of the base URL (`/v3`), to build request lines. */
const stagePath = (baseUrl: string) => new URL(baseUrl).pathname.replace(/\/$/, '');

export const createOracle = ({ baseUrl, validators, snapshot, credentials }: OracleOptions) => {
  const origin = new URL(baseUrl).origin;
  const stage = stagePath(baseUrl);
  const byStatus = new Map<number, number>();
  const findings = new Map<string, Finding>();
  let requests = 0;
  let snapshots = 0;
  // The registry as of the last check; undefined after a write succeeded (re-read before the next one).
  let baseline: Snapshot | undefined;

  const read = async () => {
    snapshots++;
    return snapshot();
  };

  /** A 400 about the body alone, for a request whose point is a path parameter (see FuzzRequest.notRefusedFor). */
  const excused = (req: FuzzRequest, res: RawResponse) => {
    if (res.status !== 400 || !req.notRefusedFor) return false;
    try {
      const fields = (JSON.parse(res.text) as { error: { details: Array<{ field: string }> } }).error.details.map((d) => d.field);
      return fields.length > 0 && fields.every((f) => !f.startsWith('path') && !f.includes(req.notRefusedFor!));
    } catch {
      return false;
    }
  };

  const judgeAnswer = (op: Operation, req: FuzzRequest, res: RawResponse): Violation[] => {
    const out: Violation[] = [];
    if (res.status === 0) return [{ kind: 'no answer', detail: `no answer: ${res.error}` }];
    if (res.status >= 500) out.push({ kind: `${res.status}`, detail: `server error ${res.status}` });
    const key = req.offRoute ? undefined : documentedKey(op, res.status);
    if (req.offRoute) {
      // No operation answers: the gateway does, in the error envelope of every answer.
      if (!isErrorEnvelope(res.text))
        out.push({ kind: `${res.status} not an error envelope`, detail: `the gateway's ${res.status} is not the error envelope` });
    } else if (!key) {
      out.push({
        kind: `undocumented ${res.status}`,
        detail: `status ${res.status} is not documented for ${op.operationId} (documented: ${Object.keys(op.responses).join(', ')})`,
      });
    } else if (op.responses[key]) {
      let body: unknown;
      try {
        body = JSON.parse(res.text);
      } catch {
        out.push({ kind: `${res.status} not JSON`, detail: `the ${res.status} answer is not JSON` });
      }
      if (body !== undefined) {
        if (!String(res.headers['content-type'] ?? '').includes('application/json')) {
          out.push({ kind: `${res.status} content-type`, detail: `content-type ${res.headers['content-type']} instead of application/json` });
        }
        const validate = validators.response(op, key);
        if (!validate(body))
          out.push({
            kind: `${res.status} body off schema`,
            detail: `the ${res.status} body does not match the documented schema: ${validators.describe(validate)}`,
          });
      }
    }
    if (req.expect && !req.expect.includes(res.status) && !excused(req, res)) {
      out.push({ kind: `expected ${req.expect.join('|')}, got ${res.status}`, detail: `expected ${req.expect.join(' or ')} (${req.why}), got ${res.status}` });
    }
    return out;
  };

  const record = (req: FuzzRequest, res: RawResponse, violations: Violation[]) => {
    const example = `${describeRequest(req)}\n      → ${res.status || res.error} ${res.text.slice(0, 300)}`;
    for (const v of violations) {
      const id = `${req.op.operationId}|${req.family}|${v.kind}`;
      const known = findings.get(id);
      if (!known) findings.set(id, { operationId: req.op.operationId, family: req.family, kind: v.kind, count: 1, example });
      else {
        known.count++;
        if (example.length < known.example.length) known.example = example;
      }
    }
  };

  /**
   * Sends one request and checks its answer. Resolves with the violations found (empty when the
   * answer is right); the registry is read before and after any request that could write.
   */
  const exchange = async (req: FuzzRequest): Promise<{ res: RawResponse; violations: Violation[] }> => {
    const writes = req.method !== 'GET';
    if (writes && !baseline) baseline = await read();
    const headers: Record<string, string> = { accept: 'application/json', ...(await credentials())[req.auth] };
    if (req.contentType !== undefined) headers['content-type'] = req.contentType;
    const res = await sendRaw(origin, { method: req.method, target: stage + req.target, headers, body: req.body });
    requests++;
    byStatus.set(res.status, (byStatus.get(res.status) ?? 0) + 1);
    const violations = judgeAnswer(req.op, req, res);
    if (writes) {
      if (res.status >= 400 || res.status === 0) {
        const after = await read();
        const changes = diffSnapshots(baseline!, after);
        if (changes.length) {
          violations.push({
            kind: `${res.status || 'no answer'} left a write behind`,
            detail: `a ${res.status || 'request without answer'} changed the registry:\n        ${changes.join('\n        ')}`,
          });
        }
        baseline = after;
      } else {
        baseline = undefined;
      }
    }
    if (violations.length) record(req, res, violations);
    return { res, violations };
  };

  /** Sends a request and throws (for fast-check to shrink) when its answer breaks a rule. */
  const check = async (req: FuzzRequest) => {
    const { res, violations } = await exchange(req);
    if (violations.length) {
      throw new Error(
        `${violations.map((v) => v.detail).join('\n')}\n    request: ${describeRequest(req)}\n    answer: ${res.status || res.error} ${res.text.slice(0, 500)}`,
      );
    }
  };

  const summary = () => {
    const statuses = [...byStatus.entries()]
      .sort(([a], [b]) => a - b)
      .map(([s, n]) => `${s || 'none'}×${n}`)
      .join(' ');
    return { requests, snapshots, statuses, findings: [...findings.values()] };
  };

  return { exchange, check, summary };
};
