/** offsetlake's Kafka access: committed reads of offset ranges, offsets, topics; see docs/design.md. */
export * from './connect.js';
export * from './errors.js';
export * from './offsets.js';
export * from './topics.js';
export * from './committed.js';
export * from './read.js';
export * from './produce.js';
export * from './counting-source.js';
