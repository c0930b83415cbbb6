import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { exportedSeriesNames, metricNamesIn } from './promql-names.js';

const RULES = 'deploy/prometheus/redis-streams.rules.yml';
const RULE_TESTS = 'deploy/prometheus/tests/redis-streams.rules.test.yml';
const BUILD_RULE = 'deploy/scripts/build-prometheus-rule.mjs';

/** The runbook base the rules ship with, as the generating script states it. */
function defaultRunbookBase(): string {
  const stated = /DEFAULT_RUNBOOK_BASE_URL =\s*'([^']+)'/.exec(readFileSync(BUILD_RULE, 'utf8'))?.[1];
  if (!stated) throw new Error(`${BUILD_RULE} no longer states DEFAULT_RUNBOOK_BASE_URL = '...'; this test reads it there.`);
  return stated;
}

/** Every runbook_url value in a YAML text. */
function runbookUrlsIn(text: string): string[] {
  return [...text.matchAll(/runbook_url: '?([^'\s]+)/g)].map(([, url]) => url);
}

interface AlertRule {
  alert: string;
  expr: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

function promtool(...args: string[]): { status: number | null; output: string } {
  const run = spawnSync('promtool', args, { encoding: 'utf8' });
  if (run.error) {
    throw new Error(`promtool could not run (${run.error.message}): install it with \`apt-get install -y prometheus\`.`);
  }
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

function alertRules(): AlertRule[] {
  const { groups } = parse(readFileSync(RULES, 'utf8')) as { groups: Array<{ rules: AlertRule[] }> };
  return groups.flatMap((g) => g.rules);
}

/** GitHub's anchor of a Markdown heading. */
function anchorOf(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\w\- ]/g, '')
    .replace(/ /g, '-');
}

