// The metric names the Grafana dashboard (deploy/grafana/switchboard.json) and the suggested
// alert rules (deploy/grafana/alerts.yaml) query, read from their expressions, so tests can check
// that each is one the API, the worker or the Temporal SDK actually exports.
import { readFileSync } from 'node:fs';
import path from 'node:path';

export const DASHBOARD_PATH = path.join(__dirname, '../../deploy/grafana/switchboard.json');
export const ALERTS_PATH = path.join(__dirname, '../../deploy/grafana/alerts.yaml');

const METRIC_NAME = /\b((?:switchboard|temporal|nodejs|process)_[a-z0-9_]+)\b/g;

export interface DashboardPanel {
  id?: number;
  title?: string;
  type?: string;
  datasource?: { type?: string; uid?: string };
  targets?: { expr?: string; datasource?: { type?: string; uid?: string } }[];
  panels?: DashboardPanel[];
}

export interface Dashboard {
  title: string;
  uid: string;
  schemaVersion: number;
  panels: DashboardPanel[];
  templating: { list: { name: string; type: string; query?: unknown }[] };
}

export function readDashboard(): Dashboard {
  return JSON.parse(readFileSync(DASHBOARD_PATH, 'utf8')) as Dashboard;
}

/** Every panel, rows' collapsed panels included. */
export function allPanels(dashboard: Dashboard): DashboardPanel[] {
  return dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
}

/** Every PromQL expression of the dashboard's panels. */
export function dashboardExpressions(dashboard = readDashboard()): string[] {
  return allPanels(dashboard).flatMap((p) => (p.targets ?? []).map((t) => t.expr ?? '')).filter((e) => e.length > 0);
}

/** The series names an expression text uses (a histogram's `_bucket`, `_count`, `_sum` as written). */
export function metricNamesIn(texts: string[]): string[] {
  return [...new Set(texts.flatMap((text) => [...text.matchAll(METRIC_NAME)].map((m) => m[1]!)))].sort();
}

/** SDK series that exist only once what they count has happened (a failed workflow task). */
export const SDK_SERIES_ON_FAILURE_ONLY = ['temporal_workflow_task_execution_failed_total'];

/**
 * The Temporal SDK's series the dashboard and the alerts use (exported by the worker's runtime,
 * not our registry), but for those that appear only after a failure.
 */
export function sdkSeriesUsed(): string[] {
  return metricNamesIn([...dashboardExpressions(), readFileSync(ALERTS_PATH, 'utf8')]).filter((n) => n.startsWith('temporal_') && !SDK_SERIES_ON_FAILURE_ONLY.includes(n));
}
