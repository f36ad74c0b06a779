// Request and response schemas of the agent-assist hook (docs/agent-assist.md): one body for a
// forwarded message or lifecycle events, as the spec's "Agent-assist conversation hooks" lists them.
import { z } from 'zod';
import '../openapi/registry';

const ZText = (max: number) => z.string().min(1).max(max);
const ZExperience = z.enum(['chat', 'voice']);
const ZCustomFields = z.record(z.string().max(100), z.unknown());

const ZParticipant = z.object({
  identity: ZText(200).describe('The human agent; what the order rules follow from entry to exit'),
  name: z.string().max(200).optional(),
  type: z.string().max(50).optional().describe('`agent`'),
  customFields: z.object({ agentEmail: z.string().max(320).optional(), queueId: z.string().max(200).optional(), queueName: z.string().max(200).optional() }).optional(),
});

export const TRANSFER_TYPES = ['NA', 'COLD', 'WARM', 'REDIAL', 'na', 'cold', 'warm', 'redial', 'Redial'] as const;

const ZTransferEvent = z.object({
  name: z.literal('INTERNAL_TRANSFER_EVENT'),
  transfertype: z.enum(TRANSFER_TYPES).describe('`NA` first entry and final exit, `COLD`, `WARM`, `redial` (any case)'),
  transition: z.enum(['entry', 'exit']),
  isExtAD: z.union([z.boolean(), z.enum(['true', 'false'])]),
  language: z.string().max(50).optional(),
  experience: ZExperience,
  participant: ZParticipant,
  customFields: ZCustomFields.optional(),
  reason: z.string().max(200).optional(),
});

const ZSummaryEvent = z.object({
  name: z.literal('TRIGGER_SUMMARY_EVENT'),
  data: z.object({ language: ZText(50), locale: ZText(20), type: ZText(50).describe('for example `post`') }),
});

const ZEndEvent = z.object({
  name: z.literal('END_OF_CONVERSATION'),
  reason: ZText(200).describe('for example `agent_initiated`'),
  language: ZText(50),
  experience: ZExperience,
  participant: ZParticipant,
  customFields: ZCustomFields.optional(),
});

export const ZAgentAssistLifecycleEvent = z.discriminatedUnion('name', [ZTransferEvent, ZSummaryEvent, ZEndEvent]);
export type AgentAssistLifecycleEventBody = z.infer<typeof ZAgentAssistLifecycleEvent>;

const MESSAGE_FIELDS = ['query', 'agentId', 'experience', 'author', 'source', 'sendUserMessage', 'sendAgentMessage', 'language'] as const;

export const ZAgentAssistHookBody = z
  .object({
    conversationId: ZText(200).describe('Constant for the whole lifecycle'),
    botId: ZText(100).describe('Must be the path\'s botId'),
    eventId: ZText(200).optional().describe('Optional: the call\'s id, so a retry is recognised; without it a byte-identical body is taken as a retry'),
    query: z.string().min(1).max(16_000).optional().describe('Message text'),
    agentId: z.string().max(200).optional(),
    experience: ZExperience.optional(),
    author: z.object({ type: z.enum(['USER', 'AGENT']) }).optional(),
    source: z.string().max(200).optional(),
    sendUserMessage: z.boolean().optional(),
    sendAgentMessage: z.boolean().optional(),
    language: z.string().max(50).optional(),
    events: z.array(ZAgentAssistLifecycleEvent).max(10).optional().describe('Lifecycle events, applied in order, all or none'),
  })
  .superRefine((body, ctx) => {
    if (body.events && body.events.length > 0) {
      if (body.query !== undefined) ctx.addIssue({ code: 'custom', path: ['query'], message: 'a call carries either a message (query) or lifecycle events, not both' });
      return;
    }
    for (const field of MESSAGE_FIELDS) {
      if (body[field] === undefined) ctx.addIssue({ code: 'custom', path: [field], message: 'required for a message event (a call without events)' });
    }
  })
  .openapi('AgentAssistHookRequest');
