import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { exportedSeriesNames, metricNamesIn } from './promql-names.js';

const DASHBOARD = 'deploy/grafana/dashboards/redis-streams.json';

interface Panel {
  title: string;
  datasource: { uid: string };
  targets: Array<{ expr: string }>;
}

const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
  uid: string;
  panels: Panel[];
  templating: { list: Array<{ name: string; query: string | { query: string } }> };
};

describe('Grafana dashboard (deploy/grafana)', () => {
  it('queries only metric names the library exports (from METRIC_DEFINITIONS), in every panel and variable', () => {
    const exported = exportedSeriesNames();
    const queries = [
      ...dashboard.panels.flatMap((p) => p.targets.map((t) => ({ where: p.title, expr: t.expr }))),
      ...dashboard.templating.list
        .filter((v) => typeof v.query === 'object')
        .map((v) => ({ where: `$${v.name}`, expr: (v.query as { query: string }).query })),
    ];
    const names = queries.flatMap(({ where, expr }) => metricNamesIn(expr).map((name) => ({ where, name })));
    expect(names.filter(({ name }) => !exported.has(name))).toEqual([]);
    // The check sees every query: each panel selects at least one metric.
    for (const panel of dashboard.panels) {
      expect([panel.title, panel.targets.flatMap((t) => metricNamesIn(t.expr)).length > 0]).toEqual([panel.title, true]);
    }
  });

  it('notices a metric name the library does not export', () => {
    const exported = exportedSeriesNames();
    const names = metricNamesIn(
      'sum by (stream) (rate(redis_streams_entries_acked_total{stream=~"$stream"}[5m])) / redis_streams_typo',
    );
    expect(names.filter((n) => !exported.has(n))).toEqual(['redis_streams_typo']);
  });

  it('has the panels operators asked for, each on the data source variable', () => {
    const titles = dashboard.panels.map((p) => p.title.toLowerCase());
    for (const wanted of [
      'throughput',
      'handler duration',
      'end-to-end latency',
      'pending',
      'oldest pending idle',
      'lag',
      'dead letters',
      'deliveries to success',
      'redis memory',
      'outbox backlog',
      'outbox oldest',
      'outbox relay lag',
      'outbox published',
    ]) {
      expect([wanted, titles.some((t) => t.includes(wanted))]).toEqual([wanted, true]);
    }
    expect(new Set(dashboard.panels.map((p) => p.datasource.uid))).toEqual(new Set(['${datasource}']));
    expect(new Set(dashboard.panels.map((p) => (p as unknown as { id: number }).id)).size).toBe(dashboard.panels.length);
  });

  it('is provisioned from files: a dashboard provider and a Prometheus data source', () => {
    const provider = parse(readFileSync('deploy/grafana/provisioning/dashboards/redis-streams.yaml', 'utf8')) as {
      apiVersion: number;
      providers: Array<{ type: string; options: { path: string } }>;
    };
    expect(provider.apiVersion).toBe(1);
    expect(provider.providers).toEqual([
      expect.objectContaining({ type: 'file', options: expect.objectContaining({ path: expect.any(String) }) }),
    ]);
    const sources = parse(readFileSync('deploy/grafana/provisioning/datasources/prometheus.yaml', 'utf8')) as {
      datasources: Array<{ type: string }>;
    };
    expect(sources.datasources.map((d) => d.type)).toEqual(['prometheus']);
  });
});
