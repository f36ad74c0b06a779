// jest-environment-node, and with SB_TEST_COST_LOG=<file> one line per test file appended to that
// file: its wall time and the CPU its jest worker used for it (every thread, an in-process
// worker's included) plus that of the processes it started and waited for (API and worker
// processes, scripts), from /proc, from loading the file to its last hook. The shared Temporal and
// store are not in it. CPU is the figure to compare on a shared machine: wall time grows with the
// load, CPU much less. Without the variable nothing is read or written.
const { appendFileSync, readFileSync } = require('node:fs');
const path = require('node:path');
const NodeEnvironment = require('jest-environment-node').TestEnvironment;

const out = process.env.SB_TEST_COST_LOG;

/** CPU seconds of this process and of its reaped children (utime, stime, cutime, cstime). */
function cpuSeconds() {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / 100;
}

class CostEnvironment extends NodeEnvironment {
  constructor(config, context) {
    super(config, context);
    this.file = path.relative(config.projectConfig.rootDir, context.testPath);
  }

  async setup() {
    await super.setup();
    if (out) this.started = { at: Date.now(), cpu: cpuSeconds() };
  }

  async teardown() {
    if (out && this.started) {
      const wall = (Date.now() - this.started.at) / 1000;
      const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
      appendFileSync(out, `${this.file}\twall=${wall.toFixed(1)}\tcpu=${(cpuSeconds() - this.started.cpu).toFixed(1)}\tload=${load}\n`);
    }
    await super.teardown();
  }
}

module.exports = CostEnvironment;
