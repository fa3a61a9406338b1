/** A minimal API client for the e2e tests: JSON in, status + JSON out. */
export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

// Attempts of a request answered 429 rate_limited before its answer is handed over.
const RATE_LIMITED_ATTEMPTS = 5;

/**
 * How long to wait before sending a refused request again: its Retry-After, plus up to a second
 * more at random (a jitter). Without it, requests refused together come back
 * together, a second later at the same offset, when the rate's new second is already used by
 * requests that were admitted, and a busy test can see one refused five times over.
 */
export const retryDelayMs = (answer: ApiResponse) => Number(answer.headers.get('retry-after') ?? 1) * 1000 + Math.random() * 1000;

/**
 * The client of one credential. A request answered `429 rate_limited` (the key's
 * requests_per_second_per_key) is sent again after its Retry-After and a jitter, as a well-behaved
 * client does, unless `retryRateLimited` is false (a test of the rate itself).
 */
export const apiClient = (baseUrl: string, apiKey?: string, { retryRateLimited = true } = {}) => {
  const call = async <T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse<T>> => {
    for (let attempt = 1; ; attempt++) {
      const answer = await once<T>(method, path, body, headers);
      if (
        !retryRateLimited ||
        answer.status !== 429 ||
        (answer.body as { error?: { code?: string } } | undefined)?.error?.code !== 'rate_limited' ||
        attempt >= RATE_LIMITED_ATTEMPTS
      )
        return answer;
      await new Promise((resolve) => setTimeout(resolve, retryDelayMs(answer)));
    }
  };
  const once = async <T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse<T>> => {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: {
        'content-type': 'application/json',
        ...(apiKey ? { 'x-api-key': apiKey } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
  };
  return {
    call,
    get: <T = any>(path: string) => call<T>('GET', path),
    post: <T = any>(path: string, body?: unknown) => call<T>('POST', path, body),
    put: <T = any>(path: string, body?: unknown) => call<T>('PUT', path, body),
    delete: <T = any>(path: string) => call<T>('DELETE', path),
  };
};
export type ApiClient = ReturnType<typeof apiClient>;
