import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCloudAssemblyRuntime, type CloudAssemblyRuntime } from '../../local/cloud-assembly/runtime';
import { readAssembly, resourcesOfType, targetOf, type CfnTemplate } from '../../local/cloud-assembly/template';
import { until, waitFor } from '../../local/ports';
import { authenticateUser } from '../../lambdas/domain/tenancy/users';
import { documentClient } from '../../lambdas/shared/clients';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import mqtt from 'mqtt';
import { apiClient, type ApiClient } from '../helpers/api-client';
import { codeFor, cognitoClient } from '../helpers/cognito';
import { connectDevice, type Credentials, type MqttDevice } from '../helpers/mqtt-device';
import { cloudAssemblyDir, sharedAssemblyEngine } from '../helpers/runtime';
import { sqsClient } from '../helpers/sqs';

/**
 * What the template forgets or gets wrong fails on the cloud-assembly runtime, as it would after a
 * deploy, while the routes it gets right keep working: a function without a variable its code
 * reads, a wrong handler string, a role without the table actions, a method without its invoke
 * permission, a streamed route deployed as buffered, an IoT authorizer IoT Core may not invoke, a
 * user pool trigger Cognito may not invoke (and a stricter password policy, so that the pool is
 * seen to be the template's), a scheduled rule whose function EventBridge may not invoke, a
 * firmware handler whose upload URLs S3 refuses (no s3:PutObject). One copy of the run's assembly carries these faults, each on another function; the MQTT door's rule role and publisher faults have a copy of
 * their own (its devices must connect).
 */
const byPath = (template: CfnTemplate, path: string) => {
  const found = Object.entries(template.Resources).find(([, r]) => r.Metadata?.['aws:cdk:path'] === path);
  if (!found) throw new Error(`no resource at ${path}`);
  return found;
};

/** The run's assembly, its template changed by `change`, in a new folder (assets linked, not copied). */
const faultyCopy = (dir: string, change: (template: CfnTemplate) => void) => {
  const { name, template } = readAssembly(dir);
  const copy = mkdtempSync(join(tmpdir(), 'fleetstream-faulty-'));
  for (const entry of readdirSync(dir)) {
    if (entry.startsWith('asset.')) symlinkSync(join(dir, entry), join(copy, entry));
  }
  writeFileSync(join(copy, 'manifest.json'), readFileSync(join(dir, 'manifest.json')));
  change(template);
  writeFileSync(join(copy, `${name}.template.json`), JSON.stringify(template));
  return copy;
};

/** A device and its credentials, made through the API. */
const newDevice = async (api: ApiClient, workspaceId: string): Promise<{ id: string; credentials: Credentials }> => {
  const device = (await api.post(`/workspaces/${workspaceId}/devices`, { name: 'mqtt-fault' })).body.device;
  const created = await api.post(`/workspaces/${workspaceId}/devices/${device.id}/identities`);
  return { id: device.id, credentials: created.body.credentials };
};

