// AgentAssistConversation (`agent-assist/<botId>/<conversationId>`): the truth of one agent-assist
// conversation's lifecycle. Each hook call is an update whose validator applies the order rules
// (agent-assist-rules.ts), so an out-of-order call is refused synchronously and leaves no trace,
// and calls are taken one at a time however many arrive at once. A repeated event id is answered
// as the first time. After END_OF_CONVERSATION the workflow stays open `endedRetentionMs` to answer
// repeats, then ends; long conversations continue-as-new carrying their state.
// Assist mode runs beside the order: an accepted USER message queues a suggestion run, an accepted
// TRIGGER_SUMMARY_EVENT a summary run, each an activity (runAgentAssist) taken one at a time
// after the update has answered, so the hook never waits for a model; what they produce is kept
// for the read route and, when the bot has a webhook, pushed through a delivery lane that retries
// on the HTTP-async schedule.
import * as wf from '@temporalio/workflow';
import type { Activities } from '../activities';
import {
  agentAssistDetailQuery,
  agentAssistEventUpdate,
  agentAssistStateQuery,
  type AgentAssistCarried,
  type AgentAssistEvent,
  type AgentAssistHookResult,
  type AgentAssistInsights,
  type AgentAssistJob,
  type AgentAssistOutbound,
  type AgentAssistStartInput,
  type AgentAssistSuggestion,
  type AgentAssistSummary,
  type AgentAssistTranscriptEntry,
  type AgentAssistView,
} from './definitions';
import { AgentAssistOrderRefused, applyAgentAssistEvents, initialAgentAssistView } from './agent-assist-rules';
import { retryDelayMs } from './http-async-bodies';

const { runAgentAssist } = wf.proxyActivities<Activities>({
  // One model call (the agent's llm_timeout bounds it) and two small reads.
  startToCloseTimeout: '3 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '20 seconds', maximumAttempts: 3 },
});

/** One attempt: the receiver's 10 s plus reading the bot. */
const { deliverAgentAssistEvent } = wf.proxyActivities<Activities>({
  startToCloseTimeout: '20 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 3 },
});

/**
 * Assist mode: suggestion and summary runs, and the webhook push. Runs recorded before it never
 * scheduled those activities; asked once per run, when its first run is due.
 */
export const AGENT_ASSIST_INSIGHTS_PATCH = 'agent-assist-insights-v1';

/** Messages kept for assist runs, each cut to AGENT_ASSIST_MESSAGE_CHARS. */
export const AGENT_ASSIST_TRANSCRIPT_KEPT = 40;
export const AGENT_ASSIST_MESSAGE_CHARS = 2_000;
/** Suggestions kept for the read route. */
export const AGENT_ASSIST_SUGGESTIONS_KEPT = 20;
/** Pushes waiting for delivery; past this the oldest suggestion waiting is dropped. */
const OUTBOX_KEPT = 50;
/** The push schedule of runs started without one. */
const DEFAULT_DELIVERY = { initialIntervalMs: 1_000, maxIntervalMs: 3_600_000, windowMs: 24 * 3_600_000 };

const emptyInsights = (): AgentAssistInsights => ({ suggestions: [], summary: null, pending: 0, lastError: null, webhook: { delivered: 0, failed: 0, pending: 0, lastError: null } });

/** Event ids remembered for repeats (carried across continue-as-new). */
const SEEN_IDS = 500;
/** Calls per run before continuing as new, well under Temporal's 2,000 updates per run. */
const CALLS_PER_RUN = 1000;
/** A conversation whose first call was refused (it starts the workflow all the same) ends after this long without an accepted one. */
const NEW_IDLE_MS = 24 * 60 * 60 * 1000;

export const AGENT_ASSIST_OUT_OF_ORDER = 'AGENT_ASSIST_EVENT_OUT_OF_ORDER';

