import type { APIGatewayAuthorizerResult, APIGatewayProxyResult } from 'aws-lambda';
import type { Server } from 'node:http';
import type { LocalCognito } from '../cognito-local';
import { consoleSite } from '../console-site';
import { startApiGateway, type GatewayAuthorizer, type GatewayResponse, type GatewayResponseType, type GatewayRoute } from '../api-gateway';
import { localAwsLambda, type ResponseStream } from '../lambda-streaming';
import { holdPort } from '../ports';
import type { ConsoleDeployment } from './buckets';
import type { MayInvoke } from './policies';
import { firewallOf, stageThrottlesOf } from './api-throttling';
import { ACCOUNT, API_ID, type RunContext } from './run-context';
import { functionsIn, resourcesOfType, targetOf, type AssemblyStack, type CfnResource } from './template';

// The handler key of a route whose function API Gateway may not invoke.
const NO_PERMISSION = 'no-permission:';

/** Where the API answers: the port held for the gateway until it starts, and the API's address in the template and here. */
export interface ApiAddress {
  held: { port: number; release: () => Promise<void> };
  port: number;
  /** The template's (first) stage, and its name. */
  stage: CfnResource | undefined;
  stageName: string;
  /** The API's address as the template writes it. */
  cloudApiUrl: string;
  /** Where it answers here. */
  localApiUrl: string;
}

/** Holds the gateway's port (a failed start lets go of it too), so that the functions' environments can name it before the gateway starts. */
export const holdApiPort = async ({ options, stops, region }: RunContext, stage: CfnResource | undefined): Promise<ApiAddress> => {
  const held = await holdPort(options.port || 0);
  stops.push(held.release); // a failed start lets go of it too
  const { port } = held;
  const stageName = stage?.Properties?.StageName ?? 'v3';
  // The API's address as the template writes it, and where it answers here.
  const cloudApiUrl = `https://${API_ID}.execute-api.${region}.amazonaws.com`;
  const localApiUrl = `http://127.0.0.1:${port}`;
  return { held, port, stage, stageName, cloudApiUrl, localApiUrl };
};

/** The API as the gateway serves it: the template's routes, those served (a route API Gateway may not invoke fails), authorizers and gateway responses. */
export interface ApiPlan {
  routes: GatewayRoute[];
  servedRoutes: GatewayRoute[];
  authorizers: Record<string, GatewayAuthorizer>;
  gatewayResponses: Partial<Record<GatewayResponseType, GatewayResponse>>;
}

/**
 * The API, from its resources and methods, run by the template's functions (started by now).
 * @throws Error for an authorizer that names no function of the template, or whose identity source is not a header
 */
export const planApi = (run: RunContext, { stageName }: ApiAddress, mayInvoke: MayInvoke): ApiPlan => {
  const { stack, region, log } = run;
  const executeApiArn = `arn:aws:execute-api:${region}:${ACCOUNT}:${API_ID}`;
  const { routes, authorizerIds } = apiRoutes(stack);
  const authorizers = gatewayAuthorizersOf(run, authorizerIds, executeApiArn, mayInvoke);
  const gatewayResponses = gatewayResponsesOf(run);
  // A method whose function lacks an invoke permission for it fails as on AWS (a configuration error).
  const servedRoutes = routes.map((r) => {
    const sourceArn = `${executeApiArn}/${stageName}/${r.method}${r.path.replace(/\{[^}]+\}/g, 'x')}`;
    if (mayInvoke(r.handler, sourceArn)) return r;
    log(`API Gateway may not invoke ${r.handler} for ${r.method} ${r.path} (no AWS::Lambda::Permission): it answers 5xx`);
    return { ...r, handler: `${NO_PERMISSION}${r.handler}` };
  });
  return { routes, servedRoutes, authorizers, gatewayResponses };
};

