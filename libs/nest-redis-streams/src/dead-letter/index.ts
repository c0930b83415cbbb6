export { DLQ_FIELDS, DeadLetterReason, type DeadLetterDetails } from './dead-letter-record.js';
export * from './dead-letter.service.js';
export { type FailureCause, failureCause } from './failure-fingerprint.js';
