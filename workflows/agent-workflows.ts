// The workflows this worker offers to agents as `type: workflow` tools, and the one it ships.
// A tool names an entry of AGENT_WORKFLOWS by `workflow_id`; the entry, not the tenant, decides the
// Temporal workflow type, so an agent can start only what is listed here (never a session, a human
// task or another platform workflow), always as a child of its own session with an id under the
// session's, and with the tenant and project of that session.
import * as wf from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { Json } from '../abl/ir';

/** What every agent workflow receives: the calling session's scope and the tool's mapped input. */
export interface AgentWorkflowInput {
  tenantId: string;
  projectId: string;
  sessionId: string;
  /** The agent whose tool started it. */
  agent: string;
  input: Record<string, Json>;
}

export interface AgentWorkflowEntry {
  description: string;
  /** Version label → registered workflow type. */
  versions: Record<string, string>;
  /** The version used when the deployment's workflowVersionManifest names none (or says `auto`). */
  latest: string;
}

/**
 * The allow-list. Add an entry (and export its function from workflows/index.ts) to offer a
 * workflow to agents; a new version of one is a new function under a new label, so sessions pinned
 * to the old label by their deployment keep it.
 */
export const AGENT_WORKFLOWS: Readonly<Record<string, AgentWorkflowEntry>> = {
  deliver_webhook: {
    description: 'POSTs a JSON payload to a URL (the platform destination rules apply), retrying with backoff for up to max_hours (default 24) until it is accepted.',
    versions: { '1': 'deliverWebhookWorkflow' },
    latest: '1',
  },
};

/** The workflow type a tool starts, or why it may not. `version`: the manifest's label, if any. */
export function resolveAgentWorkflow(workflowId: string, version: string | null): { ok: true; type: string; version: string } | { ok: false; error: string } {
  const entry = Object.hasOwn(AGENT_WORKFLOWS, workflowId) ? AGENT_WORKFLOWS[workflowId] : undefined;
  if (!entry) return { ok: false, error: `Workflow ${workflowId || '(none)'} is not offered to agents by this worker` };
  const label = version === null || version === '' || version === 'auto' || version === 'latest' ? entry.latest : version;
  const type = Object.hasOwn(entry.versions, label) ? entry.versions[label] : undefined;
  if (!type) return { ok: false, error: `Workflow ${workflowId} has no version ${label} (offered: ${Object.keys(entry.versions).join(', ')})` };
  return { ok: true, type, version: label };
}

/** A dotted path of `args`, or undefined. */
function pick(args: Record<string, Json>, path: string): Json | undefined {
  let v: Json | undefined = args;
  for (const part of path.split('.')) {
    if (v === null || typeof v !== 'object' || Array.isArray(v) || !Object.hasOwn(v, part)) return undefined;
    v = (v as Record<string, Json>)[part];
  }
  return v;
}

/** The workflow's input: `param_mapping` (field → argument path) applied, or the arguments as they are. */
export function mapWorkflowInput(args: Record<string, Json>, mapping: Record<string, string>): Record<string, Json> {
  const fields = Object.entries(mapping);
  if (fields.length === 0) return args;
  const out: Record<string, Json> = {};
  for (const [field, path] of fields) {
    const v = pick(args, path);
    if (v !== undefined) out[field] = v;
  }
  return out;
}

export interface WebhookDelivery {
  delivered: true;
  status: number;
  attempts: number;
}

/**
 * `deliver_webhook` v1: one POST of `payload` to `url`, retried by Temporal with backoff (an
 * answer of 408, 429 or 5xx, or no answer, is retried; another 4xx is final) for up to `max_hours`.
 * The activity applies the platform's SSRF rules, as HTTP tools do.
 */
export async function deliverWebhookWorkflow(input: AgentWorkflowInput): Promise<WebhookDelivery> {
  const url = typeof input.input.url === 'string' ? input.input.url : '';
  if (!url) throw wf.ApplicationFailure.nonRetryable('deliver_webhook needs a url', 'BAD_INPUT');
  const hours = typeof input.input.max_hours === 'number' && input.input.max_hours > 0 ? Math.min(input.input.max_hours, 72) : 24;
  const { deliverAgentWebhook } = wf.proxyActivities<Activities>({
    startToCloseTimeout: '30 seconds',
    scheduleToCloseTimeout: `${hours} hours`,
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 minutes', nonRetryableErrorTypes: ['WEBHOOK_REFUSED', 'BAD_INPUT'] },
  });
  return deliverAgentWebhook({ tenantId: input.tenantId, projectId: input.projectId, sessionId: input.sessionId, url, payload: input.input.payload ?? null });
}
