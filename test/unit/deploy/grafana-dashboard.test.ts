// The Grafana dashboard and the suggested alert rules cannot drift from the metrics: every
// Switchboard and Node metric their expressions use is registered in the processes' registry
// (the Temporal SDK's are checked against a real worker in test/integration/metrics.test.ts), and
// the dashboard is one Grafana imports: panels with queries, all on the datasource variable.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { switchboardMetrics } from '../../../lib/metrics/registry';
import { allPanels, ALERTS_PATH, dashboardExpressions, metricNamesIn, readDashboard } from '../../support/dashboard';

interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const alerts = parse(readFileSync(ALERTS_PATH, 'utf8')) as { groups: { name: string; rules: AlertRule[] }[] };

async function registeredSeries(): Promise<Set<string>> {
  const series = new Set<string>();
  for (const metric of await switchboardMetrics().registry.getMetricsAsJSON()) {
    series.add(metric.name);
    if (String(metric.type) === 'histogram') for (const suffix of ['_bucket', '_count', '_sum']) series.add(`${metric.name}${suffix}`);
  }
  return series;
}

describe('deploy/grafana', () => {
  it('uses only metrics the API and worker register, in the dashboard and in the alerts', async () => {
    const used = metricNamesIn([...dashboardExpressions(), ...alerts.groups.flatMap((g) => g.rules.map((r) => r.expr))]);
    const ours = used.filter((name) => !name.startsWith('temporal_'));
    expect(ours).toEqual(expect.arrayContaining(['switchboard_http_requests_total', 'switchboard_llm_tokens_total', 'switchboard_sessions', 'nodejs_eventloop_lag_p99_seconds']));
    const registered = await registeredSeries();
    expect(ours.filter((name) => !registered.has(name))).toEqual([]);
  });

  it('shows every Switchboard metric somewhere', async () => {
    const used = new Set(metricNamesIn(dashboardExpressions()).map((n) => n.replace(/_(bucket|count|sum)$/, '')));
    const ours = (await switchboardMetrics().registry.getMetricsAsJSON()).map((m) => m.name).filter((n) => n.startsWith('switchboard_'));
    // The refresh failures are for the alert, not the dashboard.
    expect(ours.filter((n) => !used.has(n) && n !== 'switchboard_cluster_gauge_refresh_failures_total')).toEqual([]);
  });

  it('is a dashboard Grafana imports: panels with queries on the datasource variable', () => {
    const dashboard = readDashboard();
    expect(dashboard).toMatchObject({ title: 'Switchboard', uid: expect.stringMatching(/^[a-z0-9-]{1,40}$/), schemaVersion: expect.any(Number) });
    const variable = dashboard.templating.list.find((v) => v.name === 'datasource');
    expect(variable).toMatchObject({ type: 'datasource', query: 'prometheus' });
    const panels = allPanels(dashboard);
    const ids = panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    const charts = panels.filter((p) => p.type !== 'row');
    expect(charts.length).toBeGreaterThanOrEqual(15);
    for (const panel of charts) {
      expect(panel).toMatchObject({ title: expect.any(String), type: 'timeseries', datasource: { type: 'prometheus', uid: '${datasource}' } });
      expect(panel.targets?.length).toBeGreaterThan(0);
      for (const target of panel.targets ?? []) expect(target).toMatchObject({ expr: expect.stringMatching(/\S/), datasource: { uid: '${datasource}' } });
    }
    // No expression groups or filters by a tenant, project or session: they are never labels.
    expect(dashboardExpressions().filter((e) => /tenant|project|session_id/i.test(e))).toEqual([]);
  });

  it('has alert rules that say what they mean and where to read what to do', () => {
    const rules = alerts.groups.flatMap((g) => g.rules);
    expect(rules.length).toBeGreaterThanOrEqual(8);
    const docs = readFileSync(`${__dirname}/../../../docs/operations.md`, 'utf8');
    for (const rule of rules) {
      expect(rule).toMatchObject({ alert: expect.stringMatching(/^Switchboard[A-Za-z]+$/), expr: expect.any(String), annotations: { summary: expect.any(String), runbook: 'docs/operations.md#alerts' } });
    }
    // Each alert is explained in the operations guide.
    expect(rules.map((r) => r.alert).filter((name) => !docs.includes(`\`${name}\``))).toEqual([]);
  });
});
