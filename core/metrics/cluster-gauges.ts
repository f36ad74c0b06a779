// The cluster-wide gauges of /metrics: agent sessions running by status (Temporal visibility,
// counted by the SessionStatus search attribute) and the task queue's backlog (DescribeTaskQueue
// with stats). They are refreshed when scraped, at most every METRICS_REFRESH_MS, one refresh at a
// time, so a scraper (or several) costs Temporal three small calls per period whatever its rate.
// Every process that registers them reports the same cluster figures: aggregate with max(), never sum().
import { type Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { type Logger } from '../../lib/logger';
import { switchboardMetrics } from '../../lib/metrics/registry';

export interface ClusterGaugeOptions {
  client(): Promise<Client>;
  namespace: string;
  taskQueue: string;
  refreshMs: number;
  logger: Pick<Logger, 'warn'>;
}

/** A scrape waits this long for a refresh; past it, it serves the last values and the refresh goes on. */
const SCRAPE_WAIT_MS = 3000;

/** Running AgentSession workflows of this task queue (the deployment's): all, and those whose SessionStatus says they wait. */
const runningSessions = (taskQueue: string) =>
  `WorkflowType = 'agentSession' AND ExecutionStatus = 'Running' AND TaskQueue = '${taskQueue.replace(/['\\]/g, '')}'`;

const { TaskQueueType, TaskQueueKind } = temporal.api.enums.v1;
const TASK_TYPES = [
  ['workflow', TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW],
  ['activity', TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY],
] as const;

function seconds(duration: { seconds?: unknown; nanos?: number | null } | null | undefined): number {
  if (!duration) return 0;
  return Number(duration.seconds ?? 0) + (duration.nanos ?? 0) / 1e9;
}

/**
 * Registers the gauges' refresh on this process's registry; returns the function that stops it.
 * Sessions and backlog are refreshed apart: one failing leaves the other current.
 */
export function registerClusterGauges(options: ClusterGaugeOptions): () => void {
  const metrics = switchboardMetrics();
  let refreshedAt = 0;
  let inFlight: Promise<void> | null = null;
  let stopped = false;

  const failed = (source: string) => (err: unknown) => {
    metrics.clusterGaugeFailures.inc({ source });
    options.logger.warn({ err, source }, 'a cluster gauge of /metrics could not be refreshed; it keeps its last value');
  };

  async function refreshSessions(client: Client): Promise<void> {
    const running = runningSessions(options.taskQueue);
    const [all, suspended] = await Promise.all([client.workflow.count(running), client.workflow.count(`${running} AND SessionStatus = 'suspended'`)]);
    metrics.sessions.set({ status: 'suspended' }, suspended.count);
    metrics.sessions.set({ status: 'active' }, Math.max(0, all.count - suspended.count));
  }

  async function refreshBacklog(client: Client): Promise<void> {
    for (const [label, taskQueueType] of TASK_TYPES) {
      const described = await client.workflowService.describeTaskQueue({
        namespace: options.namespace,
        taskQueue: { name: options.taskQueue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType,
        reportStats: true,
      });
      const labels = { task_queue: options.taskQueue, task_type: label };
      metrics.taskQueueBacklog.set(labels, Number(described.stats?.approximateBacklogCount ?? 0));
      metrics.taskQueueBacklogAge.set(labels, seconds(described.stats?.approximateBacklogAge));
    }
  }

  function refresh(): Promise<void> {
    return (inFlight ??= (async () => {
      try {
        const client = await options.client();
        await Promise.all([refreshSessions(client).catch(failed('sessions')), refreshBacklog(client).catch(failed('backlog'))]);
      } catch (err) {
        failed('temporal')(err);
      } finally {
        refreshedAt = Date.now();
        inFlight = null;
      }
    })());
  }

  // prom-client calls `collect` before rendering a gauge; both gauges share the one refresh.
  const collect = async () => {
    if (stopped || Date.now() - refreshedAt < options.refreshMs) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([refresh(), new Promise<void>((resolve) => (timer = setTimeout(resolve, SCRAPE_WAIT_MS)))]);
    clearTimeout(timer);
  };
  setCollect(metrics.sessions, collect);
  setCollect(metrics.taskQueueBacklog, collect);
  return () => {
    stopped = true;
  };
}

/** prom-client keeps `collect` as a public field of the metric; set after construction here. */
function setCollect(metric: object, collect: () => Promise<void>): void {
  (metric as { collect?: () => Promise<void> }).collect = collect;
}
