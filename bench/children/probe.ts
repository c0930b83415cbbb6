// Child-side bookkeeping shared by the hand-written loop and the Nest consumer, so both are timed
// and sampled by the same code: any difference in the table comes from the consumers themselves.

/** Messages a benchmark child sends to bench/main. */
export type ChildMessage =
  { type: 'ready' } | { type: 'done'; count: number; elapsedMs: number; cpuMs: number; latenciesMs: number[] };

/** The report of a finished run. */
export type DoneMessage = Extract<ChildMessage, { type: 'done' }>;

/** What the paced producer embeds in each entry's data. */
export interface StampedData {
  /** Index in the paced run, from 0; the first `WARMUP` entries are not measured. */
  i: number;
  /** performance.timeOrigin + performance.now() when the producer sent the XADD. */
  t: number;
}

/** Wall-clock time in ms with sub-ms precision, comparable between processes on one machine. */
export const preciseNow = (): number => performance.timeOrigin + performance.now();

/**
 * Times a drain from the first handled entry to the ack that completes `expect` entries, and in
 * latency mode records XADD → handler-start of every entry past the warm-up.
 */
export class Probe {
  private startedAt = 0;
  private cpuAtStart: NodeJS.CpuUsage | undefined;
  private handled = 0;
  private acked = 0;
  private finished = false;
  private readonly latencies: Float64Array | null;

  constructor(
    private readonly expect: number,
    private readonly warmup = 0,
    recordLatency = false,
  ) {
    this.latencies = recordLatency ? new Float64Array(expect - warmup).fill(Number.NaN) : null;
    process.on('message', (message: { type?: string }) => {
      // The parent has what it needs; exiting (not SIGKILL) lets --cpu-prof write its profile.
      if (message.type === 'stop') process.exit(0);
    });
    // A runner that died (Ctrl-C, a crash) must not leave consumers behind.
    process.on('disconnect', () => process.exit(0));
  }

  get done(): boolean {
    return this.finished;
  }

  /** Call first thing in the handler. */
  handle(data: unknown): void {
    if (this.handled++ === 0) {
      this.startedAt = performance.now();
      this.cpuAtStart = process.cpuUsage();
    }
    if (this.latencies === null) return;
    const { i, t } = data as StampedData;
    if (i >= this.warmup && i < this.expect) this.latencies[i - this.warmup] = preciseNow() - t;
  }

  /** Call when Redis confirmed acks; reports once `expect` entries are acked. */
  acknowledged(count: number): void {
    this.acked += count;
    if (this.finished || this.acked < this.expect) return;
    this.finished = true;
    const elapsedMs = performance.now() - this.startedAt;
    // CPU time varies less than wall time when other work shares the machine.
    const cpu = process.cpuUsage(this.cpuAtStart);
    const cpuMs = (cpu.user + cpu.system) / 1_000;
    send({ type: 'done', count: this.acked, elapsedMs, cpuMs, latenciesMs: this.latencies ? Array.from(this.latencies) : [] });
  }

  ready(): void {
    send({ type: 'ready' });
  }
}

function send(message: ChildMessage): void {
  process.send?.(message);
}

/** Numeric environment variable with a default; children are configured only through these. */
export function envNumber(name: string, fallback?: number): number {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (value === undefined || !Number.isFinite(value))
    throw new Error(`Environment variable ${name} must be a number (got ${raw}).`);
  return value;
}
