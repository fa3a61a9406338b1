import { Logger } from '@aws-lambda-powertools/logger';

/** The one structured logger of every handler. */
export const logger = new Logger({ serviceName: 'fleetstream' });
