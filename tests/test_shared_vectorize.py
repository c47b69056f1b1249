"""ptxas issues neighbouring shared-memory accesses as 64- and 128-bit ones
(`flipflop.analysis.vectorize`): the model's shared accesses of every kernel of
tests/model_kernels/shared_vectorize.cu (straight-line code: each PTX access runs once) equal the
LDS/STS instructions of the machine code ptxas makes of it, read with nvdisasm, on Turing and
GA10x; and CLBlast's GEMM, whose unrolled k-steps read their operands as runs of scalar loads."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from flipflop.analysis import extract_features
from flipflop.analysis.features import KernelFeatures
from flipflop.launch import LaunchShape
from flipflop.ptx import parse_ptx
from machine_code import compile_ptx, disassemble
from model_ptx import GEMM, KERNELS, XGEMM

SOURCE = KERNELS / "shared_vectorize.cu"
Access = tuple[str, int]  # ("ld" | "st", bytes per lane)


_SASS_ACCESS = re.compile(r"\b(LDS|STS)((?:\.[A-Z0-9]+)*)")
_SASS_WIDTH = {"64": 8, "128": 16, "U8": 1, "S8": 1, "U16": 2, "S16": 2}  # else 4 bytes


def _machine_accesses(ptx: Path, arch: str,
                      tools: tuple[Path, Path]) -> dict[str, Counter[Access]]:
    """Per kernel (mangled name), its LDS/STS instructions by direction and width."""
    listing = disassemble(ptx, arch, tools)
    found: dict[str, Counter[Access]] = {}
    current: Counter[Access] | None = None
    for line in listing.splitlines():
        function = re.match(r"^\.text\.(\S+):", line)
        if function:
            current = found.setdefault(function.group(1), Counter())
            continue
        access = _SASS_ACCESS.search(line)
        if access and current is not None:
            # Turing spells its loads LDS.U(.width): the U is not a width.
            widths = [_SASS_WIDTH[m] for m in access.group(2).split(".") if m in _SASS_WIDTH]
            direction = "ld" if access.group(1) == "LDS" else "st"
            current[(direction, widths[0] if widths else 4)] += 1
    return found


def _model_accesses(features: KernelFeatures) -> Counter[Access]:
    counted: Counter[Access] = Counter()
    for site in features.sites:
        if site.space == "shared":
            counted[("st" if site.is_store else "ld", site.width_bytes)] += round(site.accesses)
    return counted


@pytest.mark.parametrize("arch", ["sm_75", "sm_86"])
def test_every_kernel_has_the_shared_accesses_ptxas_emits(
    arch: str, ptxas_nvdisasm: tuple[Path, Path], tmp_path: Path
) -> None:
    ptx = compile_ptx(SOURCE, tmp_path, arch)
    machine = _machine_accesses(ptx, arch, ptxas_nvdisasm)
    module = parse_ptx(ptx.read_text(), str(ptx))
    assert len(module.kernels) == 12
    for kernel in module.kernels:
        model = _model_accesses(extract_features(module, kernel.name))
        assert model == machine[kernel.name], kernel.name


@pytest.fixture(scope="module")
def sm86_kernels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, KernelFeatures]:
    ptx = compile_ptx(SOURCE, tmp_path_factory.mktemp("vectorize"), "sm_86")
    module = parse_ptx(ptx.read_text(), str(ptx))
    return {k.name: extract_features(module, k.name) for k in module.kernels}


def _kernel(kernels: dict[str, KernelFeatures], name: str) -> KernelFeatures:
    return next(f for mangled, f in kernels.items() if f"{len(name)}{name}P" in mangled)


@pytest.mark.parametrize(
    ("kernel", "loads"),
    [
        ("aligned4", {("ld", 16): 1}),  # s[4t..4t+3]: one 16-byte chunk
        ("shifted", {("ld", 16): 1, ("ld", 4): 1}),  # 4t+1..4t+3 read as 4t..4t+3, 4t+4 alone
        ("lanestride1", {("ld", 4): 4}),  # s[t..t+3]: 4-byte aligned only
        ("pair", {("ld", 8): 1}),  # two words of one aligned 8-byte half
        ("gap", {("ld", 4): 2}),  # words 0 and 2: a gap keeps them apart
        ("storebetween", {("ld", 8): 2}),  # a shared store between ends the run
        ("second_array", {("ld", 16): 1, ("ld", 4): 2}),  # s at byte 12 of the layout
        ("bytes", {("ld", 1): 4}),  # bytes do not merge
        ("dyn", {("ld", 16): 1}),  # dynamic shared memory starts 16-byte aligned
    ],
)
def test_known_answers(sm86_kernels: dict[str, KernelFeatures], kernel: str,
                       loads: dict[Access, int]) -> None:  # fmt: skip
    counted = _model_accesses(_kernel(sm86_kernels, kernel))
    assert {access: n for access, n in counted.items() if access[0] == "ld"} == loads


def test_merged_accesses_cost_one_request_and_one_issue_slot(
    sm86_kernels: dict[str, KernelFeatures],
) -> None:
    shape = LaunchShape((128, 1, 1), (64, 1, 1))
    merged = _kernel(sm86_kernels, "aligned4").work(shape, {})
    apart = _kernel(sm86_kernels, "lanestride1").work(shape, {})
    # One store and one (merged) load a thread, against one store and four loads; the PTX of
    # the two kernels differs only in the loads' offsets and address arithmetic.
    assert merged.shared_accesses == pytest.approx(2.0)
    assert apart.shared_accesses == pytest.approx(5.0)
    (wide,) = [s for s in merged.sites if s.space == "shared" and not s.is_store]
    assert wide.bytes_requested == pytest.approx(16.0)
    (static,) = [site for site in _kernel(sm86_kernels, "aligned4").sites
                 if site.space == "shared" and not site.is_store]  # fmt: skip
    assert static.width_bytes == 16 and "4× ld.shared.f32" in static.operation
    # Three of the four PTX loads issue no machine instruction of their own: three slots fewer
    # than PTX instructions, where the kernel with four real loads has as many of each.
    assert merged.instructions - merged.pipe_work().issue_slots == pytest.approx(
        apart.instructions - apart.pipe_work().issue_slots + 3.0)


@pytest.mark.parametrize(("vwm", "vwn"), [(1, 2), (2, 8)])
def test_gemm_operand_loads_are_the_machine_codes_lds128(
    vwm: int, vwn: int, ptxas_nvdisasm: tuple[Path, Path], tmp_path: Path
) -> None:
    """Xgemm 64×128 tiles on 8×8 threads: 32 or 40 ld.shared in the PTX of a k-step pair,
    twelve LDS.128 in the machine code either way."""
    flags = [f"-I{GEMM}", "-DMWG=64", "-DNWG=128", "-DKWG=32", "-DMDIMC=8", "-DNDIMC=8",
             "-DMDIMA=32", f"-DNDIMB={32 if vwn == 2 else 16}", "-DKWI=2", f"-DVWM={vwm}",
             f"-DVWN={vwn}", "-DSA=1", "-DSB=1", "-DSTRM=0", "-DSTRN=0", "-DPRECISION=32",
             "-DGEMMK=0"]  # fmt: skip
    ptx = compile_ptx(XGEMM, tmp_path, "sm_86", *flags)
    (machine,) = _machine_accesses(ptx, "sm_86", ptxas_nvdisasm).values()
    module = parse_ptx(ptx.read_text(), str(ptx))
    (kernel,) = module.kernels
    model = _model_accesses(extract_features(module, kernel.name))
    assert ptx.read_text().count("ld.shared") in (32, 40)
    assert machine[("ld", 16)] == 12
    assert model == machine
