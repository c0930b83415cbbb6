// Tracing is switched on by installing and configuring @opentelemetry/api; nothing to import.
export {};