describe('alert rules (deploy/prometheus)', () => {
  it('pass promtool check rules', () => {
    const { status, output } = promtool('check', 'rules', RULES);
    expect(output).toContain(`SUCCESS: ${alertRules().length} rules found`);
    expect(status).toBe(0);
  });

  it('pass their promtool unit tests: each alert fires on its series and stays quiet on healthy ones', () => {
    const { status, output } = promtool('test', 'rules', RULE_TESTS);
    expect(output).toContain('SUCCESS');
    expect(status).toBe(0);
  });

  it('fail promtool test rules when an expectation is wrong (the unit tests can fail)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'nrs-rules-'));
    try {
      const tests = readFileSync(RULE_TESTS, 'utf8').replace('../redis-streams.rules.yml', join(process.cwd(), RULES));
      // Claim that the lag alert stays quiet where the series say it pages.
      const wrong = tests.replace(
        /(- eval_time: 7m\n\s+alertname: RedisStreamsLagCritical\n\s+exp_alerts:)[\s\S]*?(\n\n)/,
        '$1 []$2',
      );
      expect(wrong).not.toBe(tests);
      writeFileSync(join(dir, 'wrong.test.yml'), wrong);
      const { status, output } = promtool('test', 'rules', join(dir, 'wrong.test.yml'));
      expect(status).not.toBe(0);
      expect(output).toContain('alertname: RedisStreamsLagCritical, time: 7m');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('each alert is fired by at least one unit test', () => {
    const { tests } = parse(readFileSync(RULE_TESTS, 'utf8')) as {
      tests: Array<{ alert_rule_test: Array<{ alertname: string; exp_alerts: unknown[] }> }>;
    };
    const fired = new Set(tests.flatMap((t) => t.alert_rule_test.filter((a) => a.exp_alerts.length > 0).map((a) => a.alertname)));
    expect(
      alertRules()
        .map((r) => r.alert)
        .filter((name) => !fired.has(name)),
    ).toEqual([]);
  });

  it('each alert has a severity, a summary, a description naming its stream and group, and a runbook section', () => {
    const runbook = readFileSync('docs/OPERATIONS.md', 'utf8');
    const anchors = new Set([...runbook.matchAll(/^#{2,4} (.+)$/gm)].map(([, heading]) => anchorOf(heading)));
    for (const rule of alertRules()) {
      expect([rule.alert, rule.labels.severity]).toEqual([rule.alert, expect.stringMatching(/^(critical|warning|info)$/)]);
      expect([rule.alert, rule.annotations.summary]).toEqual([rule.alert, expect.any(String)]);
      const { description, runbook_url: url } = rule.annotations;
      // The labels an alert keeps (its first aggregation's, or the series' own stream and group)
      // are named in its description.
      const kept = /by \(([^)]*)\)/.exec(rule.expr)?.[1].split(/,\s*/) ?? ['stream', 'group'];
      for (const label of kept.filter((l) => l !== 'le' && l !== 'reason')) {
        expect([rule.alert, description]).toEqual([rule.alert, expect.stringContaining(`{{ $labels.${label} }}`)]);
      }
      expect([rule.alert, url]).toEqual([rule.alert, `${defaultRunbookBase()}#${rule.alert.toLowerCase()}`]);
      expect([rule.alert, anchors.has(rule.alert.toLowerCase())]).toEqual([rule.alert, true]);
    }
  });

  it("link runbooks absolutely, by default to this repository's docs/OPERATIONS.md", () => {
    const { repository } = JSON.parse(readFileSync('libs/nest-redis-streams/package.json', 'utf8')) as {
      repository: { url: string };
    };
    const repo = repository.url.replace(/^git\+/, '').replace(/\.git$/, '');
    expect(defaultRunbookBase()).toBe(`${repo}/blob/main/docs/OPERATIONS.md`);
    const base = `${defaultRunbookBase()}#`;
    for (const file of [RULES, RULE_TESTS, 'deploy/kubernetes/prometheus-rule.yaml']) {
      const urls = runbookUrlsIn(readFileSync(file, 'utf8'));
      expect([file, urls.length > 0]).toEqual([file, true]);
      expect([file, urls.filter((url) => !url.startsWith(base))]).toEqual([file, []]);
    }
  });

  it('move every runbook_url to RUNBOOK_BASE_URL (rules, their unit tests and the manifest), still passing promtool', () => {
    // A copy of deploy/, as a team that publishes the runbook elsewhere would have it.
    const dir = mkdtempSync(join(tmpdir(), 'nrs-runbook-'));
    try {
      cpSync('deploy', join(dir, 'deploy'), { recursive: true });
      symlinkSync(join(process.cwd(), 'node_modules'), join(dir, 'node_modules'), 'dir');
      const base = 'https://wiki.example.com/ops/redis-streams';
      const run = (env: Record<string, string>, ...args: string[]) =>
        spawnSync(process.execPath, [BUILD_RULE, ...args], { cwd: dir, env: { ...process.env, ...env }, encoding: 'utf8' });

      const moved = run({ RUNBOOK_BASE_URL: base });
      expect(moved.stderr).toBe('');
      expect(moved.status).toBe(0);
      for (const file of [RULES, RULE_TESTS, 'deploy/kubernetes/prometheus-rule.yaml']) {
        const urls = runbookUrlsIn(readFileSync(join(dir, file), 'utf8'));
        expect([
          file,
          urls.length,
          urls.filter((url) => !/^https:\/\/wiki\.example\.com\/ops\/redis-streams#[a-z]+$/.test(url)),
        ]).toEqual([file, runbookUrlsIn(readFileSync(file, 'utf8')).length, []]);
      }
      expect(run({}, '--check').status).toBe(0);
      const tested = promtool('test', 'rules', join(dir, RULE_TESTS));
      expect(tested.output).toContain('SUCCESS');
      expect(tested.status).toBe(0);

      const refused = run({ RUNBOOK_BASE_URL: 'wiki/redis-streams' });
      expect(refused.status).toBe(1);
      expect(refused.stderr).toContain('RUNBOOK_BASE_URL="wiki/redis-streams" is not an absolute http(s) URL');
      expect(refused.stderr).toContain(`e.g. RUNBOOK_BASE_URL=${defaultRunbookBase()}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('select only metric names the library exports', () => {
    const exported = exportedSeriesNames();
    const unknown = alertRules().flatMap((r) =>
      metricNamesIn(r.expr)
        .filter((name) => !exported.has(name))
        .map((n) => `${r.alert}: ${n}`),
    );
    expect(unknown).toEqual([]);
    expect(metricNamesIn(alertRules()[0].expr)).toEqual([
      'redis_streams_pending_entries',
      'redis_streams_stream_retention_max_entries',
    ]);
  });

  it('are the PrometheusRule manifest (generated from the same file, one source of truth)', () => {
    const check = spawnSync(process.execPath, ['deploy/scripts/build-prometheus-rule.mjs', '--check'], { encoding: 'utf8' });
    expect(check.stderr).toBe('');
    expect(check.status).toBe(0);
    const manifest = parse(readFileSync('deploy/kubernetes/prometheus-rule.yaml', 'utf8')) as { spec: unknown };
    expect(manifest.spec).toEqual(parse(readFileSync(RULES, 'utf8')));
  });
});
