#!/usr/bin/env node
// Writes deploy/kubernetes/prometheus-rule.yaml, the prometheus-operator `PrometheusRule` holding
// the groups of deploy/prometheus/redis-streams.rules.yml, so the rules have one source.
//   node deploy/scripts/build-prometheus-rule.mjs          regenerate
//   node deploy/scripts/build-prometheus-rule.mjs --check  exit 1 when the manifest is stale
//   RUNBOOK_BASE_URL=https://wiki.example.com/redis-streams node deploy/scripts/build-prometheus-rule.mjs
//       first points every alert's runbook_url at <RUNBOOK_BASE_URL>#<alert name in lower case>,
//       in the rules file and in its unit tests (which assert the annotation), then regenerates.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';

const deploy = join(dirname(fileURLToPath(import.meta.url)), '..');
const source = join(deploy, 'prometheus', 'redis-streams.rules.yml');
const ruleTests = join(deploy, 'prometheus', 'tests', 'redis-streams.rules.test.yml');
const target = join(deploy, 'kubernetes', 'prometheus-rule.yaml');

const HEADER =
  '# Generated from deploy/prometheus/redis-streams.rules.yml by deploy/scripts/build-prometheus-rule.mjs.\n' +
  '# Do not edit: change the rules file and run the script (test/ops checks that both agree).\n';

/**
 * Where the runbook_url annotations point unless RUNBOOK_BASE_URL says otherwise: this
 * repository's docs/OPERATIONS.md, whose headings are the alerts' names.
 */
export const DEFAULT_RUNBOOK_BASE_URL = 'https://github.com/nest-redis-streams/nest-redis-streams/blob/main/docs/OPERATIONS.md';

// The part of a runbook_url before its #anchor (quoted or not, as YAML allows).
const RUNBOOK_URL_BASE = /(runbook_url: '?)[^'\s#]*#/g;

/** A rules (or rules test) file's text with every runbook_url moved to `base`; comments are kept. */
export function rebaseRunbooks(text, base) {
  if (!/^https?:\/\/[^\s#']+$/.test(base)) {
    throw new Error(
      `RUNBOOK_BASE_URL=${JSON.stringify(base)} is not an absolute http(s) URL without a #fragment: ` +
        `give the page of the runbook, e.g. RUNBOOK_BASE_URL=${DEFAULT_RUNBOOK_BASE_URL}`,
    );
  }
  return text.replace(RUNBOOK_URL_BASE, (_, key) => `${key}${base}#`);
}

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

const base = process.env.RUNBOOK_BASE_URL;
if (base !== undefined && !process.argv.includes('--check')) {
  let rebased;
  try {
    rebased = [source, ruleTests].map((file) => [file, rebaseRunbooks(readFileSync(file, 'utf8'), base)]);
  } catch (err) {
    console.error(err.message);
    process.exit(1);
  }
  for (const [file, text] of rebased) writeFileSync(file, text);
  console.log(`runbook_url annotations now point at ${base}#<alert>`);
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
