import { loadConfig } from '../../../lib/config';
import { DEFAULT_WORKER_TUNING, tuningFromConfig } from '../../../workers/tuning';

const base = { MONGODB_URI: 'mongodb://localhost/x', TEMPORAL_ADDRESS: 'localhost:7233', JWT_SECRET: 'j'.repeat(40) };

describe('tuningFromConfig', () => {
  it('defaults to the built-in tuning', () => {
    expect(tuningFromConfig(loadConfig(base))).toEqual(DEFAULT_WORKER_TUNING);
  });

  it('takes each WORKER_* variable', () => {
    const config = loadConfig({
      ...base,
      WORKER_MAX_CACHED_WORKFLOWS: '250',
      WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: '40',
      WORKER_MAX_CONCURRENT_ACTIVITIES: '300',
      WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES: '60',
    });
    expect(tuningFromConfig(config)).toEqual({
      maxCachedWorkflows: 250,
      maxConcurrentWorkflowTaskExecutions: 40,
      maxConcurrentActivityTaskExecutions: 300,
      maxConcurrentLocalActivityExecutions: 60,
    });
  });

  it('refuses a value that is not a positive whole number', () => {
    expect(() => loadConfig({ ...base, WORKER_MAX_CACHED_WORKFLOWS: '0' })).toThrow(/WORKER_MAX_CACHED_WORKFLOWS/);
  });
});
