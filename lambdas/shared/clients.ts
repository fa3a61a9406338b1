import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { REGISTRY_TABLE } from './env';

/** A DynamoDB document client and the table it works on; every store function takes one. */
export interface Db {
  readonly doc: DynamoDBDocumentClient;
  readonly table: string;
}

/** Document client with the marshalling every store expects (no `undefined` attributes). */
export const documentClient = (client: DynamoDBClient): DynamoDBDocumentClient =>
  DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });

// Created once per Lambda container; the endpoint comes from AWS_ENDPOINT_URL_DYNAMODB when set.
let registry: Db | undefined;

/** The registry table of this deployment. */
export const registryDb = (): Db => (registry ??= { doc: documentClient(new DynamoDBClient({})), table: REGISTRY_TABLE });