describe('a faulty template on the cloud-assembly runtime', () => {
  let runtime: CloudAssemblyRuntime;
  let api: ApiClient;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    const dir = faultyCopy(cloudAssemblyDir()!, (template) => {
      // 1. The workspaces function loses REGISTRY_TABLE (its code falls back to a table that does not exist).
      const [workspaces, workspacesFn] = byPath(template, 'Fleetstream/WorkspacesHandler/Resource');
      delete workspacesFn.Properties!.Environment.Variables.REGISTRY_TABLE;
      // 2. The FOTA function names a handler its bundle does not export.
      const [fota, fotaFn] = byPath(template, 'Fleetstream/FotaHandler/Resource');
      fotaFn.Properties!.Handler = 'index.fotaHandler';
      // 3. The fleets function's role loses its table statement.
      const [fleets, fleetsFn] = byPath(template, 'Fleetstream/FleetsHandler/Resource');
      for (const [, policy] of resourcesOfType(template, 'AWS::IAM::Policy')) {
        if (!policy.Properties!.Roles.some((r: unknown) => targetOf(r) === targetOf(fleetsFn.Properties!.Role))) continue;
        policy.Properties!.PolicyDocument.Statement = policy.Properties!.PolicyDocument.Statement.filter(
          (s: { Action: string[] }) => ![s.Action].flat().some((a) => a.startsWith('dynamodb:')),
        );
      }
      // 4. The groups' function loses its invoke permission (one per function, for the whole API).
      const [groups] = byPath(template, 'Fleetstream/GroupsHandler/Resource');
      for (const [id, p] of resourcesOfType(template, 'AWS::Lambda::Permission'))
        if (p.Properties!.Principal === 'apigateway.amazonaws.com' && JSON.stringify(p.Properties!.FunctionName).includes(`"${groups}"`))
          delete template.Resources[id];
      // 5. The storage query is deployed buffered although its handler streams.
      const [, query] = byPath(template, 'Fleetstream/Api/RestApi/Default/timeseries/{workspaceId}/data/GET/Resource');
      query.Properties!.Integration.ResponseTransferMode = 'BUFFERED';
      // 6. IoT Core loses its permissions to invoke the authorizers: the devices' (MQTT) and the consoles' (MQTT over WebSocket).
      const [mqttAuthorizer] = byPath(template, 'Fleetstream/MqttAuthorizerHandler/Resource');
      const [consoleAuthorizer] = byPath(template, 'Fleetstream/ConsoleAuthorizerHandler/Resource');
      for (const [id, p] of resourcesOfType(template, 'AWS::Lambda::Permission'))
        if (p.Properties!.Principal === 'iot.amazonaws.com') delete template.Resources[id];
      // 7. Cognito loses its permissions to invoke the sign-up trigger (PostConfirmation and PostAuthentication).
      const [userAccount] = byPath(template, 'Fleetstream/Users/UserAccountHandler/Resource');
      for (const [id, p] of resourcesOfType(template, 'AWS::Lambda::Permission'))
        if (p.Properties!.Principal === 'cognito-idp.amazonaws.com') delete template.Resources[id];
      // 8. The pool's password policy asks for a symbol too (the local runtime's pool does not).
      byPath(template, 'Fleetstream/Users/UserPool/Resource')[1].Properties!.Policies.PasswordPolicy.RequireSymbols = true;
      // 9. EventBridge loses its permission to invoke the rollout sweep.
      const [sweep] = byPath(template, 'Fleetstream/RolloutSweepHandler/Resource');
      const [sweepRule] = byPath(template, 'Fleetstream/RolloutSweepSchedule/Rule/Resource');
      for (const [id, p] of resourcesOfType(template, 'AWS::Lambda::Permission'))
        if (p.Properties!.Principal === 'events.amazonaws.com') delete template.Resources[id];
      // 10. The firmware handler loses s3:PutObject: it still signs upload URLs, which S3 then refuses as it (the signer) may not put.
      const [firmwares, firmwaresFn] = byPath(template, 'Fleetstream/FirmwaresHandler/Resource');
      for (const [, policy] of resourcesOfType(template, 'AWS::IAM::Policy')) {
        if (!policy.Properties!.Roles.some((r: unknown) => targetOf(r) === targetOf(firmwaresFn.Properties!.Role))) continue;
        for (const statement of policy.Properties!.PolicyDocument.Statement as Array<{ Action: string | string[] }>) {
          statement.Action = [statement.Action].flat().filter((a) => a !== 's3:PutObject');
        }
      }
      const [, pages] = byPath(template, 'Fleetstream/Console/Pages/CustomResource/Default');
      Object.assign(ids, {
        workspaces,
        fota,
        fleets,
        mqttAuthorizer,
        consoleAuthorizer,
        userAccount,
        sweep,
        sweepRule,
        firmwares,
        pagesAsset: `asset.${pages.Properties!.SourceObjectKeys[0].replace(/\.zip$/, '')}`,
      });
    });
    runtime = (await startCloudAssemblyRuntime({
      ...sharedAssemblyEngine(),
      functionsOnFirstUse: true,
      assemblyDir: dir,
      sweepIntervalSeconds: 1,
    })) as CloudAssemblyRuntime;
    api = apiClient(runtime.base_url, runtime.api_key);
  });
  afterAll(async () => {
    await runtime?.stop();
  });

  it('keeps serving the routes it gets right', async () => {
    expect((await api.get(`/workspaces/${runtime.workspace_id}/api-keys`)).status).toBe(200);
    expect((await api.post(`/workspaces/${runtime.workspace_id}/devices`, { name: 'ok' })).status).toBe(200);
  });

  it('fails a function whose variable is missing: its code reads another table', async () => {
    expect((await api.get('/workspaces')).status).toBe(500);
  });

  it('fails every call of a function whose handler string names nothing in its bundle', async () => {
    expect((await api.get('/devices/dev-00000000000000000000/fota')).status).toBe(502);
  });

  it('refuses, as AWS would, the table calls of a role without the table statement, and lists them', async () => {
    const { status } = await api.get(`/workspaces/${runtime.workspace_id}/fleets`);

    expect(status).toBe(500);
    expect(runtime.report().refused).toContainEqual(
      expect.objectContaining({
        function: ids.fleets,
        action: 'dynamodb:GetItem',
        decision: 'implicit-deny',
        resource: expect.stringMatching(/:table\/Fleetstream-RegistryTable/),
      }),
    );
  });

  it('fails a method whose function API Gateway may not invoke', async () => {
    expect((await api.get(`/workspaces/${runtime.workspace_id}/groups`)).status).toBeGreaterThanOrEqual(500);
  });

  it('fails a streaming handler deployed behind a buffered integration', async () => {
    expect((await api.get(`/timeseries/${runtime.workspace_id}/data`)).status).toBeGreaterThanOrEqual(500);
  });

  it('refuses every MQTT CONNECT when IoT Core may not invoke the authorizer, which never runs', async () => {
    const { credentials } = await newDevice(api, runtime.workspace_id);

    const outcome = await connectDevice(credentials).then(
      (device) => {
        device.client.end(true);
        return 'connected';
      },
      (error: { code?: number }) => error.code,
    );

    // CONNACK 3 (server unavailable): the broker could not ask the authorizer; a token the authorizer denies gets 5.
    expect(outcome).toBe(3);
    expect(runtime.report().unused).toEqual(expect.arrayContaining([expect.stringMatching(new RegExp(`^${ids.mqttAuthorizer} dynamodb:GetItem `))]));
  });

  it('refuses every console’s MQTT over WebSocket CONNECT when IoT Core may not invoke the console authorizer, which never runs', async () => {
    const client = mqtt.connect(runtime.mqtt_ws_url!, {
      clientId: 'console-faulttemplate01',
      username: runtime.workspace_id,
      password: 'any token: the authorizer is never asked',
      protocolVersion: 4,
      reconnectPeriod: 0,
      connectTimeout: 30_000,
    });
    const outcome = await new Promise<number | string | undefined>((resolve) => {
      client.once('connect', () => resolve('connected'));
      client.once('error', (error) => resolve((error as { code?: number }).code));
    });
    client.end(true);

    expect(outcome).toBe(3);
    expect(runtime.report().invokeRefusals).toContainEqual(
      expect.stringMatching(new RegExp(`^MQTT over WebSocket CONNECT: IoT Core may not invoke ${ids.consoleAuthorizer}`)),
    );
    expect(runtime.report().unused).toEqual(expect.arrayContaining([expect.stringMatching(new RegExp(`^${ids.consoleAuthorizer} dynamodb:GetItem `))]));
  });

  it('fails sign-up confirmation and sign-in when Cognito may not invoke the trigger, which never runs: no account is made', async () => {
    const cognito = cognitoClient(runtime.cognito_endpoint!, runtime.user_pool_client_id!);
    const email = 'no-trigger@example.com';
    expect((await cognito.signUp(email, 'Correct-horse-42')).status).toBe(200);

    const confirmed = await cognito.confirmSignUp(email, await codeFor(runtime.console_url!, email));
    const signedIn = await cognito.signIn(email, 'Correct-horse-42');

    expect([confirmed.status, confirmed.body.__type, confirmed.body.message]).toEqual([
      400,
      'UnexpectedLambdaException',
      'PostConfirmation invocation failed due to error AccessDeniedException.',
    ]);
    expect([signedIn.status, signedIn.body.__type]).toEqual([400, 'UnexpectedLambdaException']);
    expect(runtime.report().invokeRefusals).toEqual(
      expect.arrayContaining([
        expect.stringMatching(new RegExp(`^PostConfirmation: Cognito may not invoke ${ids.userAccount}`)),
        expect.stringMatching(/^PostAuthentication: /),
      ]),
    );
    // Cognito confirmed the user (as it does when PostConfirmation fails), but nothing made its account.
    const user = await cognito.call('AdminGetUser', { UserPoolId: runtime.user_pool_id, Username: email });
    const sub = user.body.UserAttributes.find((a: { Name: string }) => a.Name === 'sub').Value;
    expect(user.body.UserStatus).toBe('CONFIRMED');
    const db = { doc: documentClient(new DynamoDBClient({})), table: process.env.REGISTRY_TABLE! };
    await expect(authenticateUser(db, sub)).rejects.toThrow();
    expect(runtime.report().unused).toEqual(expect.arrayContaining([expect.stringMatching(new RegExp(`^${ids.userAccount} dynamodb:PutItem `))]));
  });

  it('never runs a scheduled function EventBridge may not invoke: each firing of its rule fails, and the refusal is reported', async () => {
    const schedule = () => runtime.schedules().find((s) => s.function === ids.sweep)!;

    await until(() => schedule().refused >= 2, 'two firings of the sweep’s rule', 30_000);

    expect(schedule()).toMatchObject({
      runs: 0,
      recent: [],
      refusal: expect.stringMatching(
        new RegExp(`^EventBridge may not invoke ${ids.sweep}: no AWS::Lambda::Permission for events.amazonaws.com on rule ${ids.sweepRule}`),
      ),
    });
    expect(runtime.report().invokeRefusals).toContainEqual(
      expect.stringMatching(new RegExp(`^${ids.sweepRule} \\(rate\\(1 minute\\)\\): EventBridge may not invoke ${ids.sweep}`)),
    );
    expect(runtime.report().unused).toEqual(expect.arrayContaining([expect.stringMatching(new RegExp(`^${ids.sweep} dynamodb:Query .*/index/sweep$`))]));
  });

  it('refuses an upload through a URL the firmware handler signed without s3:PutObject, as S3 authorizes it as its signer: 403 AccessDenied', async () => {
    const image = Buffer.from('firmware image');
    const sha256 = createHash('sha256').update(image).digest('hex');
    const path = `/workspaces/${runtime.workspace_id}/firmwares/fault/versions/1.0`;

    const registered = await api.post(path, { size: image.length, sha256 });
    const { url, headers } = registered.body.firmware.upload;
    const put = await fetch(url, { method: 'PUT', headers, body: image });

    expect(registered.status).toBe(201);
    expect([put.status, /<Code>([^<]+)<\/Code>/.exec(await put.text())?.[1]]).toEqual([403, 'AccessDenied']);
    expect((await api.get(path)).body.firmware.status).toBe('awaiting_upload');
    expect(runtime.report().refused).toContainEqual(
      expect.objectContaining({
        function: ids.firmwares,
        action: 's3:PutObject',
        decision: 'implicit-deny',
        resource: expect.stringMatching(/\/fault\/1\.0\/fwr-[a-z0-9]+$/),
      }),
    );
  });

  it('makes the pool with the template’s password policy', async () => {
    const cognito = cognitoClient(runtime.cognito_endpoint!, runtime.user_pool_client_id!);

    const answer = await cognito.signUp('no-symbol@example.com', 'Correcthorse42');

    expect([answer.status, answer.body.message]).toEqual([400, 'Password did not conform with policy: Password must have symbol characters']);
  });

  it('serves the console the template deploys, and its config.json with the stack’s values resolved here', async () => {
    const page = await fetch(runtime.console_url!);
    const config = await (await fetch(`${runtime.console_url}config.json`)).json();

    expect([page.status, await page.text()]).toEqual([200, readFileSync(join(cloudAssemblyDir()!, ids.pagesAsset, 'index.html'), 'utf8')]);
    expect(config).toEqual({
      apiUrl: runtime.base_url.replace(/\/$/, ''),
      region: 'us-east-1',
      userPoolId: runtime.user_pool_id,
      userPoolClientId: runtime.user_pool_client_id,
      cognitoEndpoint: runtime.cognito_endpoint,
      // the console domain's wss://…/mqtt, served by the broker's WebSocket listener
      liveUrl: runtime.mqtt_ws_url,
    });
    expect(runtime.mqtt_ws_url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/mqtt$/);
  });
});

