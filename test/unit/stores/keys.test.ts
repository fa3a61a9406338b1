import { apiKeyHashKey, collection, deviceKey, deviceLocatorKey, jobKey, workspaceKey } from '../../../lambdas/stores/keys';

describe('registry keys', () => {
  it('hangs workspaces under their account, so another account cannot address them', () => {
    expect(workspaceKey('acc-1', 'wks-1')).toEqual({ pk: 'ACC#acc-1', sk: 'WKS#wks-1' });
    expect(workspaceKey('acc-2', 'wks-1')).not.toEqual(workspaceKey('acc-1', 'wks-1'));
  });

  it('keeps a device, its jobs and its locator findable from the IDs the routes carry', () => {
    expect(deviceKey('wks-1', 'dev-1')).toEqual({ pk: 'WKS#wks-1', sk: 'DEV#dev-1' });
    expect(deviceLocatorKey('dev-1')).toEqual({ pk: 'DEV#dev-1', sk: 'DEVICE' });
    expect(jobKey('dev-1', 'reboot')).toEqual({ pk: 'DEV#dev-1', sk: 'JOB#reboot' });
  });

  it('makes each collection’s prefix match only its own items', () => {
    const jobs = collection.jobsOfDevice('dev-1');

    expect(jobKey('dev-1', 'x').sk.startsWith(jobs.prefix)).toBe(true);
    expect(deviceLocatorKey('dev-1').sk.startsWith(jobs.prefix)).toBe(false);
    expect(apiKeyHashKey('ab').pk).toBe('APIKEY#ab');
  });
});
