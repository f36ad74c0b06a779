// Sessions of one worker context share one frozen copy of each compiled bundle, by hash.
import type { CompilationOutput } from '../../../abl/ir';
import { sharedBundle } from '../../../workflows/shared-bundles';

const bundle = (hash: string | undefined, entry = 'Hub') =>
  ({ ...(hash ? { bundleHash: hash } : {}), irVersion: 1, entry_agent: entry, agents: { [entry]: { name: entry, execution: { model: 'local' } } } }) as unknown as CompilationOutput;

it('hands every load of one hash the first copy, frozen through, and keeps hashes apart', () => {
  const first = sharedBundle(bundle('sha256:a'));
  const second = sharedBundle(bundle('sha256:a'));
  expect(second).toBe(first);
  expect(Object.isFrozen(first)).toBe(true);
  expect(Object.isFrozen((first.agents as Record<string, { execution: object }>).Hub!.execution)).toBe(true);
  const other = sharedBundle(bundle('sha256:b', 'Other'));
  expect(other).not.toBe(first);
  expect(other.entry_agent).toBe('Other');
});

it('returns a bundle without a hash as it is, unshared and unfrozen', () => {
  const loaded = bundle(undefined);
  expect(sharedBundle(loaded)).toBe(loaded);
  expect(Object.isFrozen(loaded)).toBe(false);
  expect(sharedBundle(bundle(undefined))).not.toBe(loaded);
});

it('keeps a bounded number of bundles: an old hash loaded again after many others is a new copy', () => {
  const old = sharedBundle(bundle('sha256:old'));
  for (let i = 0; i < 40; i++) sharedBundle(bundle(`sha256:n${i}`));
  const again = sharedBundle(bundle('sha256:old'));
  expect(again).not.toBe(old);
  expect(again).toEqual(old);
});
