import type { startFauxqs } from 'fauxqs';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { LOCAL_AWS_ENV, type DynamoDbLocal } from '../dynamodb-local';
import type { LocalRuntimeOptions } from '../runtime';
import type { LocalS3 } from '../s3-engine';
import type { LocalSes } from '../ses-engine';
import type { CallRecord, PolicyStatement } from './iam';
import type { LocalLambda } from './lambda-host';
import { resolver, type AssemblyStack, type CfnResource, type CfnTemplate, type Physical, type Pseudo } from './template';

export const ACCOUNT = '000000000000'; // fauxqs's account, so that its queue ARNs are the template's
// The console's distribution's domain here: of the reserved `.invalid` domain, as nothing serves it.
export const CONSOLE_DOMAIN = 'console.cloud-assembly.invalid';
export const API_ID = 'local';

/** What the cloud-assembly runtime is started with: the local runtime's options, and the assembly. */
export interface CloudAssemblyOptions extends LocalRuntimeOptions {
  /** A synthesized cloud assembly (`cdk.out`); synthesized into a temporary folder when absent. */
  assemblyDir?: string;
  /** Where the IAM report (every call, the refused ones, the grants never used) is written at stop. */
  reportFile?: string;
  /**
   * Starts each function's container at its first invocation, as Lambda does, rather than all 26
   * when the runtime starts (a test file invokes a few of them). The custom resources' providers
   * start at once, as CloudFormation runs them during the deploy.
   */
  functionsOnFirstUse?: boolean;
}

/** What a start has before it reads the template: its options, its log, and what it collects from the first phase on. */
export interface StartBase {
  options: CloudAssemblyOptions;
  log: (message: string) => void;
  /** What to stop, in the order it started: the stop runs them in reverse. */
  stops: Array<() => Promise<void>>;
  /** Every AWS call a proxy recorded, for the report. */
  calls: CallRecord[];
}

/** The local engines the template's data resources are created on. */
export interface Engines {
  dynamo: DynamoDbLocal;
  sqs: Awaited<ReturnType<typeof startFauxqs>>;
  s3: LocalS3;
  /** The SES v2 emulator alarm e-mails go to. */
  ses: LocalSes;
}

/** What every phase of a start shares: the template, what the engines made of its resources, and what the run collects. */
export interface RunContext extends StartBase {
  /** The stack with the local runtime's tuning applied. */
  stack: AssemblyStack;
  template: CfnTemplate;
  region: string;
  /** The cloud assembly's part of the data folder, when there is one. */
  dataDir: string | undefined;
  pseudo: Pseudo;
  engines: Engines;
  /** What the engines made of each resource, by logical ID: what `resolve` reads. */
  physical: Map<string, Physical>;
  resolve: (value: unknown) => any;
  /** A resource's name: the one the template gives, or `<stack>-<id>`. */
  nameOf: (id: string, given: unknown) => string;
  /** The template's functions, by logical ID, as they start. */
  lambdas: Map<string, LocalLambda>;
  /** The statements each role proxy checks calls against, by function or role ID. */
  roles: Record<string, PolicyStatement[]>;
  /** What a service may not invoke, as the template's AWS::Lambda::Permissions say. */
  invokeRefusals: string[];
  /** The routes (`METHOD /path`) whose function a request reached. */
  routesServed: Set<string>;
  /** What this run adds to its tables' names on a shared engine (`dynamoDbEndpoint`), or ''. */
  tableSuffix: string;
}

/** The cloud assembly's part of the data folder (apart from the sources' data: other table names, another bootstrap account), made. */
export const dataDirOf = (options: CloudAssemblyOptions): string | undefined => {
  const dataDir = options.dataDir && join(options.dataDir, 'cloud-assembly');
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  return dataDir;
};

/** The context of a start once its engines run: the pseudo parameters of a local deployment, and a resolver against `physical`. */
export const runContext = (base: StartBase, stack: AssemblyStack, dataDir: string | undefined, engines: Engines): RunContext => {
  const { template } = stack;
  const region = LOCAL_AWS_ENV.AWS_REGION;
  const pseudo: Pseudo = {
    'AWS::AccountId': ACCOUNT,
    'AWS::Region': region,
    'AWS::Partition': 'aws',
    'AWS::URLSuffix': 'amazonaws.com',
    'AWS::StackName': stack.name,
    'AWS::StackId': `arn:aws:cloudformation:${region}:${ACCOUNT}:stack/${stack.name}/local`,
  };
  const physical = new Map<string, Physical>();
  const resolve = resolver((id) => physical.get(id) ?? genericPhysical(stack.name, id, template.Resources[id], region), pseudo);
  const nameOf = (id: string, given: unknown) => (typeof given === 'string' ? given : `${stack.name}-${id}`);
  return {
    ...base,
    stack,
    template,
    region,
    dataDir,
    pseudo,
    engines,
    physical,
    resolve,
    nameOf,
    lambdas: new Map(),
    roles: {},
    invokeRefusals: [],
    routesServed: new Set(),
    tableSuffix: base.options.dynamoDbEndpoint ? `-${randomBytes(4).toString('hex')}` : '',
  };
};

/**
 * A resource with no engine here: its `Ref` is a name, its `Arn` one of its service's shape (which
 * only policies use: no proxy checks that service's calls).
 */
const genericPhysical = (stackName: string, id: string, resource: CfnResource | undefined, region: string): Physical | undefined => {
  if (!resource) return undefined;
  const name = `${stackName}-${id}`;
  const [, service, kind] = resource.Type.split('::');
  const arn: Record<string, string> = service && kind ? { Arn: `arn:aws:${service.toLowerCase()}:${region}:${ACCOUNT}:${kind.toLowerCase()}/${name}` } : {};
  // The console's distribution (the API's CORS origin) gets a host of the reserved `.invalid` domain:
  // here the console is served from the API's own origin, which needs no CORS.
  const domain: Record<string, string> = resource.Type === 'AWS::CloudFront::Distribution' ? { DomainName: CONSOLE_DOMAIN } : {};
  return { ref: name, attributes: resource.Type.startsWith('AWS::') ? { ...arn, ...domain } : {} };
};
