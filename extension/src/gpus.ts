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
  { id: 'rtx3090', name: 'NVIDIA GeForce RTX 3090', arch: 'sm_86' },
  { id: 'rtx2080ti', name: 'NVIDIA GeForce RTX 2080 Ti', arch: 'sm_75' },
  { id: 'rtx-a6000', name: 'NVIDIA RTX A6000', arch: 'sm_86' },
  { id: 'a100-pcie-40gb', name: 'NVIDIA A100-PCIE-40GB', arch: 'sm_80' },
  { id: 'rtx-a4000', name: 'NVIDIA RTX A4000', arch: 'sm_86' },
  { id: 'rtx-a5000', name: 'NVIDIA RTX A5000', arch: 'sm_86' },
  { id: 'titan-rtx', name: 'NVIDIA TITAN RTX', arch: 'sm_75' },
  { id: 'rtx3060-laptop', name: 'NVIDIA GeForce RTX 3060 Laptop GPU', arch: 'sm_86' },
  { id: 'rtx3080', name: 'NVIDIA GeForce RTX 3080', arch: 'sm_86' },
  { id: 'rtx4070', name: 'NVIDIA GeForce RTX 4070', arch: 'sm_89' },
  { id: 't4', name: 'Tesla T4', arch: 'sm_75' },
  { id: 'a10', name: 'NVIDIA A10', arch: 'sm_86' },
  { id: 'l40s', name: 'NVIDIA L40S', arch: 'sm_89' },
  { id: 'h100-pcie', name: 'NVIDIA H100 PCIe', arch: 'sm_90' },
  { id: 'rtx4000-ada', name: 'NVIDIA RTX 4000 Ada Generation', arch: 'sm_89' },
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
