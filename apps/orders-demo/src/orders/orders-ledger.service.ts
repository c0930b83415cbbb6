import { Injectable } from '@nestjs/common';

/**
 * What each consumer group of this process has done, for the demo's summary. A real service
 * would keep this in its database; here it shows who processed what.
 */
@Injectable()
export class OrdersLedger {
  private readonly counts = new Map<string, number>();

  record(group: string, what: string): void {
    const key = `${group}.${what}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  snapshot(): Record<string, number> {
    return Object.fromEntries([...this.counts.entries()].sort(([a], [b]) => a.localeCompare(b)));
  }
}
