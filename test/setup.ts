// Every test process reaches the local stack unless the environment names other services.
if (!process.env.OFFSETLAKE_UNIT_ONLY) {
  const { useLocalStackDefaults } = await import('../src/stack/index.js');
  useLocalStackDefaults();
}
