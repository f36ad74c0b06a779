// The connection to Temporal of a process that starts and talks to workflows (the API): connected
// lazily and re-tried, so the API starts (and reports not-ready) while Temporal is down, and
// recovers when it comes back.
import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor, type WorkflowClientInterceptor } from '@temporalio/client';
import { type DataConverter } from '@temporalio/common';
import { type TemporalConnectionSettings } from '../lib/temporal-options';

/**
 * How a call rides out Temporal not answering. The SDK's default retries an unavailable frontend
 * ten times over about 20 s, holding the HTTP request all along; here a call gives up after about
 * a second and the API answers 503 with Retry-After, so the client retries (with the same
 * Idempotency-Key) instead of the API holding its request.
 */
const RETRY_ATTEMPTS = 4;
/**
 * The channel reconnects at most this long after Temporal is back: gRPC's default backoff grows
 * to two minutes, which would keep the API not ready long after the frontend answers again.
 */
const MAX_RECONNECT_BACKOFF_MS = 2000;

export class TemporalGateway {
  private connecting: Promise<Client> | null = null;
  private connection: Connection | null = null;

  constructor(
    private readonly settings: TemporalConnectionSettings,
    readonly namespace: string,
    readonly taskQueue: string,
    /** The payload codec (lib/payload-codec.ts): what the client sends is encrypted, what it reads decrypted. */
    private readonly dataConverter: DataConverter = {},
    /** Workflow client interceptors (tracing, lib/tracing.ts); none when tracing is off. */
    private readonly workflowInterceptors: WorkflowClientInterceptor[] = [],
  ) {}

  /** The Temporal client, connecting on first use. */
  client(): Promise<Client> {
    if (!this.connecting) {
      this.connecting = Connection.connect({
        ...this.settings,
        connectTimeout: 3000,
        interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions({ maxAttempts: RETRY_ATTEMPTS }))],
        channelArgs: { 'grpc.max_reconnect_backoff_ms': MAX_RECONNECT_BACKOFF_MS },
      }).then(
        (connection) => {
          this.connection = connection;
          return new Client({ connection, namespace: this.namespace, dataConverter: this.dataConverter, ...(this.workflowInterceptors.length > 0 ? { interceptors: { workflow: this.workflowInterceptors } } : {}) });
        },
        (err: unknown) => {
          this.connecting = null;
          throw err;
        },
      );
    }
    return this.connecting;
  }

  /** Throws unless the frontend answers a health check within the timeout. */
  async ping(timeoutMs = 2000): Promise<void> {
    const client = await this.client();
    await client.withDeadline(Date.now() + timeoutMs, () =>
      client.connection.workflowService.getSystemInfo({}),
    );
  }

  async close(): Promise<void> {
    await this.connection?.close();
    this.connection = null;
    this.connecting = null;
  }
}
