export { decodeEntry, encodeEnvelope, type DecodedEntry, type OutgoingEnvelope } from './envelope.js';
export { assertEventId, eventIdProblem } from './event-id.js';
export * from './json.codec.js';
