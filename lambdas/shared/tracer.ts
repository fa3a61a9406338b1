import { Tracer } from '@aws-lambda-powertools/tracer';
import { METRICS_SERVICE } from '../metrics';

/**
 * The data path's Powertools Tracer (the ingest and forwarder Lambdas, which the stack deploys with
 * X-Ray active tracing): each invocation's segment, its cold start, and its outgoing HTTPS calls
 * (the stores, the queues, the webhooks) as subsegments. Outside Lambda, or with
 * POWERTOOLS_TRACE_ENABLED=false, it does nothing.
 */
export const tracer = new Tracer({ serviceName: METRICS_SERVICE });
