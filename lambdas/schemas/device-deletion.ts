import * as z from 'zod';

/**
 * `DELETE …/devices/{id}?purge=data` (spec/fleet-state.md §5): the device's stored data points go
 * within a sweep of the retention queue; without it they stay until the workspace's retention.
 */
export const DeleteDeviceQuerySchema = z.strictObject({
  purge: z.enum(['data'], { error: 'Must be data (purge the device’s stored data points).' }).optional().meta({
    description: 'data: the device’s stored data points are deleted too, within a sweep (without it they stay until the workspace’s retention)',
  }),
});
export type DeleteDeviceQuery = z.infer<typeof DeleteDeviceQuerySchema>;
