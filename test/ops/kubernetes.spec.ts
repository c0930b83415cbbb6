import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SERVER_DEFAULTS } from 'nest-redis-streams';
import { parse, parseAllDocuments } from 'yaml';
import { readDocuments } from '../readme/documents.js';

const K8S = 'deploy/kubernetes';
/** Time after the handlers' deadline to send their acks, hand unfinished entries back and quit. */
const HAND_BACK_SLACK_SECONDS = 5;

interface Container {
  env: Array<{ name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }>;
  ports: Array<{ name: string }>;
  lifecycle: { preStop: { exec: { command: string[] } } };
  livenessProbe: { httpGet: { path: string } };
  readinessProbe: { httpGet: { path: string } };
}
interface PodTemplate {
  metadata: { labels: Record<string, string> };
  spec: { terminationGracePeriodSeconds: number; containers: Container[] };
}
type Deployment = { metadata: { name: string }; spec: { template: PodTemplate } };

function validate(files: string[] = []): { status: number | null; results: Array<{ kind: string; error: string | null }> } {
  const run = spawnSync(process.execPath, ['deploy/scripts/validate-manifests.mjs', ...files], { encoding: 'utf8' });
  const results = run.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { kind: string; error: string | null });
  return { status: run.status, results };
}

function load<T>(file: string): T {
  return parse(readFileSync(join(K8S, file), 'utf8')) as T;
}

/**
 * The grace period a pod needs: the server's shutdownTimeoutMs (SHUTDOWN_TIMEOUT_MS where the
 * manifest sets it, else the library default) + the preStop sleep + the hand-back slack.
 */
function requiredGraceSeconds(deployment: Deployment): number {
  const [container] = deployment.spec.template.spec.containers;
  const configured = container.env.find((e) => e.name === 'SHUTDOWN_TIMEOUT_MS')?.value;
  const shutdownTimeoutMs = configured === undefined ? SERVER_DEFAULTS.shutdownTimeoutMs : Number(configured);
  const [command, seconds] = container.lifecycle.preStop.exec.command;
  const preStopSeconds = command === 'sleep' ? Number(seconds) : 0;
  return Math.ceil(shutdownTimeoutMs / 1_000) + preStopSeconds + HAND_BACK_SLACK_SECONDS;
}

