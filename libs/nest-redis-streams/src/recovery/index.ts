export * from './dead-letter-record.js';
