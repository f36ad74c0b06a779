// Worker tuning compiled once from configuration, sized for a small (2-core) box by default.
export interface WorkerTuning {
  maxConcurrentWorkflowTaskExecutions: number;
  maxConcurrentActivityTaskExecutions: number;
  maxConcurrentLocalActivityExecutions: number;
  maxCachedWorkflows: number;
}

export const DEFAULT_WORKER_TUNING: WorkerTuning = {
  maxConcurrentWorkflowTaskExecutions: 20,
  maxConcurrentActivityTaskExecutions: 100,
  maxConcurrentLocalActivityExecutions: 20,
  maxCachedWorkflows: 1000,
};

/** The tuning a worker takes from configuration (WORKER_* variables; their defaults are the above). */
export function tuningFromConfig(config: {
  WORKER_MAX_CACHED_WORKFLOWS: number;
  WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: number;
  WORKER_MAX_CONCURRENT_ACTIVITIES: number;
  WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES: number;
}): WorkerTuning {
  return {
    maxCachedWorkflows: config.WORKER_MAX_CACHED_WORKFLOWS,
    maxConcurrentWorkflowTaskExecutions: config.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS,
    maxConcurrentActivityTaskExecutions: config.WORKER_MAX_CONCURRENT_ACTIVITIES,
    maxConcurrentLocalActivityExecutions: config.WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES,
  };
}
