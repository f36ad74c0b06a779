// How the server ends a call it will not finish (its key revoked, the process stopping): the
// stream's last `error` event, or the 503 of a non-streamed call.
/** How the server ends a stream it will not finish: the `error` event's data. */
export interface ServerEnd {
  error: string;
  code: 'UNAUTHORIZED' | 'SERVICE_UNAVAILABLE';
  retryable: boolean;
}

/** A graceful stop's end for the calls still running when its grace period is over (a 503 for /complete). */
export const SHUTTING_DOWN: ServerEnd = {
  error: 'The API is restarting; send the request again',
  code: 'SERVICE_UNAVAILABLE',
  retryable: true,
};
