// The deletion cascade covers every collection: each model of the registry (db/models.ts) whose
// documents carry a tenant (`tenantId`, or `metadata.tenantId` for GridFS files) has a rule for a
// project's and a tenant's deletion, and a `project` rule only where the schema has a projectId. A
// new collection without a rule fails here.
import mongoose from 'mongoose';
import { createModels } from '../../../db/models';
import { CASCADE } from '../../../core/lifecycle/cascade';
import { runningWorkflowsQuery } from '../../../core/lifecycle/workflows';

const models = createModels(mongoose.createConnection());
const entries = Object.entries(models).filter(([, m]) => typeof m === 'function') as unknown as [string, mongoose.Model<unknown>][];

describe('deletion cascade', () => {
  it('has a rule for every model holding a tenant’s data, and no rule for a model that does not exist', () => {
    const tenantHeld = entries
      .filter(([name, m]) => m.schema.path('tenantId') || m.schema.path('metadata.tenantId') || name === 'Tenant' || name === 'SessionCapacityCount')
      .map(([name]) => name);
    expect(tenantHeld.length).toBeGreaterThan(40);
    const missing = tenantHeld.filter((name) => !(name in CASCADE));
    expect(missing).toEqual([]);
    const unknown = Object.keys(CASCADE).filter((name) => !entries.some(([n]) => n === name));
    expect(unknown).toEqual([]);
  });

  it('deletes by projectId only where the schema has one, and by session only where it has a sessionId', () => {
    for (const [name, rule] of Object.entries(CASCADE)) {
      const schema = (models as unknown as Record<string, mongoose.Model<unknown>>)[name]!.schema;
      if (rule.project === 'project') expect([name, Boolean(schema.path('projectId'))]).toEqual([name, true]);
      if (rule.project === 'session') expect([name, Boolean(schema.path('sessionId'))]).toEqual([name, true]);
      if (rule.tenant === 'tenant') expect([name, Boolean(schema.path('tenantId'))]).toEqual([name, true]);
    }
  });

  it('keeps nothing of a tenant but the deletion records', () => {
    const kept = Object.entries(CASCADE).filter(([, r]) => typeof r.tenant === 'object').map(([n]) => n);
    expect(kept).toEqual(['DeletionJob']);
  });

  it('finds running workflows by tenant and project, leaving the deletions themselves out, and refuses an id that could change the query', () => {
    expect(runningWorkflowsQuery({ tenantId: 't1', projectId: 'p1' })).toBe(
      "TenantId = 't1' AND ProjectId = 'p1' AND ExecutionStatus = 'Running' AND WorkflowType != 'dataDeletion'",
    );
    expect(runningWorkflowsQuery({ tenantId: 't1', projectId: null })).toBe("TenantId = 't1' AND ExecutionStatus = 'Running' AND WorkflowType != 'dataDeletion'");
    expect(() => runningWorkflowsQuery({ tenantId: "t' OR TenantId != '", projectId: null })).toThrow();
  });
});
