import type { LocalStack } from './local-stack';

/** Stops the `npm start` that test/helpers/browser-setup.ts started for the browser project. */
export default async () => {
  await (globalThis as { __browserStack?: LocalStack }).__browserStack?.stop();
};
