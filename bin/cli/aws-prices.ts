/**
 * THE price table of the cost model (`npm run cost`): AWS list prices in one region, US East
 * (N. Virginia) `us-east-1`, on-demand, first pricing tier, no free tier. Taken from AWS's public
 * pricing pages as they stood in 2025 (API Gateway, Lambda, SQS, DynamoDB after the on-demand price
 * cut of 2024-11-01, IoT Core, Timestream for LiveAnalytics, WAF, data transfer); not re-read from this
 * machine, which reaches no AWS site. Check them before you rely on a figure.
 */
export const PRICES = {
  region: 'us-east-1',
  asOf: '2025 (AWS pricing pages; DynamoDB on-demand after its 2024-11-01 price cut)',
  apiGatewayRestPerMillion: 3.5,
  /** AWS WAF: a web ACL and a rule, each a month; and the requests it inspects. */
  wafWebAclPerMonth: 5.0,
  wafRulePerMonth: 1.0,
  wafPerMillionRequests: 0.6,
  lambdaRequestsPerMillion: 0.2,
  /** arm64 */
  lambdaPerGbSecond: 0.0000133334,
  /** Standard queue; each 64 KB chunk of a request's payload is one request. */
  sqsPerMillionRequests: 0.4,
  /** On-demand: write request unit (1 KB), read request unit (4 KB strongly consistent). */
  dynamoDbPerMillionWrites: 0.625,
  dynamoDbPerMillionReads: 0.125,
  dynamoDbStoragePerGbMonth: 0.25,
  /** Messages metered in 5 KB increments; connectivity per connected minute; rules and actions. */
  iotCorePerMillionMessages: 1.0,
  iotCorePerMillionConnectionMinutes: 0.08,
  iotCorePerMillionRulesTriggered: 0.15,
  iotCorePerMillionActionsExecuted: 0.15,
  /** Timestream for LiveAnalytics: writes in 1 KB units, memory store per GB-hour, magnetic store per GB-month. */
  timestreamPerMillionWrites: 0.5,
  timestreamMemoryStorePerGbHour: 0.036,
  timestreamMagneticStorePerGbMonth: 0.03,
  /** Data transfer out to the internet (the webhooks' POSTs), first 10 TB a month. */
  dataTransferOutPerGb: 0.09,
} as const;

/** Minutes and days in the model's month. */
export const MONTH = { days: 30, minutes: 30 * 24 * 60, hours: 30 * 24 } as const;
