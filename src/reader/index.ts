export * from './cache.js';
export * from './http.js';
export * from './metrics.js';
export * from './node-server.js';
export * from './range.js';
export * from './service.js';
export * from '../kafka/counting-source.js';
