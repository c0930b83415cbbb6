#!/usr/bin/env node
// Writes deploy/kubernetes/prometheus-rule.yaml, the prometheus-operator `PrometheusRule` holding
// the groups of deploy/prometheus/redis-streams.rules.yml, so the rules have one source.
//   node deploy/scripts/build-prometheus-rule.mjs          regenerate
//   node deploy/scripts/build-prometheus-rule.mjs --check  exit 1 when the manifest is stale
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';

const deploy = join(dirname(fileURLToPath(import.meta.url)), '..');
const source = join(deploy, 'prometheus', 'redis-streams.rules.yml');
const target = join(deploy, 'kubernetes', 'prometheus-rule.yaml');

const HEADER =
  '# Generated from deploy/prometheus/redis-streams.rules.yml by deploy/scripts/build-prometheus-rule.mjs.\n' +
  '# Do not edit: change the rules file and run the script (test/ops checks that both agree).\n';

/** The PrometheusRule manifest text for a rules file's text. */
export function prometheusRuleOf(rulesText) {
  const { groups } = parse(rulesText);
  const manifest = {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: {
      name: 'redis-streams',
      // prometheus-operator selects rules by label; match your Prometheus' ruleSelector.
      labels: { 'app.kubernetes.io/part-of': 'nest-redis-streams', role: 'alert-rules' },
    },
    spec: { groups },
  };
  return HEADER + stringify(manifest, { lineWidth: 0 });
}

const wanted = prometheusRuleOf(readFileSync(source, 'utf8'));
if (process.argv.includes('--check')) {
  let current = '';
  try {
    current = readFileSync(target, 'utf8');
  } catch {
    // missing: stale
  }
  if (current !== wanted) {
    console.error(`${target} is not generated from ${source}: run node deploy/scripts/build-prometheus-rule.mjs`);
    process.exit(1);
  }
  console.log('prometheus-rule.yaml matches redis-streams.rules.yml');
} else {
  writeFileSync(target, wanted);
  console.log(`wrote ${target}`);
}
