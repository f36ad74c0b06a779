// The failure converter of every Temporal client and worker: a failure's message and stack trace
// travel inside an encoded payload, so the payload codec encrypts them like any other payload.
// Loaded by path (FAILURE_CONVERTER_PATH) into the workflow bundle too: imports nothing else.
import { DefaultFailureConverter } from '@temporalio/common';

export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
