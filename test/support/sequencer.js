// The order jest starts test files in: longest first, so that no long file starts last while the
// other workers sit idle. Jest knows a file's length from its cache of an earlier run; without it
// (a clean CI checkout) it would go by file size, which starts the longest files nearly last:
// those that start processes of their own or run Python in the sandbox have short sources. Here
// a file with no timing is given a rough length by what it does: its own processes or the Python
// sandbox, a minute; property-based cases, half a minute; a file that sets its own timeout, a
// quarter of it (its authors' word on how long it runs); another file against the shared stack,
// ten seconds; another unit file, one (the unit files then fill the end in small pieces). Failed
// files still go first.
const { readFileSync } = require('node:fs');
const Sequencer = require('@jest/test-sequencer').default;

/** Starts an API, worker, dev stack, CLI, Temporal, FerretDB or browser of its own, or runs Python in the sandbox. */
const SLOW = /startWorkerProcess|startApiProcess|startDevStack|startTemporalDevServer|startFerretDb|\bspawn\(|\bexecFile\(|\bspawnSync\(|sandbox-agents|python/i;

function estimatedMs(test) {
  const source = readFileSync(test.path, 'utf8');
  if (SLOW.test(source)) return 60_000;
  if (/\bnumRuns\b/.test(source)) return 30_000;
  const timeout = /jest\.setTimeout\(([\d_]+)\)/.exec(source);
  if (timeout) return Number(timeout[1].replaceAll('_', '')) / 4;
  return test.context.config.displayName?.name === 'unit' ? 1_000 : 10_000;
}

class LongestFirstSequencer extends Sequencer {
  sort(tests) {
    const sorted = super.sort(tests); // sets each test's duration from jest's cache, when known
    const length = new Map(sorted.map((test) => [test, test.duration ?? estimatedMs(test)]));
    const failed = new Set(sorted.filter((test) => this.hasFailed(test)));
    return [...sorted].sort((a, b) => Number(failed.has(b)) - Number(failed.has(a)) || length.get(b) - length.get(a));
  }
}

module.exports = LongestFirstSequencer;
