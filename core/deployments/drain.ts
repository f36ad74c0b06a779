// Starts a deployment's DeploymentDrain workflow (`deployment-drain/<id>`) with the search
// attributes sessions carry, so an operator finds it next to them in the Temporal Web UI.
import { TypedSearchAttributes } from '@temporalio/common';
import { DomainError } from '../../lib/errors';
import { type DeploymentDoc } from '../../db/deployment';
import { type DeploymentDrainInput, type DeploymentDrainWorkflow } from '../../workflows/definitions';
import { DeploymentIdKey, EnvironmentKey, ProjectIdKey, TenantIdKey } from '../../workflows/search-attributes';
import { type CoreContext } from '../context';
import { TEMPORAL_CALL_TIMEOUT_MS, withDeadline } from '../sessions/workflow-client';

export const DEPLOYMENT_DRAIN_WORKFLOW_TYPE = 'deploymentDrain';
export const drainWorkflowId = (deploymentId: string): string => `deployment-drain/${deploymentId}`;

/**
 * Starts the drain; one already running for the deployment is kept. Called before the retire is
 * written: if Temporal cannot take it, the retire fails with 503 and nothing has changed.
 */
export async function startDeploymentDrain(ctx: CoreContext, deployment: Pick<DeploymentDoc, '_id' | 'tenantId' | 'projectId' | 'environment'>): Promise<void> {
  const input: DeploymentDrainInput = {
    tenantId: deployment.tenantId,
    projectId: deployment.projectId,
    deploymentId: deployment._id,
    environment: deployment.environment,
    drainTimeoutMs: ctx.config.DEPLOYMENT_DRAIN_TIMEOUT_MS,
    idleMs: ctx.config.DEPLOYMENT_DRAIN_IDLE_MS,
    pollMs: ctx.config.DEPLOYMENT_DRAIN_POLL_MS,
  };
  try {
    const client = await ctx.temporal.client();
    await withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS, () =>
      client.workflow.start<DeploymentDrainWorkflow>(DEPLOYMENT_DRAIN_WORKFLOW_TYPE, {
        workflowId: drainWorkflowId(deployment._id),
        taskQueue: ctx.config.TEMPORAL_TASK_QUEUE,
        args: [input],
        workflowIdConflictPolicy: 'USE_EXISTING',
        typedSearchAttributes: new TypedSearchAttributes([
          { key: TenantIdKey, value: deployment.tenantId },
          { key: ProjectIdKey, value: deployment.projectId },
          { key: EnvironmentKey, value: deployment.environment },
          { key: DeploymentIdKey, value: deployment._id },
        ]),
        staticSummary: `drain deployment ${deployment._id} · ${deployment.environment}`,
      }),
    );
  } catch (err) {
    throw new DomainError('SERVICE_UNAVAILABLE', { message: 'The runtime is unavailable; the deployment was not retired. Retry', cause: err });
  }
}
