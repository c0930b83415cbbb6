export { decodeEntry, encodeEnvelope, type DecodedEntry, type OutgoingEnvelope } from './envelope.js';
export * from './json.codec.js';
