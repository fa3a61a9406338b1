#!/usr/bin/env node
// `npx fleetstream …`, the package's bin: the project runs its TypeScript through tsx, registered
// here for the entry's import.
import { register } from 'tsx/esm/api';

register();
await import('./fleetstream.ts');
