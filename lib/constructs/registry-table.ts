import { RemovalPolicy } from 'aws-cdk-lib';
import { AttributeType, BillingMode, ProjectionType, StreamViewType, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import { REGISTRY_INDEXES, REGISTRY_TTL_ATTRIBUTE } from '../../lambdas/stores/keys';

/** Settings of the registry table. */
export interface RegistryTableProps {
  /** @default RETAIN: the registry holds every account, key and device; losing it is not an undo. */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * Write units per second the table serves from its first second (its warm throughput). A new
   * on-demand table serves 4,000 at once and doubles its previous peak at most every 30 minutes, so
   * a fleet-wide job on 100,000 devices (one write unit per job item) would take ≥ 25 s there.
   * @default REGISTRY_WARM_WRITES_PER_SECOND (10,000: 100,000 job items in about 10 s)
   */
  readonly warmWriteUnitsPerSecond?: number;
}

/**
 * The registry's warm write throughput: a fleet-wide job writes one item of ≤ 1 KB per device, so
 * 100,000 devices in about 10 s. Raising it is billed once (DynamoDB pricing: warm throughput), not
 * per hour, and it can never be lowered again; reads keep the on-demand default (12,000/s, enough
 * for the scheduler's ~6,000 read units of 100,000 devices).
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput.html
 */
export const REGISTRY_WARM_WRITES_PER_SECOND = 10_000;

/**
 * The registry table: accounts, workspaces, fleets, devices, jobs, FOTA and keys, all under the
 * string keys `pk`/`sk` that `lambdas/stores/keys.ts` builds (the local runtime creates the same
 * table on DynamoDB Local). On-demand and pre-warmed for fleet-wide writes, point-in-time recovery,
 * encrypted with the AWS managed key, with a change stream of old and new images: job and FOTA
 * events follow their writes through it. Its global secondary indexes (REGISTRY_INDEXES) are sparse
 * and keys-only: the sweep index of due work and of rollouts' devices (REGISTRY_SWEEP_INDEX) and the
 * firmware-use index of the FOTA of each registered firmware version (REGISTRY_FIRMWARE_USE_INDEX).
 */
export class RegistryTable extends Construct {
  readonly table: Table;

  constructor(scope: Construct, id: string, props: RegistryTableProps = {}) {
    super(scope, id);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    this.table = new Table(this, 'Table', {
      partitionKey: { name: 'pk', type: AttributeType.STRING },
      sortKey: { name: 'sk', type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      warmThroughput: { writeUnitsPerSecond: props.warmWriteUnitsPerSecond ?? REGISTRY_WARM_WRITES_PER_SECOND },
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: TableEncryption.AWS_MANAGED,
      removalPolicy,
      // The delivery and rollout count ledgers, rate counters and exports expire (lambdas/stores/keys.ts REGISTRY_TTL_ATTRIBUTE).
      timeToLiveAttribute: REGISTRY_TTL_ATTRIBUTE,
      // The registry stream's consumer tells a scheduling (a new scheduled_at) from a completion
      // (pending → done) by comparing the item before and after (lambdas/domain/fleet-ops/registry-events.ts).
      stream: StreamViewType.NEW_AND_OLD_IMAGES,
      // A retained table also refuses a stray DeleteTable; a disposable stack must be able to delete it.
      deletionProtection: removalPolicy === RemovalPolicy.RETAIN,
    });
    // Added to a deployed table, an index is an in-place update (CloudFormation: one GSI added per
    // update, no interruption; the index backfills while the table serves, and queries of it fail
    // until it is ACTIVE). An index throttles the table's writes when it cannot keep up with them
    // (back-pressure), and a new on-demand index serves 4,000 write units/s: every device item of a
    // fleet-wide scheduling writes an entry in the sweep index (its rollout's devices, spread over
    // 16 partitions per rollout: keys.ts INDEX_SHARDS), so the index is pre-warmed as the table.
    // https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-dynamodb-table.html#cfn-dynamodb-table-globalsecondaryindexes
    // https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations
    // The firmware-use index takes a write per FOTA of a registered version, a fleet-wide FOTA's
    // 100,000 at once: pre-warmed as well. Each index was added by a deploy of its own.
    for (const index of REGISTRY_INDEXES) {
      this.table.addGlobalSecondaryIndex({
        indexName: index.name,
        partitionKey: { name: index.partitionKey, type: AttributeType.STRING },
        sortKey: { name: index.sortKey, type: AttributeType.STRING },
        projectionType: ProjectionType[index.projection],
        warmThroughput: { writeUnitsPerSecond: props.warmWriteUnitsPerSecond ?? REGISTRY_WARM_WRITES_PER_SECOND },
      });
    }
  }
}
