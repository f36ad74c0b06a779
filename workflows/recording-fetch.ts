// RecordingFetch: copies one completed call recording from the provider into GridFS. The copy is
// an activity retried with backoff for about an hour (a worker that dies mid-copy is replaced by
// another attempt, which starts over); when it gives up, or the provider refuses for good, the
// recording is marked unavailable with the reason.
import * as wf from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { RecordingFetchInput, RecordingFetchWorkflow } from './definitions';

const { fetchRecordingMedia } = wf.proxyActivities<Activities>({
  startToCloseTimeout: '30 minutes',
  // Beats come every 5 s while bytes arrive: a copy that stalls, or whose worker died, is retried after 30 s.
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '5 minutes', maximumAttempts: 15, nonRetryableErrorTypes: ['RECORDING_UNAVAILABLE'] },
});

const { markRecordingUnavailable } = wf.proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

type Reason = Parameters<Activities['markRecordingUnavailable']>[0]['reason'];

export const recordingFetch: RecordingFetchWorkflow = async (input: RecordingFetchInput) => {
  try {
    return await fetchRecordingMedia(input);
  } catch (err) {
    const cause = err instanceof wf.ActivityFailure ? err.cause : err;
    const reason = cause instanceof wf.ApplicationFailure && cause.type === 'RECORDING_UNAVAILABLE' && typeof cause.details?.[0] === 'string' ? (cause.details[0] as Reason) : 'media_not_available';
    await markRecordingUnavailable({ ...input, reason });
    return { availability: 'unavailable' };
  }
};
