// Where an HTTP-async conversation's delivery lane is, for tests that look at it: the session that
// runs it while that session runs, else the conversation's own workflow.
import { conversationWorkflowId } from '../../lib/http-async/session-key';
import { httpAsyncStateQuery } from '../../workflows/definitions';
import { decodeEncryptedPayloads } from '../fixtures/histories/history-json';
import { type TestStack } from './stack';
import { sessionHistory } from './workflow-history';

/** The workflow that runs the lane now: `session/<id>` or `http-async/<hash>`. */
export async function laneWorkflowId(stack: TestStack, sessionKey: string): Promise<string> {
  const workflowId = conversationWorkflowId(sessionKey);
  const record = await stack.ctx.models.HttpAsyncConversation.findOne({ _id: workflowId }, { laneSessionId: 1 }).lean();
  if (!record?.laneSessionId) return workflowId;
  const client = await stack.ctx.temporal.client();
  const described = await client.workflow.getHandle(`session/${record.laneSessionId}`).describe().catch(() => null);
  return described?.status.name === 'RUNNING' ? `session/${record.laneSessionId}` : workflowId;
}

/** The conversation's queued messages and pending deliveries, as the lane's owner counts them. */
export async function laneState(stack: TestStack, sessionKey: string) {
  return (await stack.ctx.temporal.client()).workflow.getHandle(await laneWorkflowId(stack, sessionKey)).query(httpAsyncStateQuery);
}

/** The lane owner's history, decoded as a worker sees it (so it replays), with its workflow id. */
export async function laneHistory(stack: TestStack, sessionKey: string) {
  const workflowId = await laneWorkflowId(stack, sessionKey);
  if (workflowId.startsWith('session/')) return { workflowId, history: await sessionHistory(stack, workflowId.slice('session/'.length)) };
  const stored = await (await stack.ctx.temporal.client()).workflow.getHandle(workflowId).fetchHistory();
  return { workflowId, history: await decodeEncryptedPayloads(stored, stack.ctx.payloadCodec) };
}
