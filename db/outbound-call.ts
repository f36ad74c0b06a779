// Outbound calls as people list and search them: the projection the OutboundCall workflow writes
// after each change (the workflow is the truth of a live call), plus what the API fixed at
// initiation: the idempotency key with a hash of its request (a unique index makes a retried
// initiate find the first call, never place a second), and the destination, sealed with the
// tenant's data key and searchable only by its keyed blind index (HMAC-SHA256 of the normalised
// number): no index, URL, log or response ever holds the number in clear.
import { createHmac } from 'node:crypto';
import { Schema, type Connection, type Model } from 'mongoose';
import { createId } from '@paralleldrive/cuid2';
import { type KeyRing } from '../lib/key-ring';
import { seal, unseal, type Sealed } from '../lib/secret-envelope';
import { SealedSchema, tenantDataKey, type TenantDataKeyModel } from './tenant-data-key';

// The same vocabularies as the workflow's contract (workflows/definitions.ts), which db/ may not import.
export const OUTBOUND_PHASES = ['accepted', 'dialing', 'ringing', 'in_progress', 'terminal'] as const;
export type OutboundPhase = (typeof OUTBOUND_PHASES)[number];
export const OUTBOUND_OUTCOMES = ['completed', 'busy', 'rejected', 'no_answer', 'machine', 'failed', 'canceled', 'expired'] as const;
export type OutboundOutcome = (typeof OUTBOUND_OUTCOMES)[number];
export const OUTBOUND_INITIATION_STATES = ['created', 'provider_requesting', 'submitted', 'provider_request_unknown', 'failed_to_submit'] as const;
export type OutboundInitiationState = (typeof OUTBOUND_INITIATION_STATES)[number];
export interface OutboundStatusEntry {
  phase: OutboundPhase;
  outcome: OutboundOutcome | null;
  providerEventAt: string | null;
  ingestedAt: string;
  version: number;
}

export const OUTBOUND_CALL_ID_PREFIX = 'oc_';
export const newOutboundCallId = (): string => OUTBOUND_CALL_ID_PREFIX + createId();
export const DESTINATION_TYPES = ['phone', 'sip'] as const;
export type DestinationType = (typeof DESTINATION_TYPES)[number];

export interface OutboundCallDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  environment: string;
  channelConnectionId: string;
  destinationType: DestinationType;
  /** The destination, sealed; opened only to place the call. */
  destination: Sealed;
  /** The destination as responses show it. */
  destinationMasked: string;
  /** HMAC-SHA256 (hex) of the normalised destination under the index key (`destinationIndex`). */
  destinationIndex: string;
  clientReferenceId: string | null;
  idempotencyKey: string;
  /** SHA-256 of the initiate request's canonical body: the same key with another body is a conflict. */
  requestHash: string;
  amdMode: 'off' | 'continue' | 'disconnect';
  sessionMetadata: Record<string, unknown> | null;
  phase: OutboundPhase;
  outcome: OutboundOutcome | null;
  initiationState: OutboundInitiationState;
  failureReason: string | null;
  providerCallSid: string | null;
  sessionId: string | null;
  answeredBy: string | null;
  statusHistory: OutboundStatusEntry[];
  /** Phase transitions so far (SSE event ids). */
  version: number;
  /** The workflow's revision this row holds; a write of an older one is a no-op. */
  revision: number;
  createdAt: Date;
  updatedAt: Date;
}

const StatusEntrySchema = new Schema<OutboundStatusEntry>(
  {
    phase: { type: String, required: true, enum: OUTBOUND_PHASES },
    outcome: { type: String, default: null },
    providerEventAt: { type: String, default: null },
    ingestedAt: { type: String, required: true },
    version: { type: Number, required: true },
  },
  { _id: false },
);

