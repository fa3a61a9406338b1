import { buildConsole } from './browser';

/** The browser project's global setup: the console is built once from the sources before its tests. */
export default async () => {
  buildConsole();
};
