export * from './dead-letter-record.js';
export * from './dead-letter.service.js';
export { removeIdleConsumers } from './idle-consumers.js';