export type AgentAssistHookBody = z.infer<typeof ZAgentAssistHookBody>;

export const ZAgentAssistHookParams = z.object({ botId: ZText(100).describe('The bot id the admin CLI printed (`aab-…`)') });

export const ZAgentAssistConversationParams = z.object({
  botId: ZText(100).describe('The bot id'),
  conversationId: ZText(200).describe('The conversation id (URL-encoded)'),
});

const ZView = z.object({
  phase: z.enum(['new', 'active', 'transferring', 'exited', 'summarized', 'ended']),
  activeAgent: z.string().nullable(),
  consultants: z.array(z.string()),
  messages: z.number().int(),
  events: z.number().int(),
  summaryRequested: z.boolean(),
});

export const ZAgentAssistHookResponse = z
  .object({
    success: z.literal(true),
    data: z.object({
      conversationId: z.string(),
      botId: z.string(),
      eventId: z.string().describe('`id:<eventId>` or `sha256:<hash of the body>`'),
      duplicate: z.boolean().describe('True when this event id was taken before; nothing changed'),
      conversation: ZView.describe('The conversation after the call'),
    }),
  })
  .openapi('AgentAssistHookResponse');

const ZAction = z
  .object({
    kind: z.enum(['tool', 'intent', 'step', 'handoff', 'escalate', 'hint']).describe("What the agent declares that fits (a TOOLS tool, an NLU intent, a FLOW step, a HANDOFF target, its ESCALATE), or `hint`: advice that fits nothing declared"),
    name: z.string().nullable().describe('The declared name; null for `hint` and `escalate`'),
    label: z.string(),
    reason: z.string(),
    confidence: z.number().min(0).max(1),
  })
  .openapi('AgentAssistAction');

export const ZAgentAssistSuggestion = z
  .object({
    id: z.string().describe('`sug-<n>`, unique in the conversation'),
    inReplyTo: z.object({ eventId: z.string().describe('The hook answer\'s `eventId` of the USER message'), messageNumber: z.number().int().describe("The message's position among the conversation's messages, from 1") }),
    replies: z.array(z.string()).describe('What the human agent could say next (at most 3)'),
    nextBestActions: z.array(ZAction).describe('At most 5, best first'),
    model: z.string().describe('`provider:model` that wrote it'),
    createdAt: z.string(),
  })
  .openapi('AgentAssistSuggestion');

export const ZAgentAssistSummary = z
  .object({
    id: z.string().describe('`sum-<n>`'),
    requestedBy: z.object({ eventId: z.string(), language: z.string(), locale: z.string(), type: z.string() }).describe('The TRIGGER_SUMMARY_EVENT call'),
    summary: z.string(),
    disposition: z.enum(['resolved', 'unresolved', 'follow_up', 'escalated', 'abandoned', 'other']),
    keyFacts: z.array(z.string()),
    model: z.string(),
    createdAt: z.string(),
  })
  .openapi('AgentAssistSummary');

export const ZAgentAssistConversationResponse = z
  .object({
    success: z.literal(true),
    data: z.object({
      conversationId: z.string(),
      botId: z.string(),
      conversation: ZView,
      suggestions: z.array(ZAgentAssistSuggestion).describe('Latest first (the last 20); one per USER message answered'),
      nextBestActions: z.array(ZAction).describe("The latest suggestion's next-best actions (empty before the first)"),
      summary: ZAgentAssistSummary.nullable().describe('The disposition summary, once TRIGGER_SUMMARY_EVENT was answered'),
      assist: z.object({
        pending: z.number().int().describe('Assist runs queued or under way'),
        lastError: z.object({ at: z.string(), message: z.string() }).nullable().describe('The latest assist run that failed, until one succeeds'),
        webhook: z
          .object({ delivered: z.number().int(), failed: z.number().int(), pending: z.number().int(), lastError: z.string().nullable() })
          .describe("Pushes to the bot's webhook"),
      }),
    }),
  })
  .openapi('AgentAssistConversationResponse');