describe('a user pool setting the runtime cannot honour', () => {
  it.each([
    [
      'a client secret',
      (template: CfnTemplate) => (byPath(template, 'Fleetstream/Users/UserPool/ConsoleClient/Resource')[1].Properties!.GenerateSecret = true),
      /GenerateSecret\) does not run here/,
    ],
    [
      'a trigger cognito-local never calls',
      (template: CfnTemplate) => {
        const [, pool] = byPath(template, 'Fleetstream/Users/UserPool/Resource');
        pool.Properties!.LambdaConfig.PreAuthentication = pool.Properties!.LambdaConfig.PostConfirmation;
      },
      /the PreAuthentication trigger \(cognito-local calls PreSignUp, PostConfirmation/,
    ],
    [
      'sign-in by alias',
      (template: CfnTemplate) => (byPath(template, 'Fleetstream/Users/UserPool/Resource')[1].Properties!.AliasAttributes = ['preferred_username']),
      /AliasAttributes \["preferred_username"\] does not run here/,
    ],
  ])('fails the start for %s rather than running a pool that differs', async (_what, change, message) => {
    const dir = faultyCopy(cloudAssemblyDir()!, change);

    await expect(startCloudAssemblyRuntime({ ...sharedAssemblyEngine(), assemblyDir: dir })).rejects.toThrow(message);
  });
});

