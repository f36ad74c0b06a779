// What a delegation child workflow takes and returns, apart from its code: the session's
// effects start it by this type (workflows/effects.ts), and workflows/delegation.ts runs it.
import type { Json } from '../abl/ir';
import type { DelegateOutcome } from '../abl/runtime/contract';
import type { SessionContact, SessionStartInput, TraceEventOut, TurnTestContext } from './definitions';

export interface DelegationInput {
  tenantId: string;
  projectId: string;
  sessionId: string;
  bundleRef: SessionStartInput['bundleRef'];
  agent: string;
  input: Record<string, Json>;
  /** Child variables the parent reads back (RETURNS keys); null sends them all. */
  returns: string[] | null;
  toolMocks: NonNullable<TurnTestContext['toolMocks']>;
  parentAgent: string;
  /** The agents above this child, outermost first (absent in runs started before it: the parent alone). */
  chain?: string[];
  /** The parent's `delegate` span; the child's events hang under it. */
  rootSpan: string;
  /** The session's environment, whose tool secrets the child's tools use (absent in older runs: `dev`). */
  environment?: string;
  /** The session's deployment, whose workflowVersionManifest pins workflow tools (absent: latest). */
  deploymentId?: string;
  /**
   * Agent memory of the session (absent in runs without it): its facts as the turn began and its
   * contact. The child reads them, and saves what it writes under the same keys (`sessionId` is
   * the root session: the child shares its `execution_tree`).
   */
  memory?: { facts: Record<string, Json>; contact?: SessionContact };
}

export interface DelegationOutput {
  result: DelegateOutcome;
  traceEvents: TraceEventOut[];
  tokenCount: number;
  estimatedCost: number;
  errorCount: number;
}

/** The delegation workflow's signature, for `executeChild` (registered as `delegationWorkflow`). */
export type DelegationWorkflow = (input: DelegationInput) => Promise<DelegationOutput>;
