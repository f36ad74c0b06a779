// Stops the shared ephemeral stack started by global-setup.ts.
import { rmSync } from 'node:fs';
import { type SharedStackHandles } from './global-setup';

export default async function globalTeardown(): Promise<void> {
  const stack = (globalThis as { __sbStack?: SharedStackHandles }).__sbStack;
  if (!stack) return;
  await Promise.allSettled([stack.env.teardown(), stack.ferret.stop(), stack.liveKit?.stop()]);
  rmSync(stack.tmpDir, { recursive: true, force: true });
}
