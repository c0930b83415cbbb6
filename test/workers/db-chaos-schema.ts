// The business tables of the database chaos scenarios (test/chaos/database-*.spec.ts), shared by
// the spec that creates them and the workers that write them. `charges` has no unique key on
// purpose: only the inbox stands between a redelivery and a second charge, so a duplicate shows.

export const DB_CHAOS_TABLES = `
  CREATE TABLE orders (id text PRIMARY KEY, amount int NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
  CREATE TABLE charges (order_id text NOT NULL, event_id text NOT NULL, amount int NOT NULL, charged_at timestamptz NOT NULL DEFAULT now());
`;

/** The outbox event's id for an order: stable, so a retried order write cannot add a second event. */
export const orderEventId = (orderId: string) => `order-${orderId}-placed`;

/** The order payload published on the stream. */
export interface OrderEvent {
  id: string;
  amount: number;
  /** The payments process SIGKILLs itself after the charge committed and before the ack, on the first delivery. */
  crashAfterCommit?: boolean;
}

/** Ledger keys (on the chaos ledger Redis) of one run's database workers. */
export const dbLedger = (run: string) => ({
  /** applied / duplicate / failed → count, summed over payments processes. */
  outcomes: `${run}:db:outcomes`,
  /** published / publish-failures of the relays, order-write-retries of the order writers. */
  relay: `${run}:db:relay`,
});

/** The inbox handler name of the payments effect. */
export const CHARGE_HANDLER = 'payments.charge';
