import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { LocalLambda } from './lambda-host';
import { functionsIn, type CfnResource, type CfnTemplate, type Physical } from './template';

/**
 * CloudFormation's side of custom resources: each `Custom::*` (or `AWS::CloudFormation::CustomResource`)
 * of the template is created by invoking its ServiceToken's function from its bundle with a `Create`
 * request, and takes the answer the function PUTs to the pre-signed ResponseURL (here a local
 * server): its PhysicalResourceId is the `Ref`, its `Data` the attributes `Fn::GetAtt` reads.
 * https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-requests.html
 */

/** The custom resources of a template, by logical ID. */
export const customResourcesOf = (template: CfnTemplate): Array<[string, CfnResource]> =>
  Object.entries(template.Resources).filter(
    // BucketDeployment (the console's files and config.json into its bucket) only copies files at
    // deploy; nothing served here reads it, and its function is Python (runtime.ts skips it).
    ([, r]) => (r.Type.startsWith('Custom::') && r.Type !== 'Custom::CDKBucketDeployment') || r.Type === 'AWS::CloudFormation::CustomResource',
  );

/** The function a custom resource's ServiceToken names. @throws Error when it names none of the template */
export const providerOf = (template: CfnTemplate, id: string): string => {
  const [fnId] = functionsIn(template, template.Resources[id].Properties?.ServiceToken);
  if (!fnId) throw new Error(`Custom resource ${id}: its ServiceToken names no function of the template (SNS-backed custom resources do not run here).`);
  return fnId;
};

interface CfnAnswer {
  Status: 'SUCCESS' | 'FAILED';
  Reason?: string;
  PhysicalResourceId?: string;
  Data?: Record<string, unknown>;
}

/**
 * Creates the custom resources in template order, each by its provider's function.
 * @throws Error when a provider fails, answers FAILED, or does not answer (CloudFormation would wait an hour and roll back)
 */
export const createCustomResources = async (options: {
  template: CfnTemplate;
  resolve: (value: unknown) => any;
  stackId: string;
  lambdaOf: (fnId: string) => LocalLambda;
  onCreated: (id: string, physical: Physical) => void;
  log: (line: string) => void;
}): Promise<void> => {
  const resources = customResourcesOf(options.template);
  if (!resources.length) return;
  const answers = new Map<string, (answer: CfnAnswer) => void>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const settle = answers.get((req.url ?? '').slice(1));
      if (req.method !== 'PUT' || !settle) {
        res.writeHead(403).end();
        return;
      }
      try {
        settle(JSON.parse(Buffer.concat(chunks).toString('utf8')) as CfnAnswer);
        res.writeHead(200).end();
      } catch {
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  try {
    for (const [id, resource] of resources) {
      const fnId = providerOf(options.template, id);
      const properties = options.resolve(resource.Properties ?? {}) as Record<string, unknown>;
      const requestId = randomUUID();
      let answer: CfnAnswer | undefined;
      answers.set(requestId, (a) => (answer = a));
      options.log(`creating ${id} (${resource.Type}) with ${fnId}…`);
      await options
        .lambdaOf(fnId)
        .invoke({
          RequestType: 'Create',
          ServiceToken: properties.ServiceToken,
          ResponseURL: `${base}/${requestId}`,
          StackId: options.stackId,
          RequestId: requestId,
          LogicalResourceId: id,
          ResourceType: resource.Type,
          ResourceProperties: properties,
        })
        .catch((error: Error) => {
          throw new Error(`Custom resource ${id}: ${fnId} failed: ${error.name}: ${error.message}`);
        });
      const given = answer as CfnAnswer | undefined;
      if (!given)
        throw new Error(`Custom resource ${id}: ${fnId} returned without answering at the ResponseURL (CloudFormation would wait an hour, then roll back).`);
      if (given.Status !== 'SUCCESS') throw new Error(`Custom resource ${id} failed: ${given.Reason ?? 'no reason given'}`);
      const attributes = Object.fromEntries(Object.entries(given.Data ?? {}).map(([k, v]) => [k, String(v)]));
      options.onCreated(id, { ref: given.PhysicalResourceId ?? requestId, attributes });
    }
  } finally {
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
};
