import { inject } from 'vitest';

// Every test process reaches the local stack unless the environment names other
// services, and reaches its catalog through the pooler the global setup started.
if (!process.env.OFFSETLAKE_UNIT_ONLY) {
  process.env.DATABASE_URL = inject('pooledDatabaseUrl');
  const { useLocalStackDefaults } = await import('../src/stack/index.js');
  useLocalStackDefaults();
}
