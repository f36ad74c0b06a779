// The process's Prometheus metrics (prom-client): one registry per process, holding the Node
// process metrics and every Switchboard metric. The API and the worker both create it; each
// fills the metrics of the work it does (HTTP requests on the API, LLM and tool calls on the
// worker, turns wherever the turn is sent) and serves it at /metrics (lib/metrics/server.ts).
// Labels never carry a tenant, project or session id, nor any text a user wrote: the values are
// route templates, fixed enumerations, or bounded lists (lib/metrics/labels.ts).
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Seconds; from 5 ms (a cached HTTP answer) to 2 minutes (a slow model). */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

export interface SwitchboardMetrics {
  registry: Registry;
  httpRequests: Counter<'method' | 'route' | 'status'>;
  httpRequestDuration: Histogram<'method' | 'route' | 'status'>;
  turnDuration: Histogram<'channel' | 'outcome'>;
  llmCallDuration: Histogram<'provider' | 'model' | 'outcome'>;
  llmTokens: Counter<'provider' | 'model' | 'direction'>;
  toolCallDuration: Histogram<'tool_type' | 'outcome'>;
  sessions: Gauge<'status'>;
  taskQueueBacklog: Gauge<'task_queue' | 'task_type'>;
  taskQueueBacklogAge: Gauge<'task_queue' | 'task_type'>;
  clusterGaugeFailures: Counter<'source'>;
  voiceTurnStage: Histogram<'stage'>;
  voiceRoomsAttended: Gauge;
  voiceBargeIns: Counter;
  voiceErrors: Counter<'reason'>;
}

function create(): SwitchboardMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  return {
    registry,
    httpRequests: new Counter({
      name: 'switchboard_http_requests_total',
      help: 'HTTP requests answered, by method, route template (never the raw path) and status',
      labelNames: ['method', 'route', 'status'],
      registers,
    }),
    httpRequestDuration: new Histogram({
      name: 'switchboard_http_request_duration_seconds',
      help: 'Time from receiving a request to the end of its response (a stream: its whole length)',
      labelNames: ['method', 'route', 'status'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    turnDuration: new Histogram({
      name: 'switchboard_turn_duration_seconds',
      help: 'An agent turn, from sending it to its session to the reply, by channel and outcome; observed by the process that sent it',
      labelNames: ['channel', 'outcome'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    llmCallDuration: new Histogram({
      name: 'switchboard_llm_call_duration_seconds',
      help: 'One LLM call attempt of an agent, by provider, model and outcome',
      labelNames: ['provider', 'model', 'outcome'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    llmTokens: new Counter({
      name: 'switchboard_llm_tokens_total',
      help: 'Tokens of agent LLM calls, by provider, model and direction (input, output)',
      labelNames: ['provider', 'model', 'direction'],
      registers,
    }),
    toolCallDuration: new Histogram({
      name: 'switchboard_tool_call_duration_seconds',
      help: 'One tool call attempt, by tool type (http, http_async, sandbox, lambda, mcp) and outcome (ok, error, timeout, cancelled)',
      labelNames: ['tool_type', 'outcome'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    sessions: new Gauge({
      name: 'switchboard_sessions',
      help: 'Agent sessions running in Temporal, by status (active, suspended: waiting on a callback or a human task); cluster-wide, refreshed at most every METRICS_REFRESH_MS',
      labelNames: ['status'],
      registers,
    }),
    taskQueueBacklog: new Gauge({
      name: 'switchboard_task_queue_backlog',
      help: 'Approximate tasks waiting on the task queue (Temporal DescribeTaskQueue stats), by task type; cluster-wide',
      labelNames: ['task_queue', 'task_type'],
      registers,
    }),
    taskQueueBacklogAge: new Gauge({
      name: 'switchboard_task_queue_backlog_age_seconds',
      help: 'Age of the oldest task waiting on the task queue, by task type; 0 when none waits',
      labelNames: ['task_queue', 'task_type'],
      registers,
    }),
    voiceTurnStage: new Histogram({
      name: 'switchboard_voice_turn_stage_seconds',
      help: 'A voice room turn on this voice agent, by stage: endpointing (end of speech to the end of the utterance), speech_to_text, turn (the session), text_to_speech (to its first chunk), first_audio (end of speech to the first reply frame sent, all of them)',
      labelNames: ['stage'],
      buckets: [0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 1, 1.5, 2, 3, 5, 10],
      registers,
    }),
    voiceRoomsAttended: new Gauge({
      name: 'switchboard_voice_rooms_attended',
      help: 'Voice rooms this voice agent process is in now (at most VOICE_AGENT_MAX_ROOMS)',
      registers,
    }),
    voiceBargeIns: new Counter({
      name: 'switchboard_voice_barge_ins_total',
      help: 'Replies cut short by the caller speaking, on this voice agent',
      registers,
    }),
    voiceErrors: new Counter({
      name: 'switchboard_voice_errors_total',
      help: 'Voice turns that failed on this voice agent, by reason (stt_failed, turn_failed)',
      labelNames: ['reason'],
      registers,
    }),
    clusterGaugeFailures: new Counter({
      name: 'switchboard_cluster_gauge_refresh_failures_total',
      help: 'Failed refreshes of the cluster-wide gauges (sessions: Temporal visibility; backlog: DescribeTaskQueue); the gauges keep their last values',
      labelNames: ['source'],
      registers,
    }),
  };
}

let metrics: SwitchboardMetrics | null = null;

/** This process's metrics, created on first use. */
export function switchboardMetrics(): SwitchboardMetrics {
  return (metrics ??= create());
}
