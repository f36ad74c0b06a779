// TRANSFORM sort_by orders text by UTF-16 code units, never by the worker's locale: a session
// replayed on a worker with another default locale must sort the same way (patch code-unit-sort-v1).
// Runs recorded before keep localeCompare when they replay (`codeUnitSort: false`).

import { compileProject, type CompilationOutput, type Json } from '../../../abl';
import { Driver, scripted } from './driver';

function sorter(sortBy: string, items: string): CompilationOutput {
  const compiled = compileProject([
    {
      path: 'agents/Sorter.agent.abl',
      content: `AGENT: Sorter
GOAL: "Sort."
FLOW:
  steps: [sort]
  sort:
    REASONING: false
    SET: items = ${items}
    TRANSFORM:
      SOURCE: items
      AS: it
      INTO: sorted
      SORT_BY: ${sortBy}
    RESPOND: "sorted"
`,
    },
  ]);
  expect(compiled.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  return compiled;
}

const NAMES = '[{name: "b"}, {name: "B"}, {name: "a"}, {name: "\u00c9"}, {name: "e"}, {name: "Z"}]';
const sortedNames = (d: Driver): Json[] => (d.vars().sorted as { name: Json }[]).map((x) => x.name);

afterEach(() => jest.restoreAllMocks());

it('sorts text by code units, without asking the locale', () => {
  const localeCompare = jest.spyOn(String.prototype, 'localeCompare');
  const d = new Driver(scripted({}), sorter('name', NAMES));
  d.start();
  expect(sortedNames(d)).toEqual(['B', 'Z', 'a', 'b', 'e', '\u00c9']);
  expect(localeCompare).not.toHaveBeenCalled();
});

it('reverses the code-unit order for desc', () => {
  const d = new Driver(scripted({}), sorter('name desc', NAMES));
  d.start();
  expect(sortedNames(d)).toEqual(['\u00c9', 'e', 'b', 'a', 'Z', 'B']);
});

it('keeps localeCompare for runs recorded before the change', () => {
  const d = new Driver(scripted({}), sorter('name', NAMES), undefined, { codeUnitSort: false });
  d.start();
  expect(sortedNames(d)).toEqual(['\u00c9', 'B', 'Z', 'a', 'b', 'e'].sort((x, y) => x.localeCompare(y)));
});

it('asks the patch only when a sort compares text', () => {
  const asked = jest.fn(() => true);
  const numbers = new Driver(scripted({}), sorter('n', '[{n: 3}, {n: 1}, {n: 2}]'), undefined, { codeUnitSort: asked });
  numbers.start();
  expect((numbers.vars().sorted as { n: number }[]).map((x) => x.n)).toEqual([1, 2, 3]);
  expect(asked).not.toHaveBeenCalled();
  const text = new Driver(scripted({}), sorter('name', NAMES), undefined, { codeUnitSort: asked });
  text.start();
  expect(asked).toHaveBeenCalledTimes(1);
});
