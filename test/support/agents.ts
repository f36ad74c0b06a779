// Test setup through the real API: an agent with a version (so a session can run it), and a
// project whose model calls go to a fake OpenAI-compatible server.
import { type client } from './http';

type Api = ReturnType<typeof client>;
interface Owner {
  adminKey: string;
  projectId: string;
}

/** Creates the agent from ABL source and saves a version of it; throws on any other status than 201. */
export async function publishAgent(api: Api, owner: Owner, name: string, dslContent: string): Promise<void> {
  const created = await api.post(`/api/projects/${owner.projectId}/agents`, { key: owner.adminKey, json: { name, dslContent } });
  if (created.status !== 201) throw new Error(`creating agent ${name}: ${created.status} ${created.text}`);
  const version = await api.post(`/api/projects/${owner.projectId}/agents/${name}/versions`, { key: owner.adminKey, json: {} });
  if (version.status !== 201) throw new Error(`saving a version of ${name}: ${version.status} ${version.text}`);
}

/** Stores an OpenAI credential pointing at `baseURL` and makes `openai:gpt-4o-mini` the project's default model. */
export async function useFakeOpenAI(api: Api, owner: Owner, baseURL: string, apiKey = 'sk-test'): Promise<void> {
  const cred = await api.put(`/api/projects/${owner.projectId}/llm-credentials/openai`, { key: owner.adminKey, json: { apiKey, baseURL } });
  if (cred.status !== 200 && cred.status !== 201) throw new Error(`storing the credential: ${cred.status} ${cred.text}`);
  const settings = await api.put(`/api/projects/${owner.projectId}/llm-settings`, { key: owner.adminKey, json: { defaultModel: 'openai:gpt-4o-mini' } });
  if (settings.status !== 200) throw new Error(`setting the default model: ${settings.status} ${settings.text}`);
}

/**
 * An agent that stays in its one step and answers every message without a model: "Noted <n>."
 * with the message's metadata `n` (empty when none), plus `extra` lines in the step (e.g.
 * RICH_CONTENT). Used by the HTTP-async tests and bench.
 */
export function echoAgent(extra = ''): string {
  return `AGENT: Echo
GOAL: "Acknowledge every message."
FLOW:
  steps: [echo]
  echo:
    REASONING: false
    RESPOND: "Noted {{session.messageMetadata.n}}."
${extra}    ON_INPUT:
      - ELSE:
        THEN: echo
`;
}

export interface PaymentAgentOptions {
  /** Where the async tool `process_payment` is sent (its body carries `notify.url` and `notify.callbackSecret`). */
  endpoint: string;
  name?: string;
  /** The tool's wait line; default `timeout_seconds: 3600`. */
  timeout?: string;
  /** The tool's result fields; default `status: string, transactionId: string`. */
  resultFields?: string;
  /** More tools, each written in full under TOOLS. */
  moreTools?: string;
  /** The `done` step's lines after `REASONING: false`; default a reply naming the transaction. */
  done?: string;
  /** Whether the call's failure goes to a `failed` step (default true). */
  failedStep?: boolean;
}

/**
 * An agent that takes a payment through the async webhook tool `process_payment` (amount 42),
 * answering "Processing your payment." and suspending until the tool's callback or a resume, then
 * going to `done` (or `failed` when the call fails). Used by the callback and HTTP-async tests.
 */
export function paymentAgent(o: PaymentAgentOptions): string {
  const failed = o.failedStep ?? true;
  return `AGENT: ${o.name ?? 'Payments'}
GOAL: "Take a payment."
TOOLS:
  process_payment(amount: number) -> {${o.resultFields ?? 'status: string, transactionId: string'}}
    type: async_webhook
    endpoint: "${o.endpoint}"
    method: POST
    callback_url_field: "notify.url"
    ${o.timeout ?? 'timeout_seconds: 3600'}
${o.moreTools ?? ''}FLOW:
  steps: [pay, done${failed ? ', failed' : ''}]
  pay:
    REASONING: false
    RESPOND: "Processing your payment."
    CALL: process_payment
      WITH:
        amount: 42
      AS: payment
    ON_SUCCESS:
      THEN: done
${failed ? '    ON_FAIL:\n      THEN: failed\n' : ''}  done:
    REASONING: false
${o.done ?? '    RESPOND: "Payment {{payment.transactionId}} went through."\n'}${failed ? '  failed:\n    REASONING: false\n    RESPOND: "The payment did not go through."\n' : ''}`;
}

export interface EscalationAgentOptions {
  name: string;
  goal: string;
  /** The trigger fires when the gathered `amount` is over this. */
  over: number;
  reason: string;
  /** More lines of the trigger (TYPE, FIELDS, TAGS…), each indented by six spaces. */
  trigger?: string;
  /** The condition under which the session continues once the task ends; default `human.resolved == true`. */
  continueIf?: string;
  /** The name of the step after the escalation; default `done`. */
  after?: string;
  /** That step's reply. */
  respond: string;
}

/**
 * An agent that asks "How much?" and, for an amount over `over`, escalates to a person (a human
 * task) before its last step answers `respond`. Used by the human-task tests.
 */
export function escalationAgent(o: EscalationAgentOptions): string {
  const after = o.after ?? 'done';
  return `AGENT: ${o.name}
GOAL: "${o.goal}"
ESCALATE:
  triggers:
    - WHEN: amount > ${o.over} AND human IS NOT SET
      REASON: "${o.reason}"
${o.trigger ?? ''}  on_human_complete:
    - IF ${o.continueIf ?? 'human.resolved == true'}: CONTINUE
FLOW:
  steps: [ask, ${after}]
  ask:
    REASONING: false
    GATHER:
      - amount: required
        type: number
        prompt: "How much?"
    THEN: ${after}
  ${after}:
    REASONING: false
    RESPOND: "${o.respond}"
`;
}

export interface TraceEvent {
  type: string;
  data: Record<string, unknown>;
}

/** One message to `agentId` in a new session through POST /api/v1/chat/agent, which must answer 200: its body, and its raw text to search. */
export async function chatOnce(api: Api, owner: Owner, agentId: string, message: string) {
  const res = await api.post('/api/v1/chat/agent', { key: owner.adminKey, json: { projectId: owner.projectId, agentId, message } });
  expect(res.status).toBe(200);
  return { ...(res.body as { sessionId: string; response: string; traceEvents: TraceEvent[] }), text: res.text };
}
