#!/usr/bin/env node
// Validates Kubernetes manifests offline against the API schemas shipped by kubernetes-models
// (core API, KEDA, prometheus-operator): types, required fields and enums of every document.
//   node deploy/scripts/validate-manifests.mjs [files...]   (default: deploy/kubernetes/*.yaml)
// A Kustomization is checked for its version and that the resources it lists exist.
// Prints one JSON line per document ({ file, kind, name, error }) and exits 1 on any error.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject';
import { TriggerAuthentication } from '@kubernetes-models/keda/keda.sh/v1alpha1/TriggerAuthentication';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import { PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule';

const MODELS = new Map(
  [Deployment, Service, Secret, PodDisruptionBudget, ScaledObject, TriggerAuthentication, ServiceMonitor, PrometheusRule].map(
    (m) => [`${m.apiVersion}/${m.kind}`, m],
  ),
);

const dir = join(dirname(fileURLToPath(import.meta.url)), '..', 'kubernetes');
const files = process.argv.slice(2);
const targets =
  files.length > 0
    ? files
    : readdirSync(dir)
        .filter((f) => f.endsWith('.yaml'))
        .map((f) => join(dir, f));

/**
 * A Kustomization is no API object (kustomize reads it): its version and kind, and that every
 * resource it lists is a file beside it.
 */
function kustomizationError(data, base) {
  if (data.apiVersion !== 'kustomize.config.k8s.io/v1beta1') return `apiVersion must be kustomize.config.k8s.io/v1beta1`;
  if (!Array.isArray(data.resources) || data.resources.length === 0) return 'resources must list the manifests';
  const missing = data.resources.filter((r) => typeof r !== 'string' || !existsSync(join(base, r)));
  return missing.length > 0 ? `resources not found beside the kustomization: ${missing.join(', ')}` : null;
}

let failed = false;
for (const file of targets) {
  for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
    const data = doc.toJS();
    if (data === null) continue;
    const result = { file, kind: data.kind, name: data.metadata?.name, error: null };
    const Model = MODELS.get(`${data.apiVersion}/${data.kind}`);
    if (doc.errors.length > 0) result.error = `YAML: ${doc.errors[0].message}`;
    else if (data.kind === 'Kustomization') result.error = kustomizationError(data, dirname(file));
    else if (!Model)
      result.error = `no schema for apiVersion ${data.apiVersion} kind ${data.kind}: add its model to validate-manifests.mjs`;
    else {
      try {
        new Model(data).validate();
      } catch (err) {
        result.error = err.message;
      }
    }
    failed ||= result.error !== null;
    console.log(JSON.stringify(result));
  }
}
process.exit(failed ? 1 : 0);
