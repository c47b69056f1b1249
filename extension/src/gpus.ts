// GPU profiles shipped with FlipFlop. The server's `flipflop/profiles` request is the source of
// truth; this list only serves the quick pick while the server is not running and must match the
// `flipflop.gpu` enum in package.json (a unit test checks both).

export interface GpuProfileSummary {
  id: string;
  name: string;
  arch: string;
}

export const DEFAULT_GPU_ID = 'rtx3070';

export const KNOWN_GPUS: readonly GpuProfileSummary[] = [
  { id: 'rtx3070', name: 'NVIDIA GeForce RTX 3070', arch: 'sm_86' },
  { id: 'quadro-rtx5000', name: 'NVIDIA Quadro RTX 5000', arch: 'sm_75' },
  { id: 'rtx5000-ada', name: 'NVIDIA RTX 5000 Ada Generation', arch: 'sm_89' },
  { id: 'rtx4090', name: 'NVIDIA GeForce RTX 4090', arch: 'sm_89' },
  { id: 'l4', name: 'NVIDIA L4', arch: 'sm_89' },
  { id: 'a100-sxm4-80gb', name: 'NVIDIA A100-SXM4-80GB', arch: 'sm_80' },
  { id: 'h100-sxm', name: 'NVIDIA H100 SXM5 80GB', arch: 'sm_90' },
  { id: 'h200', name: 'NVIDIA H200', arch: 'sm_90' },
  { id: 'rtx5090', name: 'NVIDIA GeForce RTX 5090', arch: 'sm_120' },
];

/** Accepts the server's answer to `flipflop/profiles`; anything malformed is dropped. */
export function parseProfiles(value: unknown): GpuProfileSummary[] {
  if (!Array.isArray(value)) {
    return [];
  }
  return value.flatMap((entry: unknown) => {
    if (typeof entry !== 'object' || entry === null) {
      return [];
    }
    const { id, name, arch } = entry as Record<string, unknown>;
    if (typeof id !== 'string' || id === '') {
      return [];
    }
    return [{
      id,
      name: typeof name === 'string' ? name : id,
      arch: typeof arch === 'string' ? arch : '',
    }];
  });
}

export function gpuName(id: string, profiles: readonly GpuProfileSummary[]): string | undefined {
  return profiles.find((profile) => profile.id === id)?.name;
}
