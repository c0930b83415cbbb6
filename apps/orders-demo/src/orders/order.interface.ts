/** An order as the HTTP API accepts it and the `orders` stream carries it. */
export interface Order {
  orderId: string;
  customerId: string;
  amount: number;
  items: Array<{ sku: string; quantity: number }>;
  /** Demo switch: the payment provider fails this many times before it accepts the charge. */
  flakyPayments?: number;
}

/** The stream every group of the demo consumes. */
export const ORDERS_STREAM = 'orders';
