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
