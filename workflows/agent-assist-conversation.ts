// AgentAssistConversation (`agent-assist/<botId>/<conversationId>`): the truth of one agent-assist
// conversation's lifecycle. Each hook call is an update whose validator applies the order rules
// (agent-assist-rules.ts), so an out-of-order call is refused synchronously and leaves no trace,
// and calls are taken one at a time however many arrive at once. A repeated event id is answered
// as the first time. After END_OF_CONVERSATION the workflow stays open `endedRetentionMs` to answer
// repeats, then ends; long conversations continue-as-new carrying their state.
import * as wf from '@temporalio/workflow';
import { agentAssistEventUpdate, agentAssistStateQuery, type AgentAssistHookResult, type AgentAssistStartInput, type AgentAssistView } from './definitions';
import { AgentAssistOrderRefused, applyAgentAssistEvents, initialAgentAssistView } from './agent-assist-rules';

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
  wf.setHandler(
    agentAssistEventUpdate,
    (call): AgentAssistHookResult => {
      const repeat = repeatOf(call.eventId);
      if (repeat) return { duplicate: true, view: repeat.view };
      view = check(call.events);
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

  if (!input.carried && !(await wf.condition(() => view.phase !== 'new', NEW_IDLE_MS))) {
    await wf.condition(wf.allHandlersFinished);
    return view;
  }
  await wf.condition(() => view.phase === 'ended' || calls >= CALLS_PER_RUN || wf.workflowInfo().continueAsNewSuggested);
  if (view.phase !== 'ended') {
    await wf.condition(wf.allHandlersFinished);
    return wf.continueAsNew<typeof agentAssistConversation>({ ...input, carried: { view, seen } });
  }
  await wf.sleep(input.endedRetentionMs);
  await wf.condition(wf.allHandlersFinished);
  return view;
}