describe('the MQTT door of a faulty template', () => {
  let runtime: CloudAssemblyRuntime;
  let api: ApiClient;
  const ids: Record<string, string> = {};
  const devices: MqttDevice[] = [];

  beforeAll(async () => {
    const dir = faultyCopy(cloudAssemblyDir()!, (template) => {
      // 1. The data rule gets a role of its own that may send only to the ingest DLQ (its error action).
      const [, dataRule] = byPath(template, 'Fleetstream/DeviceMqtt/Ruledevice_data');
      const dlqId = targetOf(template.Outputs!.IngestDlqUrl.Value)!;
      template.Resources.DataRuleRoleFault = {
        Type: 'AWS::IAM::Role',
        Properties: {
          AssumeRolePolicyDocument: {
            Version: '2012-10-17',
            Statement: [{ Effect: 'Allow', Action: 'sts:AssumeRole', Principal: { Service: 'iot.amazonaws.com' } }],
          },
        },
      };
      template.Resources.DataRuleRoleFaultPolicy = {
        Type: 'AWS::IAM::Policy',
        Properties: {
          PolicyName: 'DataRuleRoleFaultPolicy',
          Roles: [{ Ref: 'DataRuleRoleFault' }],
          PolicyDocument: { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 'sqs:SendMessage', Resource: { 'Fn::GetAtt': [dlqId, 'Arn'] } }] },
        },
      };
      const payload = dataRule.Properties!.TopicRulePayload;
      payload.Actions[0].Sqs.RoleArn = payload.ErrorAction.Sqs.RoleArn = { 'Fn::GetAtt': ['DataRuleRoleFault', 'Arn'] };
      // 2. The registry stream consumer's role loses iot:Publish (live delivery of a job follows the stream).
      const [jobs, jobsFn] = byPath(template, 'Fleetstream/RegistryStreamHandler/Resource');
      for (const [, policy] of resourcesOfType(template, 'AWS::IAM::Policy')) {
        if (!policy.Properties!.Roles.some((r: unknown) => targetOf(r) === targetOf(jobsFn.Properties!.Role))) continue;
        policy.Properties!.PolicyDocument.Statement = policy.Properties!.PolicyDocument.Statement.filter(
          (s: { Action: string | string[] }) => ![s.Action].flat().includes('iot:Publish'),
        );
      }
      Object.assign(ids, { jobs });
    });
    runtime = (await startCloudAssemblyRuntime({ ...sharedAssemblyEngine(), functionsOnFirstUse: true, assemblyDir: dir })) as CloudAssemblyRuntime;
    api = apiClient(runtime.base_url, runtime.api_key);
  });
  afterAll(async () => {
    for (const d of devices) d.client.end(true);
    await runtime?.stop();
  });

  it('refuses and lists the data rule’s send, and puts the publish on the error action’s queue in IoT Core’s error format', async () => {
    const { id, credentials } = await newDevice(api, runtime.workspace_id);
    const device = await connectDevice(credentials);
    devices.push(device);

    await device.data('temp', { v: 1 });
    await device.up('#now', {});

    const sqs = sqsClient();
    const failure = await waitFor(async () => {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: runtime.queue_urls['ingest-dlq'], MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
      );
      const found = Messages.map((m) => JSON.parse(m.Body!)).find((b) => b.topic === `j/data/${id}/temp`);
      if (!found) throw new Error('not on the DLQ yet');
      return found;
    }, 'the error action’s message').finally(() => sqs.destroy());
    expect(failure).toMatchObject({
      ruleName: 'Fleetstream_device_data',
      clientId: id,
      failures: [{ failedAction: 'SqsAction', failedResource: runtime.queue_urls.ingest }],
    });
    expect(JSON.parse(Buffer.from(failure.base64OriginalPayload, 'base64').toString('utf8'))).toEqual({ v: 1 });
    expect(failure.failures[0].errorMessage).toMatch(/not authorized to perform: sqs:SendMessage/);
    expect(runtime.report().refused).toContainEqual(
      expect.objectContaining({
        function: 'DataRuleRoleFault',
        action: 'sqs:SendMessage',
        decision: 'implicit-deny',
        resource: expect.stringMatching(/:Fleetstream-QueuesIngestQueue/),
      }),
    );
    // The other rules, with the template's role, still reach the handler: #now is answered.
    expect((await device.next('#now')).value).toMatchObject({ ms: expect.any(Number) });
  });

  it('refuses and lists the live publish of a function without iot:Publish; the device gets the job with #status', async () => {
    const { id, credentials } = await newDevice(api, runtime.workspace_id);
    const device = await connectDevice(credentials);
    devices.push(device);
    await until(async () => (await api.get(`/workspaces/${runtime.workspace_id}/devices/${id}`)).body.device.connected === true, 'connected state');

    const scheduled = await api.post(`/devices/${id}/jobs/reboot`, { value: { delay: 1 } });
    await until(
      () =>
        runtime
          .report()
          .refused.some((c) => c.function === ids.jobs && c.action === 'iot:Publish' && c.resource === `arn:aws:iot:us-east-1:000000000000:topic/j/dn/${id}`),
      'the refused publish',
    );
    await device.up('#status', {});
    const status = await device.next('#status');

    expect(scheduled.status).toBe(200);
    expect(device.received.filter((m) => m.key === '@reboot')).toEqual([]);
    expect(status.value.expected).toEqual({ '@reboot': { v: { args: { delay: 1 } } } });
  });
});

