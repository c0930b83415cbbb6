export { activeTraceHeaders, runInTraceContext } from './trace-context.js';
