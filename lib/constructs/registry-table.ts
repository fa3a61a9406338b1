import { RemovalPolicy } from 'aws-cdk-lib';
import { AttributeType, BillingMode, StreamViewType, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';

/** Settings of the registry table. */
export interface RegistryTableProps {
  /** @default RETAIN: the registry holds every account, key and device; losing it is not an undo. */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * The registry table: accounts, workspaces, fleets, devices, jobs, FOTA and keys, all under the
 * string keys `pk`/`sk` that `lambdas/stores/keys.ts` builds (the local runtime creates the same
 * table on DynamoDB Local). On-demand, point-in-time recovery, encrypted with the AWS managed key,
 * with a change stream of old and new images: job and FOTA events follow their writes through it.
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
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: TableEncryption.AWS_MANAGED,
      removalPolicy,
      // The forwarder's delivery ledger expires its entries (lambdas/stores/integration-store.ts).
      timeToLiveAttribute: 'ttl',
      // The registry stream's consumer tells a scheduling (a new scheduled_at) from a completion
      // (pending → done) by comparing the item before and after (lambdas/domain/registry-events.ts).
      stream: StreamViewType.NEW_AND_OLD_IMAGES,
      // A retained table also refuses a stray DeleteTable; a disposable stack must be able to delete it.
      deletionProtection: removalPolicy === RemovalPolicy.RETAIN,
    });
  }
}
