// The two forms of a scenario run's result: a readable text report for people and JUnit XML for
// CI (one testsuite per scenario file, one testcase per scenario, a failure per failed expectation).
import type { ExpectationResult } from './expect';
import type { RunReport, ScenarioReport } from './runner';

/** Every failure of a scenario, as one line each: run errors first, then failed expectations. */
export function scenarioFailures(s: ScenarioReport): string[] {
  const line = (where: string, r: ExpectationResult) => `${where}: expected ${r.expectation}${r.message ? ` — ${r.message}` : ''}`;
  return [
    ...s.errors,
    ...s.turns.flatMap((t, i) => t.expectations.filter((r) => !r.passed).map((r) => line(`turn ${i + 1} ("${t.user.length > 40 ? `${t.user.slice(0, 39)}…` : t.user}")`, r))),
    ...s.expectations.filter((r) => !r.passed).map((r) => line('scenario', r)),
  ];
}

export function formatTextReport(report: RunReport): string {
  const out: string[] = [];
  for (const file of report.files) {
    out.push(file.file);
    for (const s of file.scenarios) {
      out.push(`  ${s.passed ? '✓' : '✗'} ${s.name} (${s.agent}, ${s.turns.length} turn${s.turns.length === 1 ? '' : 's'}, ${s.durationMs} ms)`);
      if (s.passed) continue;
      for (const failure of scenarioFailures(s)) out.push(`      ${failure}`);
      out.push('      transcript:');
      for (const t of s.turns) {
        out.push(`        user: ${t.user}`);
        for (const [i, line] of (t.response || '(no reply)').split('\n').entries()) out.push(`        ${i === 0 ? `${t.agent}: ` : '  '}${line}`);
      }
    }
  }
  out.push('');
  out.push(`${report.passed} passed, ${report.failed} failed, ${report.total} total (${report.durationMs} ms)`);
  return out.join('\n');
}

const XML_INVALID = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD]/gu;
function xml(text: string): string {
  return text.replace(XML_INVALID, '').replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');
}
const seconds = (ms: number) => (ms / 1000).toFixed(3);

export function formatJunit(report: RunReport): string {
  const out = ['<?xml version="1.0" encoding="UTF-8"?>'];
  out.push(`<testsuites name="abl scenarios" tests="${report.total}" failures="${report.failed}" errors="0" time="${seconds(report.durationMs)}">`);
  for (const file of report.files) {
    const failed = file.scenarios.filter((s) => !s.passed).length;
    const time = file.scenarios.reduce((sum, s) => sum + s.durationMs, 0);
    out.push(`  <testsuite name="${xml(file.file)}" tests="${file.scenarios.length}" failures="${failed}" errors="0" skipped="0" time="${seconds(time)}">`);
    for (const s of file.scenarios) {
      const open = `    <testcase name="${xml(s.name)}" classname="${xml(`${file.file}.${s.agent}`)}" time="${seconds(s.durationMs)}"`;
      if (s.passed) {
        out.push(`${open}/>`);
        continue;
      }
      const failures = scenarioFailures(s);
      out.push(`${open}>`);
      out.push(`      <failure message="${xml(failures[0] ?? 'failed')}" type="${s.errors.length > 0 ? 'ScenarioError' : 'ExpectationFailed'}">${xml(failures.join('\n'))}</failure>`);
      const transcript = s.turns.map((t) => `user: ${t.user}\n${t.agent}: ${t.response}`).join('\n');
      out.push(`      <system-out>${xml(transcript)}</system-out>`);
      out.push('    </testcase>');
    }
    out.push('  </testsuite>');
  }
  out.push('</testsuites>');
  return `${out.join('\n')}\n`;
}
