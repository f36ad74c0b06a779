// Request and response schemas of the outbound-call routes (spec "Outbound call"; behaviour notes §7).
import { z } from 'zod';
import { queryInt, ZDateTime } from '../http/schemas';

const PHASES = ['accepted', 'dialing', 'ringing', 'in_progress', 'terminal'] as const;
const OUTCOMES = ['completed', 'busy', 'rejected', 'no_answer', 'machine', 'failed', 'canceled', 'expired'] as const;
const INITIATION_STATES = ['created', 'provider_requesting', 'submitted', 'provider_request_unknown', 'failed_to_submit'] as const;
const AMD = ['off', 'continue', 'disconnect'] as const;

// What the document states a destination must look like (lib/phone.ts checks it and answers
// INVALID_PHONE_NUMBER or SIP_INJECTION_REJECTED, the spec's codes, rather than a schema's 400).
const E164 = '\\+[1-9][0-9]{1,14}';
const HOST_LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
const PORT = '(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3})';
const SIP = `sips?:[A-Za-z0-9._~+-]{1,64}@${HOST_LABEL}(?:\\.${HOST_LABEL}){0,3}(?::${PORT})?(?:;transport=(?:udp|tcp|tls|ws|wss))?(?:;user=(?:phone|ip))?`;

export const ZOutboundParams = z.object({
  projectSlug: z.string().min(1).max(128).describe("The project's slug (or its id)"),
  env: z.string().min(1).max(64).describe('Deployment environment, e.g. production, staging, dev'),
});
export const ZOutboundCallParams = ZOutboundParams.extend({
  outboundCallId: z.string().min(1).max(64).describe('The id returned at initiation (`oc_…`)'),
});

export const ZInitiateBody = z
  .object({
    channelConnectionId: z.string().min(1).max(64),
    to: z.discriminatedUnion('type', [
      z.object({ type: z.literal('phone'), number: z.string().min(1).max(64).describe('E.164, e.g. +15551234567').openapi({ pattern: `^${E164}$`, example: '+15551234567' }) }).strict(),
      z.object({ type: z.literal('sip'), sipUri: z.string().min(1).max(1024).describe('sip:user@host[:port][;transport=…]; no headers').openapi({ pattern: `^${SIP}$`, maxLength: 256, example: 'sip:alice@pbx.example.com' }) }).strict(),
    ]),
    idempotencyKey: z.string().min(1).max(256).describe('The same key with the same body returns the original call'),
    clientReferenceId: z.string().min(1).max(256).nullable().optional(),
    amdMode: z.enum(AMD).optional().describe("Answering-machine detection; the connection's default when absent"),
    sessionMetadata: z.record(z.string(), z.unknown()).optional().describe('Kept with the call for its conversation session'),
  })
  .strict();

const ZFilters = {
  channelConnectionId: z.string().min(1).max(64).optional(),
  phase: z.enum(PHASES).optional(),
  outcome: z.enum(OUTCOMES).optional(),
  clientReferenceId: z.string().min(1).max(256).optional(),
  from: ZDateTime.optional().describe('Calls created at or after'),
  to: ZDateTime.optional().describe('Calls created at or before'),
};

export const ZListQuery = z.object({
  ...ZFilters,
  limit: queryInt(1, 100, 50).describe('Page size (1-100)'),
  cursor: z.string().min(1).max(512).optional().describe('nextCursor of the previous page'),
});

export const ZSummaryQuery = z.object({
  channelConnectionId: ZFilters.channelConnectionId,
  from: ZFilters.from,
  to: ZFilters.to,
});

export const ZSearchBody = z
  .object({
    destination: z.string().min(1).max(1024).describe('The real number (E.164) or SIP URI; matched by blind index, never echoed').openapi({ pattern: `^(?:${E164}|${SIP})$`, maxLength: 256, example: '+15551234567' }).optional(),
    ...ZFilters,
    limit: z.number().int().min(1).max(100).optional(),
    cursor: z.string().min(1).max(512).optional(),
  })
  .strict();

export const ZOutboundCall = z
  .object({
    outboundCallId: z.string(),
    channelConnectionId: z.string(),
    environment: z.string(),
    destinationType: z.enum(['phone', 'sip']),
    destination: z.string().describe('Always masked, e.g. +1********23'),
    clientReferenceId: z.string().nullable(),
    initiationState: z.enum(INITIATION_STATES),
    phase: z.enum(PHASES),
    outcome: z.enum(OUTCOMES).nullable(),
    failureReason: z.string().nullable(),
    amdMode: z.enum(AMD),
    providerCallSid: z.string().nullable().describe('Masked'),
    sessionId: z.string().nullable(),
    statusHistory: z.array(
      z.object({ phase: z.enum(PHASES), outcome: z.enum(OUTCOMES).nullable(), providerEventAt: z.string().nullable(), ingestedAt: z.string() }),
    ),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('OutboundCall');

export const ZInitiateResponse = z.object({
  success: z.literal(true),
  data: z.object({ outboundCallId: z.string(), phase: z.enum(PHASES), initiationState: z.enum(INITIATION_STATES) }),
});
export const ZCallResponse = z.object({ success: z.literal(true), data: ZOutboundCall });
export const ZListResponse = z.object({ success: z.literal(true), data: z.array(ZOutboundCall), nextCursor: z.string().nullable() });
export const ZSummaryResponse = z.object({
  success: z.literal(true),
  data: z.object({ total: z.number(), answered: z.number(), inFlight: z.number(), machineDetected: z.number(), byOutcome: z.record(z.string(), z.number()) }),
});
export const ZTerminateResponse = z.object({
  success: z.literal(true),
  data: z.object({ outboundCallId: z.string(), phase: z.enum(PHASES), outcome: z.enum(OUTCOMES).nullable() }),
});
export const ZEventStream = z
  .string()
  .describe(
    'text/event-stream: first `snapshot` {type, outboundCallId, phase, outcome, version, statusHistory}, then one `phase` event {type, outboundCallId, phase, outcome, version} per transition (the SSE id is the version), the last at `terminal`; `: heartbeat` comments every SSE_HEARTBEAT_MS. With Last-Event-ID the missed `phase` events come first, no snapshot.',
  );

// The status callback's form (Twilio's parameters; others are ignored).
export const ZStatusQuery = z.object({
  outboundCallId: z.string().min(1).max(64),
  /** Proof that the call is the connection's, set in the URL the call was placed with. */
  ref: z.string().max(64).optional(),
});
export const ZStatusParams = z.object({ channelConnectionId: z.string().min(1).max(64) });
export const ZStatusForm = z.record(z.string(), z.string());
export const ZNoContent = z.object({}).describe('No body');