/** The REQUEST authorizers, each with its identity source and cache TTL, invoked only with API Gateway's invoke permission. */
const gatewayAuthorizersOf = (
  { template, lambdas }: RunContext,
  authorizerIds: string[],
  executeApiArn: string,
  mayInvoke: MayInvoke,
): Record<string, GatewayAuthorizer> => {
  const gatewayAuthorizers: Record<string, GatewayAuthorizer> = {};
  for (const authorizerId of authorizerIds) {
    const props = template.Resources[authorizerId].Properties!;
    const [fnId] = functionsIn(template, props.AuthorizerUri);
    const lambda = lambdas.get(fnId);
    if (!lambda) throw new Error(`Authorizer ${authorizerId} names no function of the template.`);
    const sources = String(props.IdentitySource ?? '')
      .split(',')
      .map((source) => source.trim())
      .filter(Boolean);
    const headers = sources.map((source) => /^method\.request\.header\.(.+)$/.exec(source)?.[1]);
    if (headers.some((header) => !header))
      throw new Error(`Authorizer ${authorizerId}: identity source ${props.IdentitySource} is not a header; only header identity sources run here.`);
    const allowed = mayInvoke(fnId, `${executeApiArn}/authorizers/${authorizerId}`);
    gatewayAuthorizers[authorizerId] = {
      functionName: fnId,
      identityHeaders: headers as string[],
      // API Gateway's default when the template leaves it out: 300 s.
      cacheTtlMs: (props.AuthorizerResultTtlInSeconds ?? 300) * 1000,
      handler: async (event, context) => {
        if (!allowed) throw new Error(`API Gateway may not invoke ${fnId}: no AWS::Lambda::Permission for authorizer ${authorizerId}`);
        return (await lambda.invoke(event, context.awsRequestId)) as APIGatewayAuthorizerResult;
      },
    };
  }
  return gatewayAuthorizers;
};

/** The AWS::ApiGateway::GatewayResponses: status, headers and template of each response type. */
const gatewayResponsesOf = ({ template, resolve }: RunContext): Partial<Record<GatewayResponseType, GatewayResponse>> => {
  const gatewayResponses: Partial<Record<GatewayResponseType, GatewayResponse>> = {};
  for (const [, response] of resourcesOfType(template, 'AWS::ApiGateway::GatewayResponse')) {
    const props = response.Properties!;
    const headers = Object.fromEntries(
      Object.entries((props.ResponseParameters ?? {}) as Record<string, string>)
        .filter(([k]) => k.startsWith('gatewayresponse.header.'))
        // A header may be built from the stack's values (the console's origin): resolved first.
        .map(([k, v]) => [k.slice('gatewayresponse.header.'.length).toLowerCase(), String(resolve(v)).replace(/^'|'$/g, '')]),
    );
    gatewayResponses[props.ResponseType as GatewayResponseType] = {
      status: props.StatusCode ? Number(props.StatusCode) : undefined,
      headers,
      template: props.ResponseTemplates?.['application/json'] ?? '{"message":$context.error.messageString}',
    };
  }
  return gatewayResponses;
};

/**
 * Starts the gateway on the held port: the API's routes behind the stage's web ACL and method
 * throttles, and outside its stage the console the template deploys.
 */
