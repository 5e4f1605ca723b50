/** esbuild's `alias` for a bundle made from the repository at `root` (bin/bundle-aliases.js). */
export function bundleAliases(root: string): Record<string, string>;
