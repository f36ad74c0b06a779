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

export const ZAgentAssistConversationResponse = z
  .object({ success: z.literal(true), data: z.object({ conversationId: z.string(), botId: z.string(), conversation: ZView }) })
  .openapi('AgentAssistConversationResponse');