export async function agentAssistConversation(input: AgentAssistStartInput): Promise<AgentAssistView> {
  let view: AgentAssistView = input.carried?.view ?? initialAgentAssistView();
  const seen = [...(input.carried?.seen ?? [])];
  let calls = 0;

  const carriedAssist: AgentAssistCarried | undefined = input.carried?.assist;
  const transcript: AgentAssistTranscriptEntry[] = [...(carriedAssist?.transcript ?? [])];
  const participants: string[] = [...(carriedAssist?.participants ?? [])];
  const transfers: string[] = [...(carriedAssist?.transfers ?? [])];
  const insights: AgentAssistInsights = carriedAssist?.insights ?? emptyInsights();
  const jobs: AgentAssistJob[] = [...(carriedAssist?.jobs ?? [])];
  const outbox: AgentAssistOutbound[] = [...(carriedAssist?.outbox ?? [])];
  let seq = carriedAssist?.seq ?? 0;
  let rolling = false;
  let assistBusy = false;
  let deliveryBusy = false;
  // Decided when the first run is due (AGENT_ASSIST_INSIGHTS_PATCH); a continued run has it.
  let assisting: boolean | null = carriedAssist ? true : null;

  /** What assist mode needs of an accepted call: the messages, who held the conversation, and the runs it asks for. */
  const observe = (eventId: string, events: AgentAssistEvent[], before: AgentAssistView) => {
    let messages = before.messages;
    for (const e of events) {
      if (e.kind === 'message') {
        messages++;
        transcript.push({ eventId, n: messages, author: e.author, text: e.text.slice(0, AGENT_ASSIST_MESSAGE_CHARS) });
        if (transcript.length > AGENT_ASSIST_TRANSCRIPT_KEPT) transcript.splice(0, transcript.length - AGENT_ASSIST_TRANSCRIPT_KEPT);
        if (e.author === 'USER') jobs.push({ kind: 'suggest', eventId, messageNumber: messages });
      } else if (e.kind === 'transfer') {
        if (e.transition === 'entry' && !participants.includes(e.participant)) participants.push(e.participant);
        if (e.transferType !== 'NA') transfers.push(`${e.transferType} ${e.transition} ${e.participant}`);
      } else if (e.kind === 'summary') {
        jobs.push({ kind: 'summary', eventId, language: e.language, locale: e.locale, type: e.type });
      }
    }
    insights.pending = jobs.length + (assistBusy ? 1 : 0);
  };

  // An explicit event id is remembered (the last SEEN_IDS of them); a body's hash only matches the
  // call just before it, so the same lifecycle event later in the conversation (a second NA exit
  // after a redial) is a new event, and a retry of the latest call is still a repeat.
  const repeatOf = (eventId: string) => (eventId.startsWith('sha256:') ? (seen.at(-1)?.id === eventId ? seen.at(-1) : undefined) : seen.find((s) => s.id === eventId));

  const check = (events: Parameters<typeof applyAgentAssistEvents>[1]): AgentAssistView => {
    try {
      return applyAgentAssistEvents(view, events);
    } catch (err) {
      if (!(err instanceof AgentAssistOrderRefused)) throw err;
      throw wf.ApplicationFailure.create({ message: err.message, type: AGENT_ASSIST_OUT_OF_ORDER, nonRetryable: true, details: [{ expected: err.expected, phase: view.phase }] });
    }
  };

  wf.setHandler(agentAssistStateQuery, () => view);
  wf.setHandler(agentAssistDetailQuery, () => ({ view, insights }));
  wf.setHandler(
    agentAssistEventUpdate,
    (call): AgentAssistHookResult => {
      const repeat = repeatOf(call.eventId);
      if (repeat) return { duplicate: true, view: repeat.view };
      const before = view;
      view = check(call.events);
      observe(call.eventId, call.events, before);
      calls++;
      seen.push({ id: call.eventId, view });
      if (seen.length > SEEN_IDS) seen.splice(0, seen.length - SEEN_IDS);
      return { duplicate: false, view };
    },
    {
      validator: (call) => {
        if (repeatOf(call.eventId)) return;
        check(call.events);
      },
    },
  );

  const schedule = input.delivery ?? DEFAULT_DELIVERY;
  const nowIso = () => new Date(Date.now()).toISOString();

  const enqueuePush = (item: Omit<AgentAssistOutbound, 'queuedAtMs' | 'attempts'>) => {
    outbox.push({ ...item, queuedAtMs: Date.now(), attempts: 0 });
    // A receiver that is down must not grow the state without bound: the oldest suggestion waiting
    // (never the one under way, never a summary) is given up.
    if (outbox.length > OUTBOX_KEPT) {
      const drop = outbox.findIndex((o, i) => i > 0 && o.event === 'agent_assist.suggestion');
      if (drop > 0) {
        outbox.splice(drop, 1);
        insights.webhook.failed++;
        insights.webhook.lastError = 'a suggestion was dropped: too many pushes waiting for delivery';
      }
    }
    insights.webhook.pending = outbox.length;
  };

  const envelope = (event: string) => ({ event, botId: input.botId, conversationId: input.conversationId });

  /** One assist run; a failure (after the activity's retries) is recorded and the lane goes on. */
  async function runJob(job: AgentAssistJob): Promise<void> {
    const upTo = job.kind === 'suggest' ? transcript.filter((m) => m.n <= job.messageNumber) : transcript;
    let result;
    try {
      result = await runAgentAssist({
        tenantId: input.tenantId,
        projectId: input.projectId,
        botId: input.botId,
        conversationId: input.conversationId,
        mode: job.kind,
        transcript: upTo.map((m) => ({ author: m.author, text: m.text })),
        agents: [...participants],
        transfers: [...transfers],
        ...(job.kind === 'summary' ? { language: job.language } : {}),
      });
    } catch (err) {
      if (!(err instanceof wf.ActivityFailure) || wf.isCancellation(err)) throw err;
      insights.lastError = { at: nowIso(), message: (err.cause as Error | undefined)?.message ?? err.message };
      return;
    }
    if (!result.ok) {
      insights.lastError = { at: nowIso(), message: result.error };
      return;
    }
    insights.lastError = null;
    seq++;
    if (result.mode === 'suggest' && job.kind === 'suggest') {
      const suggestion: AgentAssistSuggestion = {
        id: `sug-${seq}`,
        inReplyTo: { eventId: job.eventId, messageNumber: job.messageNumber },
        replies: result.answer.replies,
        nextBestActions: result.answer.nextBestActions,
        model: result.model,
        createdAt: nowIso(),
      };
      insights.suggestions.push(suggestion);
      if (insights.suggestions.length > AGENT_ASSIST_SUGGESTIONS_KEPT) insights.suggestions.splice(0, insights.suggestions.length - AGENT_ASSIST_SUGGESTIONS_KEPT);
      if (result.push) enqueuePush({ id: suggestion.id, event: 'agent_assist.suggestion', body: { ...envelope('agent_assist.suggestion'), id: suggestion.id, suggestion: { ...suggestion } } });
    } else if (result.mode === 'summary' && job.kind === 'summary') {
      const summary: AgentAssistSummary = {
        id: `sum-${seq}`,
        requestedBy: { eventId: job.eventId, language: job.language, locale: job.locale, type: job.type },
        ...result.answer,
        model: result.model,
        createdAt: nowIso(),
      };
      insights.summary = summary;
      if (result.push) enqueuePush({ id: summary.id, event: 'agent_assist.summary', body: { ...envelope('agent_assist.summary'), id: summary.id, summary: { ...summary } } });
    }
  }

  async function assistLane(): Promise<void> {
    for (;;) {
      await wf.condition(() => jobs.length > 0 || rolling);
      if (rolling) return;
      assisting ??= wf.patched(AGENT_ASSIST_INSIGHTS_PATCH);
      if (!assisting) {
        // A run recorded before assist mode: nothing is produced.
        jobs.length = 0;
        insights.pending = 0;
        continue;
      }
      const job = jobs.shift()!;
      // A suggestion answers the latest USER message only: one already followed by another waiting is skipped.
      if (job.kind === 'suggest' && jobs.some((j) => j.kind === 'suggest')) {
        insights.pending = jobs.length;
        continue;
      }
      assistBusy = true;
      insights.pending = jobs.length + 1;
      await runJob(job);
      assistBusy = false;
      insights.pending = jobs.length;
    }
  }

  /** Delivers the oldest push until delivered or given up (true), or until the run rolls over (false). */
  async function deliver(d: AgentAssistOutbound): Promise<boolean> {
    for (;;) {
      const nextWait = retryDelayMs(d.attempts + 1, schedule, Math.random);
      const final = Date.now() + nextWait - d.queuedAtMs > schedule.windowMs;
      let answer: { outcome: string; error: string | null };
      try {
        answer = await deliverAgentAssistEvent({ tenantId: input.tenantId, botId: input.botId, event: d.event, body: d.body });
      } catch (err) {
        if (!(err instanceof wf.ActivityFailure) || wf.isCancellation(err)) throw err;
        answer = { outcome: 'failed', error: 'the delivery could not be attempted (internal error)' };
      }
      if (answer.outcome === 'dropped') return true;
      d.attempts++;
      if (answer.outcome === 'delivered') {
        insights.webhook.delivered++;
        return true;
      }
      insights.webhook.lastError = answer.error;
      if (answer.outcome === 'failed' && !final) {
        if (await wf.condition(() => rolling, nextWait)) return false;
        continue;
      }
      insights.webhook.failed++;
      return true;
    }
  }

  async function deliveryLane(): Promise<void> {
    for (;;) {
      await wf.condition(() => outbox.length > 0 || rolling);
      if (rolling) return;
      deliveryBusy = true;
      const done = await deliver(outbox[0]!);
      deliveryBusy = false;
      if (!done) return;
      outbox.shift();
      insights.webhook.pending = outbox.length;
    }
  }

  const lanes = Promise.all([assistLane(), deliveryLane()]);
  const assistIdle = () => jobs.length === 0 && outbox.length === 0 && !assistBusy && !deliveryBusy;

  if (!input.carried && !(await wf.condition(() => view.phase !== 'new', NEW_IDLE_MS))) {
    await wf.condition(wf.allHandlersFinished);
    return view;
  }
  await wf.condition(() => view.phase === 'ended' || calls >= CALLS_PER_RUN || wf.workflowInfo().continueAsNewSuggested);
  if (view.phase !== 'ended') {
    await wf.condition(wf.allHandlersFinished);
    // The lanes stop between steps; what is queued goes on in the next run.
    rolling = true;
    await lanes;
    const assist: AgentAssistCarried | undefined = (assisting as boolean | null) === false ? undefined : { transcript, participants, transfers, insights, jobs, outbox, seq };
    return wf.continueAsNew<typeof agentAssistConversation>({ ...input, carried: { view, seen, ...(assist ? { assist } : {}) } });
  }
  await wf.sleep(input.endedRetentionMs);
  // A summary still being written or pushed is finished first.
  await wf.condition(() => assistIdle() && wf.allHandlersFinished());
  return view;
}