const OutboundCallSchema = new Schema<OutboundCallDoc>(
  {
    _id: { type: String, default: newOutboundCallId },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    environment: { type: String, required: true },
    channelConnectionId: { type: String, required: true },
    destinationType: { type: String, required: true, enum: DESTINATION_TYPES },
    destination: { type: SealedSchema, required: true },
    destinationMasked: { type: String, required: true },
    destinationIndex: { type: String, required: true },
    clientReferenceId: { type: String, default: null },
    idempotencyKey: { type: String, required: true },
    requestHash: { type: String, required: true },
    amdMode: { type: String, required: true },
    sessionMetadata: { type: Schema.Types.Mixed, default: null },
    phase: { type: String, required: true, enum: OUTBOUND_PHASES },
    outcome: { type: String, default: null, enum: [...OUTBOUND_OUTCOMES, null] },
    initiationState: { type: String, required: true, enum: OUTBOUND_INITIATION_STATES },
    failureReason: { type: String, default: null },
    providerCallSid: { type: String, default: null },
    sessionId: { type: String, default: null },
    answeredBy: { type: String, default: null },
    statusHistory: { type: [StatusEntrySchema], default: [] },
    version: { type: Number, required: true, default: 1 },
    revision: { type: Number, required: true, default: 0 },
  },
  { timestamps: true, versionKey: false, minimize: false },
);
// One call per idempotency key in a project: concurrent retries race on this, one insert wins.
OutboundCallSchema.index({ tenantId: 1, projectId: 1, idempotencyKey: 1 }, { unique: true });
// The list (newest first, cursor on createdAt then _id), and each of its filters in front of it.
OutboundCallSchema.index({ tenantId: 1, projectId: 1, environment: 1, createdAt: -1, _id: -1 });
OutboundCallSchema.index({ tenantId: 1, projectId: 1, environment: 1, channelConnectionId: 1, createdAt: -1 });
OutboundCallSchema.index({ tenantId: 1, projectId: 1, environment: 1, phase: 1, createdAt: -1 });
OutboundCallSchema.index({ tenantId: 1, projectId: 1, environment: 1, outcome: 1, createdAt: -1 });
OutboundCallSchema.index({ tenantId: 1, projectId: 1, environment: 1, clientReferenceId: 1, createdAt: -1 });
OutboundCallSchema.index({ tenantId: 1, projectId: 1, environment: 1, destinationIndex: 1, createdAt: -1 });

export type OutboundCallModel = Model<OutboundCallDoc>;
export const outboundCallModel = (c: Connection): OutboundCallModel => c.model<OutboundCallDoc>('OutboundCall', OutboundCallSchema, 'outbound_calls');

interface CallPlace {
  _id: string;
  tenantId: string;
  projectId: string;
}

/** Additional data binding a sealed destination to its call. */
export function destinationAad(place: CallPlace): string {
  return JSON.stringify(['switchboard/outbound-call-destination/v1', place.tenantId, place.projectId, place._id]);
}

export async function sealDestination(keys: TenantDataKeyModel, ring: KeyRing, place: CallPlace, destination: string): Promise<Sealed> {
  return sealDestinationWith(await tenantDataKey(keys, ring, place.tenantId), place, destination);
}

/** The same, with the tenant's data key already at hand. */
export function sealDestinationWith(dataKey: Buffer, place: CallPlace, destination: string): Sealed {
  return seal(dataKey, destinationAad(place), Buffer.from(destination, 'utf8'));
}

/** The destination in clear, to place the call. @throws when the key is missing or the value was moved. */
export async function openDestination(keys: TenantDataKeyModel, ring: KeyRing, doc: CallPlace & { destination: Sealed }): Promise<string> {
  return unseal(await tenantDataKey(keys, ring, doc.tenantId), destinationAad(doc), doc.destination).toString('utf8');
}

/** The blind index of a normalised destination (lib/phone.ts `normalizedDestination`), bound to the tenant. */
export function destinationIndex(indexKey: Buffer, tenantId: string, normalized: string): string {
  return createHmac('sha256', indexKey).update(JSON.stringify([tenantId, normalized])).digest('hex');
}

/** The workflow's view as a projection write: every field it owns, nothing the API fixed. */
export type OutboundCallProjection = Pick<OutboundCallDoc, 'phase' | 'outcome' | 'initiationState' | 'failureReason' | 'providerCallSid' | 'sessionId' | 'answeredBy' | 'statusHistory' | 'version' | 'revision'> & { updatedAt: string };

export function outboundCallProjection(view: OutboundCallProjection): Partial<OutboundCallDoc> {
  return {
    phase: view.phase,
    outcome: view.outcome,
    initiationState: view.initiationState,
    failureReason: view.failureReason,
    providerCallSid: view.providerCallSid,
    sessionId: view.sessionId,
    answeredBy: view.answeredBy,
    statusHistory: view.statusHistory,
    version: view.version,
    revision: view.revision,
    updatedAt: new Date(view.updatedAt),
  };
}
