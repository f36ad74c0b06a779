// Starts an async tool call (ABL.md §5, "Async tools"): records the suspension with a fresh
// per-suspension secret (encrypted at rest), then sends the tool's request with the callback URL
// at the tool's `callback_url_field` and the secret beside it as `callbackSecret`. The secret is
// made and kept here, never returned, so it never reaches workflow history. A retried attempt
// reuses the record and its secret: the outside system may see the request more than once, always
// with the same callback URL and secret.
import { randomBytes } from 'node:crypto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Json, ToolIR } from '../../abl/ir';
import { CALLBACK_SECRET_PURPOSE, type SuspensionDoc } from '../../db/suspension';
import { isDuplicateKey } from '../../db/duplicate-key';
import { currentTraceparent } from '../../lib/tracing';
import type { ActivityDeps } from '../index';
import { runHttpTool } from './http-tool';
import { DEFAULT_TOOL_SECRET_ENVIRONMENT, scrubFailure, secretsForCall } from './tool-secrets';

export interface StartAsyncCallInput {
  tenantId: string;
  projectId: string;
  sessionId: string;
  /** Chosen by the workflow (deterministic), so a retried attempt finds its own record. */
  callbackId: string;
  commandId: string;
  agent: string;
  tool: ToolIR;
  args: Record<string, Json>;
  /** How long the request itself may take (the tool's timeout). */
  requestTimeoutMs: number;
  /** How long the session waits for the callback. */
  waitMs: number;
  messageMetadata?: Record<string, unknown>;
  /** The session's environment, whose tool secrets apply (`dev` when absent). */
  toolSecretEnvironment?: string;
}

export interface StartAsyncCallResult {
  callbackId: string;
  expiresAtMs: number;
}

/** The body field of the secret: the sibling of the callback URL's field. */
export function secretFieldFor(callbackUrlField: string): string {
  const dot = callbackUrlField.lastIndexOf('.');
  return dot < 0 ? 'callbackSecret' : `${callbackUrlField.slice(0, dot)}.callbackSecret`;
}

export function callbackUrl(publicBaseUrl: string, callbackId: string): string {
  return `${publicBaseUrl.replace(/\/+$/, '')}/api/v1/callbacks/${encodeURIComponent(callbackId)}`;
}

function traceparentField(): { traceparent?: string } {
  const traceparent = currentTraceparent();
  return traceparent ? { traceparent } : {};
}

export function createStartAsyncCall(deps: ActivityDeps) {
  const { models } = deps;

  /**
   * The suspension of this call, created once: a concurrent or retried attempt reads the first
   * one's. The insert comes first, so the usual first attempt costs one write and no read (the
   * record's `_id` is the callback id: a duplicate key means an earlier attempt stored it).
   */
  async function suspensionFor(input: StartAsyncCallInput, encryptor: NonNullable<ActivityDeps['encryptor']>): Promise<Pick<SuspensionDoc, 'secret' | 'expiresAt'>> {
    const secret = randomBytes(32).toString('base64url');
    const doc = {
      _id: input.callbackId,
      tenantId: input.tenantId,
      projectId: input.projectId,
      sessionId: input.sessionId,
      commandId: input.commandId,
      agent: input.agent,
      tool: input.tool.name,
      secret: encryptor.encrypt(input.tenantId, CALLBACK_SECRET_PURPOSE, secret),
      status: 'pending' as const,
      // The tool's own wait, within the platform's cap.
      expiresAt: new Date(Date.now() + Math.min(input.waitMs, deps.config.CALLBACK_MAX_WAIT_MS)),
      // The resume's span links back to this turn's trace (tracing on only).
      ...traceparentField(),
    };
    try {
      await models.Suspension.create(doc);
      return doc;
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
    }
    const stored = await models.Suspension.findOne({ _id: input.callbackId, tenantId: input.tenantId }).lean();
    if (!stored) throw ApplicationFailure.retryable('The suspension record could not be read back', 'CALLBACK_STORE');
    return stored;
  }

  return async function startAsyncCall(input: StartAsyncCallInput): Promise<StartAsyncCallResult> {
    const binding = input.tool.binding;
    if (binding.type !== 'http' || !binding.async) throw ApplicationFailure.nonRetryable(`Tool ${input.tool.name} is not an async tool`, 'TOOL_UNSUPPORTED');
    const encryptor = deps.encryptor;
    if (!encryptor) {
      throw ApplicationFailure.nonRetryable(`Tool ${input.tool.name}: async tools need ENCRYPTION_KEYS or ENCRYPTION_KEY to keep their callback secrets`, 'CALLBACK_UNAVAILABLE');
    }
    const suspension = await suspensionFor(input, encryptor);
    const secret = encryptor.decrypt(input.tenantId, CALLBACK_SECRET_PURPOSE, suspension.secret);
    // The tool's {{secrets.NAME}}, resolved here as for any tool call and scrubbed from failures.
    const secrets = await secretsForCall(deps.resolveToolSecrets, {
      tenantId: input.tenantId,
      projectId: input.projectId,
      tool: input.tool,
      ...(input.toolSecretEnvironment ? { environment: input.toolSecretEnvironment } : {}),
    });
    try {
      await runHttpTool(
        {
          tool: input.tool,
          args: input.args,
          timeoutMs: input.requestTimeoutMs,
          secrets: secrets.values,
          secretDestinations: secrets.destinations,
          credentialScope: JSON.stringify([input.tenantId, input.projectId, input.toolSecretEnvironment ?? DEFAULT_TOOL_SECRET_ENVIRONMENT]),
          messageMetadata: input.messageMetadata,
          bodyFields: { [binding.async.callbackUrlField]: callbackUrl(deps.config.PUBLIC_BASE_URL, input.callbackId), [secretFieldFor(binding.async.callbackUrlField)]: secret },
        },
        {
          allowPrivate: deps.config.TOOL_ALLOW_PRIVATE_NETWORKS,
          allowedPrivateDestinations: deps.config.TOOL_ALLOWED_PRIVATE_DESTINATIONS,
          signal: Context.current().cancellationSignal,
          maxResponseBytes: deps.config.TOOL_RESPONSE_MAX_BYTES,
          emptyOk: true,
        },
      );
    } catch (err) {
      // The failure's message goes to history and the trace: neither a tool secret nor the callback secret may ride along.
      throw scrubFailure(err, { ...secrets.values, callbackSecret: secret });
    }
    return { callbackId: input.callbackId, expiresAtMs: suspension.expiresAt.getTime() };
  };
}

/** The request could not be sent: the suspension will never be resumed, so a callback for it is refused. */
export function createCancelSuspension(deps: ActivityDeps) {
  return async function cancelSuspension(input: { tenantId: string; callbackId: string }): Promise<void> {
    await deps.models.Suspension.updateOne({ _id: input.callbackId, tenantId: input.tenantId, status: 'pending' }, { $set: { status: 'cancelled' } });
  };
}