describe('an EventBridge rule the runtime cannot honour', () => {
  const sweepRule = (template: CfnTemplate) => byPath(template, 'Fleetstream/RolloutSweepSchedule/Rule/Resource')[1].Properties!;

  it.each([
    [
      'a cron schedule',
      (template: CfnTemplate) => (sweepRule(template).ScheduleExpression = 'cron(0/5 * * * ? *)'),
      /Rule RolloutSweepScheduleRule\w+: cron\(0\/5 \* \* \* \? \*\): cron expressions do not run here \(rate expressions only\)/,
    ],
    [
      'an event pattern',
      (template: CfnTemplate) => (sweepRule(template).EventPattern = { source: ['aws.s3'] }),
      /Rule RolloutSweepScheduleRule\w+: event patterns do not run here/,
    ],
    [
      'a target that is not a function',
      (template: CfnTemplate) => (sweepRule(template).Targets[0].Arn = { 'Fn::GetAtt': [targetOf(template.Outputs!.ForwardQueueUrl.Value)!, 'Arn'] }),
      /Rule RolloutSweepScheduleRule\w+, target Target0: .*QueuesForwardQueue.* is not a Lambda function of the template \(only Lambda targets run here\)/,
    ],
  ])('fails the start for %s rather than leaving the rule out', async (_what, change, message) => {
    const dir = faultyCopy(cloudAssemblyDir()!, change);

    await expect(startCloudAssemblyRuntime({ ...sharedAssemblyEngine(), assemblyDir: dir })).rejects.toThrow(message);
  });
});

