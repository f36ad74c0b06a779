// Times an agent turn where it is sent to its session (the Workflow Update `turn`) for /metrics:
// from sending to the reply, so it includes Temporal's hops and the worker's work. Whichever
// process sends the turn observes it: the API for chat turns, the worker for HTTP-async
// conversations and app runs.
import { switchboardMetrics } from '../../lib/metrics/registry';

export type TurnChannel = 'api' | 'http_async' | 'app_run' | 'voice_realtime';

export async function timeTurn<T>(channel: TurnChannel, send: () => Promise<T>): Promise<T> {
  const started = process.hrtime.bigint();
  const observe = (outcome: 'ok' | 'error') =>
    switchboardMetrics().turnDuration.observe({ channel, outcome }, Number(process.hrtime.bigint() - started) / 1e9);
  try {
    const result = await send();
    observe('ok');
    return result;
  } catch (err) {
    observe('error');
    throw err;
  }
}
