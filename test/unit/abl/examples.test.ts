// The examples/support-desk project compiles cleanly and has the shape the seed and runtime rely on.

import { compileProject } from '../../../abl';
import { EXAMPLES_DIR, readProject } from './helpers';

describe('examples/support-desk', () => {
  const files = readProject(EXAMPLES_DIR);
  const out = compileProject(files);

  it('compiles with no errors, and warns only of the settings the runtime does not apply', () => {
    expect(out.diagnostics.map((d) => `${d.code} ${d.path}:${d.line}`)).toEqual([
      'W603 agents/Complaints_Agent.agent.abl:36', // the thanks template's MARKDOWN variant is never sent
      'W424 tools/billing-api.tools.abl:12', // get_invoice hints cacheable: results are not cached
      'W424 tools/travel.tools.abl:11', // search_flights cacheable
      'W424 tools/travel.tools.abl:19', // search_hotels cacheable
    ]);
    expect(out.ok).toBe(true);
  });

  it('has the supervisor as entry and every specialist', () => {
    expect(out.entry_agent).toBe('Support_Hub');
    expect(Object.keys(out.agents).sort()).toEqual([
      'Billing_Agent', 'Complaints_Agent', 'Flight_Search', 'Hotel_Search', 'Onboarding_Agent', 'Support_Hub', 'Trip_Planner',
    ]);
    expect(out.agents.Support_Hub?.metadata.kind).toBe('supervisor');
  });

  it('keeps keyword-friendly natural-language WHENs for offline routing', () => {
    const nl = out.agents.Support_Hub?.coordination.handoffs.filter((h) => h.when.ast === null).map((h) => h.when.src);
    expect(nl).toEqual(expect.arrayContaining([expect.stringMatching(/billing, invoices/), expect.stringMatching(/trip/)]));
  });

  it('covers flow+gather+tools, fan-out delegation, async suspension and human escalation', () => {
    const billing = out.agents.Billing_Agent!;
    expect(billing.flow?.entry).toBe('ask_invoice');
    expect(billing.tools.map((t) => t.imported_from)).toEqual(['tools/billing-api.tools.abl', 'tools/billing-api.tools.abl']);
    expect(out.agents.Trip_Planner?.coordination.delegates.map((d) => d.agent)).toEqual(['Flight_Search', 'Hotel_Search']);
    const kyc = out.agents.Onboarding_Agent?.tools.find((t) => t.name === 'start_kyc_check');
    expect(kyc?.binding).toMatchObject({ type: 'http', async: { callbackUrlField: 'notify.url', timeoutMs: 7_200_000 } });
    expect(out.agents.Complaints_Agent?.coordination.escalation?.triggers).toHaveLength(1);
  });

  it('is deterministic', () => {
    expect(JSON.stringify(compileProject([...files].reverse()))).toBe(JSON.stringify(out));
  });
});