describe('a topic rule whose SQL the runtime cannot evaluate', () => {
  it('fails the start rather than evaluating it wrongly', async () => {
    const dir = faultyCopy(cloudAssemblyDir()!, (template) => {
      const [, rule] = byPath(template, 'Fleetstream/DeviceMqtt/Ruledevice_data');
      // The rule has a WHERE of its own (the client is the topic's device): one more condition.
      rule.Properties!.TopicRulePayload.Sql += ' AND temp > 50';
    });

    await expect(startCloudAssemblyRuntime({ ...sharedAssemblyEngine(), assemblyDir: dir })).rejects.toThrow(
      /the condition "temp > 50" is not supported by the cloud-assembly runtime/,
    );
  });
});

describe('a stream event source mapping whose role cannot read the stream', () => {
  it('fails the start, as CreateEventSourceMapping does, with the refused DynamoDB Streams call', async () => {
    const dir = faultyCopy(cloudAssemblyDir()!, (template) => {
      const [, consumer] = byPath(template, 'Fleetstream/RegistryStreamHandler/Resource');
      for (const [, policy] of resourcesOfType(template, 'AWS::IAM::Policy')) {
        if (!policy.Properties!.Roles.some((r: unknown) => targetOf(r) === targetOf(consumer.Properties!.Role))) continue;
        policy.Properties!.PolicyDocument.Statement = policy.Properties!.PolicyDocument.Statement.filter(
          (s: { Action: string | string[] }) => ![s.Action].flat().includes('dynamodb:DescribeStream'),
        );
      }
    });

    await expect(startCloudAssemblyRuntime({ ...sharedAssemblyEngine(), assemblyDir: dir })).rejects.toThrow(
      /not authorized to perform: dynamodb:DescribeStream on resource: arn:aws:dynamodb:us-east-1:000000000000:table\/Fleetstream-RegistryTable[\w-]+\/stream\//,
    );
  });

  it('refuses a filter operator the runtime cannot honour rather than passing every record', async () => {
    const dir = faultyCopy(cloudAssemblyDir()!, (template) => {
      const [, mapping] = resourcesOfType(template, 'AWS::Lambda::EventSourceMapping').find(([, m]) => m.Properties!.FilterCriteria)!;
      mapping.Properties!.FilterCriteria.Filters[0].Pattern = JSON.stringify({ dynamodb: { Keys: { sk: { S: [{ cidr: '10.0.0.0/8' }] } } } });
    });

    await expect(startCloudAssemblyRuntime({ ...sharedAssemblyEngine(), assemblyDir: dir })).rejects.toThrow(/cidr does not run here/);
  });
});