export const startGateway = async (
  run: RunContext,
  { held, port, stage, stageName }: ApiAddress,
  api: ApiPlan,
  { consoleBucket, consoleConfig }: ConsoleDeployment,
  cognito: LocalCognito | undefined,
): Promise<void> => {
  const { options, stops, lambdas, routesServed, engines } = run;
  await held.release();
  // The stage's throttles, as its method settings say, and the per-IP rate of its web ACL.
  const { throttle, methodThrottles } = stageThrottlesOf(stage);
  const stageId = resourcesOfType(run.template, 'AWS::ApiGateway::Stage').find(([, resource]) => resource === stage)?.[0];
  const firewall = firewallOf(run.template, stageId, run.log);
  const server: Server = await startApiGateway({
    port,
    stage: stageName,
    firewall,
    throttle,
    methodThrottles,
    outsideStage:
      consoleConfig &&
      consoleSite({
        distDir: options.consoleDistDir ?? consoleBucket!,
        // The deployed config has no cognitoEndpoint (the console then calls the region's Cognito): here it is cognito-local.
        config: () => ({ ...consoleConfig, ...(cognito ? { cognitoEndpoint: cognito.endpoint } : {}) }),
        outbox: () => cognito?.outbox ?? [],
        // The firmware page's presigned uploads go to the local S3 (the deployed policy names the bucket).
        uploadOrigins: () => [engines.s3.endpoint],
      }),
    routes: api.servedRoutes,
    onIntegration: (route) => routesServed.add(route),
    authorizers: api.authorizers,
    gatewayResponses: api.gatewayResponses,
    loadHandler: async (fnId) => {
      if (fnId.startsWith(NO_PERMISSION))
        throw new Error(`Execution failed due to configuration error: invalid permissions on Lambda function ${fnId.slice(NO_PERMISSION.length)}`);
      const lambda = lambdas.get(fnId)!;
      // Whether the handler streams is known once it has loaded (its first use, with functionsOnFirstUse).
      await lambda.start();
      if (lambda.streaming) {
        const streamed = async (event: unknown, stream: ResponseStream, context: { awsRequestId: string }) =>
          lambda.invokeStreaming(event, stream, context.awsRequestId);
        return localAwsLambda.streamifyResponse(streamed as never) as never;
      }
      return (async (event: unknown, context: { awsRequestId: string }) =>
        (await lambda.invoke(event, context.awsRequestId)) as APIGatewayProxyResult) as never;
    },
  });
  stops.push(
    () =>
      new Promise<void>((resolveClose) => {
        server.close(() => resolveClose());
        server.closeAllConnections();
      }),
  );
};

/**
 * The API's routes from the template: every AWS::ApiGateway::Method on its resource's full path,
 * with the function its AWS_PROXY integration names, its authorizer and its transfer mode.
 * @throws Error for an integration that cannot run here (not a Lambda proxy)
 */
export const apiRoutes = (stack: AssemblyStack): { routes: GatewayRoute[]; authorizerIds: string[] } => {
  const { template } = stack;
  const paths = new Map<string, string>();
  const pathOf = (id: string): string => {
    const known = paths.get(id);
    if (known !== undefined) return known;
    const { ParentId, PathPart } = template.Resources[id].Properties!;
    // The root's children point at RestApi.RootResourceId.
    const parentId = ParentId?.['Fn::GetAtt'] ? undefined : targetOf(ParentId);
    const path = `${parentId ? pathOf(parentId) : ''}/${PathPart}`;
    paths.set(id, path);
    return path;
  };
  const routes: GatewayRoute[] = [];
  const authorizerIds = new Set<string>();
  for (const [id, method] of resourcesOfType(template, 'AWS::ApiGateway::Method')) {
    const props = method.Properties!;
    if (props.HttpMethod === 'OPTIONS' && props.Integration?.Type === 'MOCK') continue; // CORS preflight
    const path = props.ResourceId?.['Fn::GetAtt'] ? '/' : pathOf(targetOf(props.ResourceId)!);
    if (props.Integration?.Type !== 'AWS_PROXY')
      throw new Error(`${id} (${props.HttpMethod} ${path}): integration ${props.Integration?.Type} does not run here (Lambda proxy only).`);
    const [fnId] = functionsIn(template, props.Integration.Uri);
    if (!fnId) throw new Error(`${id} (${props.HttpMethod} ${path}) integrates no function of the template.`);
    let auth = 'none';
    if (props.AuthorizationType === 'CUSTOM') {
      auth = targetOf(props.AuthorizerId)!;
      authorizerIds.add(auth);
    } else if (props.AuthorizationType && props.AuthorizationType !== 'NONE') {
      throw new Error(`${id}: authorization ${props.AuthorizationType} does not run here.`);
    }
    routes.push({ method: props.HttpMethod, path, handler: fnId, auth, stream: props.Integration.ResponseTransferMode === 'STREAM' });
  }
  return { routes, authorizerIds: [...authorizerIds] };
};
