export * from './apply-migrations.js';
