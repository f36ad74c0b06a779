// The run-time delegation guards: no self-delegation, no cycles, nesting at most ten deep.
import { delegationRefusal, MAX_DELEGATION_DEPTH } from '../../../workflows/effects';

it('lets a delegation start while the child stays within ten levels and off the chain', () => {
  expect(delegationRefusal([], 'Hub', 'Helper')).toBeNull();
  const nine = Array.from({ length: 9 }, (_, i) => `A${i}`);
  expect(delegationRefusal(nine, 'A9', 'A10')).toBeNull();
});

it('refuses self-delegation and a cycle through the chain', () => {
  expect(delegationRefusal([], 'Hub', 'Hub')).toMatch(/Hub → Hub is a cycle/);
  expect(delegationRefusal(['Hub', 'Helper'], 'Worker', 'Hub')).toMatch(/Hub → Helper → Worker → Hub is a cycle/);
});

it('refuses a child deeper than ten levels', () => {
  const ten = Array.from({ length: MAX_DELEGATION_DEPTH }, (_, i) => `A${i}`);
  expect(MAX_DELEGATION_DEPTH).toBe(10);
  expect(delegationRefusal(ten, 'A10', 'A11')).toMatch(/deeper than 10/);
});
