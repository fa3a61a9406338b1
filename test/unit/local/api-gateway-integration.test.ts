import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import type { ServerResponse } from 'node:http';
import { ROUTE_HANDLER_TIMEOUT_SECONDS } from '../../../lambdas/routes';
import { proxyIntegration } from '../../../local/api-gateway-integration';

// `npm start`'s gateway gives a route's handler the timeout the stack gives its Lambda
// (lib/fleetstream-stack.ts): 29 s buffered, 5 minutes streamed. With 30 s for every route, a long
// streamed answer (a fleet-wide scheduling on 100,000 devices) ran out of time here and not on AWS.
describe('the local proxy integration', () => {
  /** The time left that a handler of this route sees as it starts. */
  const remainingAtStart = async (stream: boolean) => {
    let remaining = 0;
    const handler = async (_event: APIGatewayProxyEvent, context: Context) => {
      remaining = context.getRemainingTimeInMillis();
      return { statusCode: 200, body: '{}' };
    };
    const res = { writeHead: () => res, end: () => res } as unknown as ServerResponse;
    const integrate = proxyIntegration(
      async () => handler,
      () => undefined,
    );
    await integrate({ method: 'GET', path: '/x', handler: 'x', auth: 'none', stream }, {} as APIGatewayProxyEvent, res, 'req-1');
    return remaining;
  };

  it.each([
    [false, ROUTE_HANDLER_TIMEOUT_SECONDS.buffered],
    [true, ROUTE_HANDLER_TIMEOUT_SECONDS.streamed],
  ])('counts down from the stack’s timeout (streamed: %s, %i s)', async (stream, seconds) => {
    const remaining = await remainingAtStart(stream);

    expect(remaining).toBeLessThanOrEqual(seconds * 1000);
    expect(remaining).toBeGreaterThan(seconds * 1000 - 5_000);
  });
});
