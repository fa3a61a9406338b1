/** Which items of a cancelled transaction failed their condition (by index), or undefined for any other error. */
export const failedConditions = (error: unknown): number[] | undefined => {
  const e = error as { name?: string; CancellationReasons?: Array<{ Code?: string }> };
  if (e?.name !== 'TransactionCanceledException' || !e.CancellationReasons) return undefined;
  const failed = e.CancellationReasons.flatMap((r, i) => (r.Code === 'ConditionalCheckFailed' ? [i] : []));
  return failed.length ? failed : undefined;
};

export const isConditionFailed = (error: unknown): boolean => (error as { name?: string })?.name === 'ConditionalCheckFailedException';
