// Every test process reaches the local stack unless the environment names other services.
if (!process.env.OFFSETLAKE_UNIT_ONLY) {
  const { stackConfig } = await import('../src/stack/config.js');
  const { stackEnvironment } = await import('../src/stack/index.js');
  for (const [name, value] of Object.entries(stackEnvironment(stackConfig()))) {
    process.env[name] ??= value;
  }
}
