// The AgentAssistConversation workflow's messages and shapes, kept beside the other workflows'
// contracts and re-exported from ./definitions, which the API and the workflows import.
import { defineQuery, defineUpdate } from '@temporalio/workflow';

// AgentAssistConversation (`agent-assist/<botId>/<conversationId>`): one per conversation of a
// contact-centre's agent-assist hook. Each hook call is one update (its id the call's event id),
// whose validator refuses an event out of the lifecycle order before anything is recorded.

export type AgentAssistPhase = 'new' | 'active' | 'transferring' | 'exited' | 'summarized' | 'ended';
export type AgentAssistTransferType = 'NA' | 'COLD' | 'WARM' | 'REDIAL';

/** One hook event, reduced to what the lifecycle needs (the message text travels for the assist run). */
export type AgentAssistEvent =
  | { kind: 'message'; author: 'USER' | 'AGENT'; agentId: string; text: string; language: string }
  | { kind: 'transfer'; transferType: AgentAssistTransferType; transition: 'entry' | 'exit'; participant: string }
  | { kind: 'summary'; language: string; locale: string; type: string }
  | { kind: 'end'; reason: string; participant: string };

export interface AgentAssistView {
  phase: AgentAssistPhase;
  /** The participant identity of the agent that holds the conversation. */
  activeAgent: string | null;
  /** Warm-transfer consultants present beside the active agent. */
  consultants: string[];
  messages: number;
  events: number;
  summaryRequested: boolean;
}

export interface AgentAssistStartInput {
  tenantId: string;
  projectId: string;
  botId: string;
  conversationId: string;
  /** How long an ended conversation still answers repeated events as duplicates. */
  endedRetentionMs: number;
  /** The webhook push's retry schedule (the HTTP-async one); absent in runs started before the push. */
  delivery?: { initialIntervalMs: number; maxIntervalMs: number; windowMs: number };
  carried?: { view: AgentAssistView; seen: { id: string; view: AgentAssistView }[]; assist?: AgentAssistCarried };
}

/** One forwarded message as assist mode reads it (text cut to AGENT_ASSIST_MESSAGE_CHARS). */
export interface AgentAssistTranscriptEntry {
  /** The hook call's event id (`id:…` or `sha256:…`). */
  eventId: string;
  /** 1-based position among the conversation's messages. */
  n: number;
  author: 'USER' | 'AGENT';
  text: string;
}

/** A next-best action: something the agent declares (tool, intent, flow step, handoff, escalation) or a hint. */
export interface AgentAssistAction {
  kind: 'tool' | 'intent' | 'step' | 'handoff' | 'escalate' | 'hint';
  /** The declared name (tool, intent, step, target agent); null for a hint. */
  name: string | null;
  label: string;
  reason: string;
  /** 0–1. */
  confidence: number;
}

/** Suggestions for the human agent after one USER message. */
export interface AgentAssistSuggestion {
  id: string;
  /** The event id of the USER message it answers, and that message's position. */
  inReplyTo: { eventId: string; messageNumber: number };
  replies: string[];
  nextBestActions: AgentAssistAction[];
  model: string;
  createdAt: string;
}

export type AgentAssistDisposition = 'resolved' | 'unresolved' | 'follow_up' | 'escalated' | 'abandoned' | 'other';

/** The disposition summary produced on TRIGGER_SUMMARY_EVENT. */
export interface AgentAssistSummary {
  id: string;
  /** The event id of the call that carried TRIGGER_SUMMARY_EVENT, and what it asked for. */
  requestedBy: { eventId: string; language: string; locale: string; type: string };
  summary: string;
  disposition: AgentAssistDisposition;
  keyFacts: string[];
  model: string;
  createdAt: string;
}

/** What assist mode produced so far, as the read route shows it. */
export interface AgentAssistInsights {
  /** Oldest first; the last AGENT_ASSIST_SUGGESTIONS_KEPT. */
  suggestions: AgentAssistSuggestion[];
  summary: AgentAssistSummary | null;
  /** Assist runs queued or under way. */
  pending: number;
  /** The last assist run that failed (its model or agent unavailable); null once one succeeds. */
  lastError: { at: string; message: string } | null;
  webhook: { delivered: number; failed: number; pending: number; lastError: string | null };
}

export type AgentAssistJob =
  | { kind: 'suggest'; eventId: string; messageNumber: number }
  | { kind: 'summary'; eventId: string; language: string; locale: string; type: string };

export interface AgentAssistOutbound {
  /** Unique per conversation: the suggestion's or summary's id. */
  id: string;
  event: 'agent_assist.suggestion' | 'agent_assist.summary';
  body: Record<string, unknown>;
  queuedAtMs: number;
  attempts: number;
}

/** Assist state carried across continue-as-new. */
export interface AgentAssistCarried {
  transcript: AgentAssistTranscriptEntry[];
  participants: string[];
  transfers: string[];
  insights: AgentAssistInsights;
  jobs: AgentAssistJob[];
  outbox: AgentAssistOutbound[];
  seq: number;
}

/** The read route's answer: the lifecycle view and what assist mode produced. */
export interface AgentAssistDetail {
  view: AgentAssistView;
  insights: AgentAssistInsights;
}

export interface AgentAssistHookCall {
  /** The call's event id: a repeated call with the same id is answered as the first was. */
  eventId: string;
  events: AgentAssistEvent[];
}

export interface AgentAssistHookResult {
  duplicate: boolean;
  view: AgentAssistView;
}

export const agentAssistEventUpdate = defineUpdate<AgentAssistHookResult, [AgentAssistHookCall]>('agentAssistEvent');
export const agentAssistStateQuery = defineQuery<AgentAssistView>('agentAssistState');
export const agentAssistDetailQuery = defineQuery<AgentAssistDetail>('agentAssistDetail');
