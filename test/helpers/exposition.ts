/** Exposition text read by prometheus_client's parser (test/helpers/exposition_parse.py), not ours. */
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

export interface ParsedFamily {
  name: string;
  type: string;
  help: string;
  samples: { name: string; labels: Record<string, string>; value: number | string }[];
}

export function parseExposition(text: string): ParsedFamily[] {
  return JSON.parse(execFileSync('python3', [join(here, 'exposition_parse.py')], { input: text, encoding: 'utf8', maxBuffer: 64 << 20 })) as ParsedFamily[];
}

/** The value of one sample, by its full name (`_bucket`, `_count`, … included) and labels; undefined when absent. */
export function sampleValue(families: readonly ParsedFamily[], name: string, labels: Record<string, string> = {}): number | string | undefined {
  for (const family of families) {
    for (const sample of family.samples) {
      if (sample.name === name && Object.entries(labels).every(([k, v]) => sample.labels[k] === v)) return sample.value;
    }
  }
  return undefined;
}
