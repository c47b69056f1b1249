"""Time from `didSave` to `publishDiagnostics` in the language server, against bare nvcc.

    .venv/bin/python benchmarks/lsp_latency.py [--cu FILE.cu] [--repeats N] [--gpu ID]

Starts `python -m flipflop.lsp --stdio`, opens the file, then per repetition
  1. runs a bare `nvcc -ptx -arch=<the GPU's arch>` of the file (the reference),
  2. saves a change of device code (a new `__device__` variable, so nvcc, ptxas and the whole
     analysis run again) and times didSave → publishDiagnostics (target ≤ 1.3 × nvcc),
  3. saves a change of a comment at the top (every line moves; nvcc and the analysis run again
     but ptxas's result is reused, its input differing only in line information),
  4. saves the same content again: the content-hash cache answers (target ≤ 0.1 × nvcc).
Reference and analysis alternate so all see the same machine load. Medians are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

from flipflop.gpu.profiles import load_profile
from flipflop.toolchain import find_toolchain

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SOURCES = (REPO / "examples" / "attention.cu", REPO / "tests" / "lsp_fixtures" / "heads.cu")
FULL_TARGET = 1.3
CACHED_TARGET = 0.1


class TimingClient(LanguageClient):
    def __init__(self) -> None:
        super().__init__("flipflop-latency", "1")
        self.arrivals: dict[int | None, float] = {}
        self.event = asyncio.Event()


def _client() -> TimingClient:
    client = TimingClient()

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def published(params: lsp.PublishDiagnosticsParams) -> None:
        client.arrivals[params.version] = time.perf_counter()
        client.event.set()

    @client.feature(lsp.WORKSPACE_CONFIGURATION)
    def configuration(params: lsp.ConfigurationParams) -> list[object]:
        return [None for _ in params.items]

    return client


def _bare_nvcc(nvcc: Path, source: Path, arch: str, scratch: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        [str(nvcc), "-ptx", f"-arch={arch}", str(source), "-o", str(scratch / "bare.ptx")],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


async def _save(client: TimingClient, uri: str, text: str, version: int) -> float:
    """Send didChange (untimed) and didSave; seconds until diagnostics of `version` arrive."""
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    started = time.perf_counter()
    client.text_document_did_save(
        lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
    )
    while version not in client.arrivals:
        client.event.clear()
        await asyncio.wait_for(client.event.wait(), timeout=600)
    return client.arrivals[version] - started


async def measure(
    source: Path, repeats: int, gpu: str
) -> tuple[list[float], list[float], list[float], list[float]]:
    arch = load_profile(gpu).arch
    nvcc = find_toolchain().nvcc
    original = source.read_text()
    client = _client()
    await client.start_io(sys.executable, "-m", "flipflop.lsp", "--stdio")
    bare: list[float] = []
    full: list[float] = []
    moved: list[float] = []
    cached: list[float] = []
    with tempfile.TemporaryDirectory(prefix="flipflop-latency-") as scratch_name:
        scratch = Path(scratch_name)
        copy = scratch / source.name
        copy.write_text(original)
        uri = copy.as_uri()
        await client.initialize_async(
            lsp.InitializeParams(
                capabilities=lsp.ClientCapabilities(),
                initialization_options={"flipflop": {"gpu": gpu}},
            )
        )
        client.initialized(lsp.InitializedParams())
        client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                text_document=lsp.TextDocumentItem(
                    uri=uri, language_id="cuda-cpp", version=1, text=original
                )
            )
        )
        while 1 not in client.arrivals:  # the first analysis warms imports and the toolchain
            client.event.clear()
            await asyncio.wait_for(client.event.wait(), timeout=600)
        version = 1
        for repeat in range(repeats):
            device_change = f"{original}\n__device__ int latency_probe_{repeat} = {repeat};\n"
            copy.write_text(device_change)
            bare.append(_bare_nvcc(nvcc, copy, arch, scratch))
            version += 1
            full.append(await _save(client, uri, device_change, version))
            version += 1
            comment_change = f"// latency run {repeat}\n{device_change}"
            moved.append(await _save(client, uri, comment_change, version))
            version += 1
            cached.append(await _save(client, uri, comment_change, version))
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()
    return bare, full, moved, cached


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = next((s for s in DEFAULT_SOURCES if s.exists()), DEFAULT_SOURCES[-1])
    parser.add_argument("--cu", type=Path, default=default, help="CUDA source to save")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--gpu", default="rtx3070", help="GPU profile id")
    args = parser.parse_args()
    bare, full, moved, cached = asyncio.run(measure(args.cu, args.repeats, args.gpu))
    reference = statistics.median(bare)
    full_median = statistics.median(full)
    moved_median = statistics.median(moved)
    cached_median = statistics.median(cached)
    print(f"file: {args.cu.relative_to(REPO) if args.cu.is_relative_to(REPO) else args.cu}")
    print(f"repetitions: {args.repeats}, medians")
    print(f"bare nvcc -ptx:                             {reference * 1e3:8.1f} ms")
    print(f"bare nvcc -ptx, all runs (ms): {' '.join(f'{b * 1e3:.0f}' for b in bare)}")
    print(
        f"didSave → diagnostics, device code changed: {full_median * 1e3:8.1f} ms  ratio"
        f" {full_median / reference:.2f} (target ≤ {FULL_TARGET})"
    )
    print(
        f"didSave → diagnostics, comment changed:     {moved_median * 1e3:8.1f} ms  ratio"
        f" {moved_median / reference:.2f}"
    )
    print(
        f"re-save, unchanged (cache):                 {cached_median * 1e3:8.1f} ms  ratio"
        f" {cached_median / reference:.3f} (target ≤ {CACHED_TARGET})"
    )
    met = full_median / reference <= FULL_TARGET and cached_median / reference <= CACHED_TARGET
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
