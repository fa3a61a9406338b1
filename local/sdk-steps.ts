import { Client } from '@smithy/core/client';

/**
 * Middleware steps the local runtime gives every AWS SDK client of its process, whoever creates it
 * (handlers, stores, pollers, benchmarks): the SDK's base client's `send` is patched once, and each
 * client's stack gets the registered steps on its first `send`. A document client shares its
 * client's stack, so a step is added once per stack.
 */

type Stack = { add: (...args: unknown[]) => void };
interface Step {
  middleware: unknown;
  options: { step: string; priority: 'high' | 'low' | 'normal'; name: string };
}

const REGISTRY = Symbol.for('fleetstream.sdkSteps');
const globals = globalThis as { [REGISTRY]?: { steps: Step[]; added: WeakMap<object, Set<string>> } };

const registry = () => {
  if (globals[REGISTRY]) return globals[REGISTRY];
  const state = { steps: [] as Step[], added: new WeakMap<object, Set<string>>() };
  globals[REGISTRY] = state;
  const send = Client.prototype.send as (...args: unknown[]) => unknown;
  Client.prototype.send = function (this: { middlewareStack: Stack }, ...args: unknown[]) {
    const added = state.added.get(this.middlewareStack) ?? new Set<string>();
    state.added.set(this.middlewareStack, added);
    for (const { middleware, options } of state.steps)
      if (!added.has(options.name)) {
        added.add(options.name);
        this.middlewareStack.add(middleware, options);
      }
    return send.apply(this, args);
  } as typeof Client.prototype.send;
  return state;
};

/** Gives every SDK client of this process the step, from its next `send` (idempotent by the step's name). */
export const addToEveryClient = (middleware: unknown, options: Step['options']) => {
  const { steps } = registry();
  if (!steps.some((step) => step.options.name === options.name)) steps.push({ middleware, options });
};
