/**
 * IAM, checked by use: a small evaluator of identity-based policies (iam-policy.ts) and a recording
 * proxy (recording-proxy.ts) that stands between one function and the local engines. Every AWS
 * call the function makes goes through its proxy (its AWS_ENDPOINT_URL_* variables point there);
 * the proxy reads the action and the resources from the request (iam-accesses.ts), evaluates the
 * function's role policies, answers AccessDenied in the service's own error format when they
 * refuse, as AWS does, and otherwise forwards the request unchanged to the engine.
 */

export {
  dynamoAccesses,
  iotAccesses,
  iotDataAccesses,
  localStreamArn,
  s3Accesses,
  s3Arn,
  sesAccesses,
  sqsAccesses,
  streamsAccesses,
  type ArnContext,
} from './iam-accesses';
export { evaluate, grantsOf, unusedGrants, wildcardMatch, type Access, type CallRecord, type Decision, type Grant, type PolicyStatement } from './iam-policy';
export { ENDPOINT_VARIABLES, startRecordingProxy, type RecordingProxy, type RecordingProxyOptions, type Upstreams } from './recording-proxy';
