import { createDevice, getDevice, listDevices, updateDevice } from '../domain/devices';
import { CreateDeviceBodySchema, DevicePathSchema, UpdateDeviceBodySchema } from '../schemas/device';
import { WorkspacePathSchema } from '../schemas/workspace';
import { registryDb } from '../shared/clients';
import { callerOf, ok, parseBody, parsePath, type ApiEvent } from '../shared/http';
import { httpHandler } from '../shared/middleware';

const listDevicesRoute = async (event: ApiEvent) => {
  const { workspaceId } = parsePath(WorkspacePathSchema, event);
  return ok(200, { devices: await listDevices(registryDb(), callerOf(event), workspaceId) });
};

const getDeviceRoute = async (event: ApiEvent) => {
  const { workspaceId, deviceId } = parsePath(DevicePathSchema, event);
  return ok(200, { device: await getDevice(registryDb(), callerOf(event), workspaceId, deviceId) });
};

const createDeviceRoute = async (event: ApiEvent) => {
  const { workspaceId } = parsePath(WorkspacePathSchema, event);
  const body = parseBody(CreateDeviceBodySchema, event);
  return ok(200, { device: await createDevice(registryDb(), callerOf(event), workspaceId, body) });
};

const updateDeviceRoute = async (event: ApiEvent) => {
  const { workspaceId, deviceId } = parsePath(DevicePathSchema, event);
  const body = parseBody(UpdateDeviceBodySchema, event);
  return ok(200, { device: await updateDevice(registryDb(), callerOf(event), workspaceId, deviceId, body) });
};

export const handler = httpHandler('devices', {
  listDevices: listDevicesRoute,
  getDevice: getDeviceRoute,
  createDevice: createDeviceRoute,
  updateDevice: updateDeviceRoute,
});