describe('Kubernetes manifests (deploy/kubernetes)', () => {
  it('validate against the Kubernetes, KEDA and prometheus-operator schemas', () => {
    const { status, results } = validate();
    expect(results.filter((r) => r.error !== null)).toEqual([]);
    expect(results.map((r) => r.kind).sort()).toEqual(
      [
        'Deployment',
        'Kustomization',
        'PodDisruptionBudget',
        'PrometheusRule',
        'ScaledObject',
        'Secret',
        'Service',
        'ServiceMonitor',
        'TriggerAuthentication',
      ].sort(),
    );
    expect(status).toBe(0);
  });

  it('fail validation with the field named when a manifest is wrong', () => {
    const dir = mkdtempSync(join(tmpdir(), 'nrs-k8s-'));
    try {
      const broken = readFileSync(join(K8S, 'deployment.yaml'), 'utf8').replace(
        'terminationGracePeriodSeconds: 20',
        'terminationGracePeriodSeconds: twenty',
      );
      const noTriggers = readFileSync(join(K8S, 'scaled-object.yaml'), 'utf8').replace('  triggers:', '  triggerz:');
      writeFileSync(join(dir, 'deployment.yaml'), broken);
      writeFileSync(join(dir, 'scaled-object.yaml'), noTriggers);
      const { status, results } = validate([join(dir, 'deployment.yaml'), join(dir, 'scaled-object.yaml')]);
      expect(status).toBe(1);
      expect(results.map((r) => r.error)).toEqual([
        expect.stringContaining('terminationGracePeriodSeconds must be integer'),
        expect.stringContaining('data/spec must have required property triggers'),
        null,
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('give pods a stable consumer name, health probes and a grace period derived from shutdownTimeoutMs', () => {
    const deployment = load<Deployment>('deployment.yaml');
    const { spec } = deployment.spec.template;
    const [container] = spec.containers;
    expect(container.env.find((e) => e.name === 'CONSUMER_NAME')?.valueFrom).toEqual({
      fieldRef: { fieldPath: 'metadata.name' },
    });
    expect(container.livenessProbe.httpGet.path).toBe('/health/live');
    expect(container.readinessProbe.httpGet.path).toBe('/health/ready');
    // 10 s (server default) + 3 s preStop + 5 s slack.
    expect(requiredGraceSeconds(deployment)).toBe(18);
    expect(spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(requiredGraceSeconds(deployment));
  });

  it('would flag a grace period too short for the shutdownTimeoutMs a manifest sets', () => {
    const deployment = load<Deployment>('deployment.yaml');
    deployment.spec.template.spec.containers[0].env.push({ name: 'SHUTDOWN_TIMEOUT_MS', value: '60000' });
    expect(requiredGraceSeconds(deployment)).toBe(68);
    expect(deployment.spec.template.spec.terminationGracePeriodSeconds).toBeLessThan(requiredGraceSeconds(deployment));
  });

  it('wire together: Service, PodDisruptionBudget and ServiceMonitor select the pods; KEDA scales the Deployment', () => {
    const deployment = load<Deployment>('deployment.yaml');
    const podLabels = deployment.spec.template.metadata.labels;
    const matches = (selector: Record<string, string>) => Object.entries(selector).every(([k, v]) => podLabels[k] === v);
    const service = load<{
      metadata: { labels: Record<string, string> };
      spec: { selector: Record<string, string>; ports: Array<{ name: string }> };
    }>('service.yaml');
    expect(matches(service.spec.selector)).toBe(true);
    const pdb = load<{ spec: { selector: { matchLabels: Record<string, string> } } }>('pod-disruption-budget.yaml');
    expect(matches(pdb.spec.selector.matchLabels)).toBe(true);
    const monitor = load<{
      spec: { selector: { matchLabels: Record<string, string> }; endpoints: Array<{ port: string; path: string }> };
    }>('service-monitor.yaml');
    expect(Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) => service.metadata.labels[k] === v)).toBe(true);
    expect(service.spec.ports.map((p) => p.name)).toContain(monitor.spec.endpoints[0].port);
    expect(monitor.spec.endpoints[0].path).toBe('/metrics');

    const [scaled, auth] = parseAllDocuments(readFileSync(join(K8S, 'scaled-object.yaml'), 'utf8')).map((d) => d.toJS()) as [
      {
        spec: {
          scaleTargetRef: { name: string };
          triggers: Array<{ type: string; metadata: Record<string, string>; authenticationRef: { name: string } }>;
        };
      },
      { metadata: { name: string } },
    ];
    expect(scaled.spec.scaleTargetRef.name).toBe(deployment.metadata.name);
    const env = new Set(deployment.spec.template.spec.containers[0].env.map((e) => e.name));
    for (const trigger of scaled.spec.triggers) {
      expect(trigger.type).toBe('redis-streams');
      expect(env.has(trigger.metadata.addressFromEnv)).toBe(true);
      expect(trigger.authenticationRef.name).toBe(auth.metadata.name);
    }
    expect(scaled.spec.triggers.map((t) => Object.keys(t.metadata).filter((k) => k.endsWith('Count')))).toEqual([
      ['pendingEntriesCount'],
      ['lagCount', 'activationLagCount'],
    ]);
  });

  it('kustomize every manifest but the example Secret, which holds every key the Deployment and KEDA read', () => {
    const kustomization = load<{ resources: string[]; images: Array<{ name: string }> }>('kustomization.yaml');
    const manifests = readdirSync(K8S).filter(
      (f) => f.endsWith('.yaml') && !['kustomization.yaml', 'secret.example.yaml'].includes(f),
    );
    expect([...kustomization.resources].sort()).toEqual(manifests.sort());
    const deployment = load<Deployment & { spec: { template: { spec: { containers: Array<{ image: string }> } } } }>(
      'deployment.yaml',
    );
    const [container] = deployment.spec.template.spec.containers;
    expect(kustomization.images.map((i) => i.name)).toEqual([container.image.split(':')[0]]);

    const secret = load<{ metadata: { name: string }; stringData: Record<string, string> }>('secret.example.yaml');
    const fromDeployment = (container as unknown as Container).env.flatMap((e) => {
      const ref = (e.valueFrom as { secretKeyRef?: { name: string; key: string } } | undefined)?.secretKeyRef;
      return ref ? [ref] : [];
    });
    const [, auth] = parseAllDocuments(readFileSync(join(K8S, 'scaled-object.yaml'), 'utf8')).map((d) => d.toJS()) as [
      unknown,
      { spec: { secretTargetRef: Array<{ name: string; key: string }> } },
    ];
    const refs = [...fromDeployment, ...auth.spec.secretTargetRef];
    expect(refs.length).toBeGreaterThanOrEqual(4);
    for (const ref of refs)
      expect({ ref, held: ref.name === secret.metadata.name && ref.key in secret.stringData }).toEqual({ ref, held: true });
    // KEDA signs in as its own read-only user of the docs' "Production kit".
    expect(secret.stringData['keda-username']).toBe('nrs-keda');
    expect(readDocuments()).toMatch(
      /^ACL SETUSER nrs-keda on .* -@all \+ping \+xpending \+xinfo\|groups \+xinfo\|stream \+xlen$/m,
    );
  });

  it('flag a kustomization that lists a manifest missing beside it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'nrs-kustomize-'));
    try {
      const listed = readFileSync(join(K8S, 'kustomization.yaml'), 'utf8').replace('- service.yaml', '- services.yaml');
      writeFileSync(join(dir, 'kustomization.yaml'), listed);
      const { status, results } = validate([join(dir, 'kustomization.yaml')]);
      expect(status).toBe(1);
      expect(results[0].error).toContain('resources not found beside the kustomization: deployment.yaml');
      expect(results[0].error).toContain('services.yaml');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
