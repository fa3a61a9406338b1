import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A synthesized CloudFormation template as the cloud-assembly runtime reads it: its resources by
 * kind, and a resolver of the intrinsic functions CDK writes (`Ref`, `Fn::GetAtt`, `Fn::Join`,
 * `Fn::Sub`, `Fn::Select`, `Fn::Split`, `Fn::ImportValue`) against what the local engines made
 * of each resource. Nothing here knows the stack's constructs: only CloudFormation's vocabulary.
 */

/** One resource of a template. */
export interface CfnResource {
  Type: string;
  Properties?: Record<string, any>;
  Metadata?: Record<string, any>;
  DependsOn?: string | string[];
}

export interface CfnTemplate {
  Resources: Record<string, CfnResource>;
  Outputs?: Record<string, { Value: unknown; Description?: string }>;
}

/** A stack of a cloud assembly (`cdk.out`): its template and the folder its assets are in. */
export interface AssemblyStack {
  name: string;
  template: CfnTemplate;
  /** The cloud assembly folder (asset paths are relative to it). */
  dir: string;
}

/**
 * Reads the stack of a cloud assembly folder (the only one, or `stackName`) from its manifest.
 * @throws Error when the folder holds no synthesized stack
 */
export const readAssembly = (dir: string, stackName?: string): AssemblyStack => {
  const manifestFile = join(dir, 'manifest.json');
  if (!existsSync(manifestFile)) throw new Error(`${dir} is not a cloud assembly (no manifest.json): run \`npx cdk synth -o ${dir}\` or leave the folder out.`);
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as { artifacts: Record<string, { type: string; properties?: { templateFile: string } }> };
  const stacks = Object.entries(manifest.artifacts).filter(([name, a]) => a.type === 'aws:cloudformation:stack' && (!stackName || name === stackName));
  if (stacks.length !== 1) throw new Error(`${dir} holds ${stacks.length} stacks${stackName ? ` named ${stackName}` : ''}; expected one.`);
  const [name, artifact] = stacks[0];
  return { name, dir, template: JSON.parse(readFileSync(join(dir, artifact.properties!.templateFile), 'utf8')) as CfnTemplate };
};

/** What the local engines made of a resource: its `Ref` and its attributes (`Arn`, `QueueUrl`, …). */
export interface Physical {
  ref: string;
  attributes: Record<string, string>;
}

/** A reference the template makes that the runtime cannot resolve: the template is wrong, or names something no engine runs. */
export class UnresolvableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnresolvableError';
  }
}

/** The pseudo parameters of a local deployment. */
export interface Pseudo {
  'AWS::AccountId': string;
  'AWS::Region': string;
  'AWS::Partition': string;
  'AWS::URLSuffix': string;
  'AWS::StackName': string;
  'AWS::StackId': string;
  'AWS::NoValue'?: undefined;
}

/**
 * Resolves a CloudFormation value: strings pass, intrinsic functions are evaluated against the
 * physical resources and pseudo parameters, objects and lists recursively. `AWS::NoValue` drops
 * the key or item.
 * @throws UnresolvableError naming the reference the runtime does not know
 */
export const resolver = (physical: (logicalId: string) => Physical | undefined, pseudo: Pseudo, imports: Record<string, string> = {}) => {
  const refOf = (name: string): string => {
    if (name in pseudo) return (pseudo as unknown as Record<string, string>)[name];
    const found = physical(name);
    if (!found) throw new UnresolvableError(`Ref ${name}: no such resource or parameter runs here`);
    return found.ref;
  };
  const attOf = (id: string, attribute: string): string => {
    const found = physical(id);
    const value = found?.attributes[attribute];
    if (value === undefined) throw new UnresolvableError(`Fn::GetAtt ${id}.${attribute}: ${found ? 'no such attribute here' : 'no such resource runs here'}`);
    return value;
  };
  const sub = (text: string, vars: Record<string, unknown>) =>
    text.replace(/\$\{([^}!][^}]*)\}/g, (_m, name: string) => {
      if (name in vars) return String(resolve(vars[name]));
      const [id, attribute] = name.split('.');
      return attribute ? attOf(id, attribute) : refOf(id);
    });
  const resolve = (value: unknown): any => {
    if (Array.isArray(value)) return value.map(resolve).filter((v) => v !== NO_VALUE);
    if (!value || typeof value !== 'object') return value;
    const entries = Object.entries(value);
    if (entries.length === 1) {
      const [fn, arg] = entries[0] as [string, any];
      switch (fn) {
        case 'Ref':
          return arg === 'AWS::NoValue' ? NO_VALUE : refOf(arg);
        case 'Fn::GetAtt': {
          const [id, attribute] = Array.isArray(arg) ? arg : String(arg).split('.');
          return attOf(id, attribute);
        }
        case 'Fn::Join':
          return (resolve(arg[1]) as unknown[]).join(arg[0]);
        case 'Fn::Sub':
          return Array.isArray(arg) ? sub(arg[0], arg[1]) : sub(arg, {});
        case 'Fn::Select':
          return (resolve(arg[1]) as unknown[])[Number(resolve(arg[0]))];
        case 'Fn::Split':
          return String(resolve(arg[1])).split(arg[0]);
        case 'Fn::ImportValue': {
          const name = resolve(arg);
          if (!(name in imports)) throw new UnresolvableError(`Fn::ImportValue ${name}: no such export here`);
          return imports[name];
        }
        default:
          if (fn.startsWith('Fn::')) throw new UnresolvableError(`${fn} is not supported by the cloud-assembly runtime`);
      }
    }
    return Object.fromEntries(entries.map(([k, v]) => [k, resolve(v)]).filter(([, v]) => v !== NO_VALUE));
  };
  return resolve;
};

const NO_VALUE = Symbol('AWS::NoValue');

/** The resources of a template of one type, by logical ID. */
export const resourcesOfType = (template: CfnTemplate, type: string): Array<[string, CfnResource]> =>
  Object.entries(template.Resources).filter(([, r]) => r.Type === type);

/** The logical ID a `Ref` or `Fn::GetAtt` names. */
export const targetOf = (value: any): string | undefined => value?.Ref ?? (Array.isArray(value?.['Fn::GetAtt']) ? value['Fn::GetAtt'][0] : undefined);

/** The logical IDs of Lambda functions a value mentions (`AuthorizerUri`, `Integration.Uri`, `FunctionName`). */
export const functionsIn = (template: CfnTemplate, value: unknown): string[] => {
  const text = JSON.stringify(value);
  return resourcesOfType(template, 'AWS::Lambda::Function')
    .map(([id]) => id)
    .filter((id) => text.includes(`"${id}"`));
};
