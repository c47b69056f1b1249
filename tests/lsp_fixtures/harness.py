"""Driving the FlipFlop language server over stdio the way an editor does.

The server runs as a real subprocess (`python -m flipflop.lsp --stdio`); the client is
pytest-lsp's, with one addition: every `publishDiagnostics` is kept in order, with its version,
so a test can tell which edit a set of diagnostics belongs to.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent
HEADS = FIXTURES / "heads.cu"
ATTENTION = REPO / "tests" / "corpus" / "attention_kv_cache_half.cu"
SERVER_COMMAND = [sys.executable, "-m", "flipflop.lsp", "--stdio"]
PRESETS = ("visual-studio-code", "neovim")
# Generous: a loaded two-core machine compiles a small file in a few seconds.
WAIT_S = 120.0


class RecordingClient(LanguageClient):
    """pytest-lsp's client that also keeps every diagnostics notification in arrival order."""

    def __init__(self) -> None:
        super().__init__(converter_factory=default_converter)
        self.published: list[lsp.PublishDiagnosticsParams] = []


def _record_diagnostics(client: RecordingClient, params: lsp.PublishDiagnosticsParams) -> None:
    client.published.append(params)
    client.diagnostics[params.uri] = params.diagnostics


def _make_client() -> RecordingClient:
    client = RecordingClient()
    features = dict(DEFAULT_CLIENT_FEATURES)
    features[lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = _record_diagnostics
    register_lsp_features(client, features)
    return client


@asynccontextmanager
async def running_server(
    preset: str = "visual-studio-code",
    settings: Mapping[str, Any] | None = None,
    initialization_options: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    command: list[str] | None = None,
) -> AsyncIterator[RecordingClient]:
    """A started and initialised server; `settings` answer `workspace/configuration`."""
    config = ClientServerConfig(
        server_command=command or SERVER_COMMAND,
        client_factory=_make_client,
        server_env=dict(env) if env is not None else None,
    )
    client = await config.start()
    assert isinstance(client, RecordingClient)
    client.set_configuration(dict(settings or {}), section="flipflop")
    try:
        await client.initialize_session(
            lsp.InitializeParams(
                capabilities=client_capabilities(preset),
                initialization_options=dict(initialization_options)
                if initialization_options is not None
                else None,
                root_uri=REPO.as_uri(),
                workspace_folders=[lsp.WorkspaceFolder(uri=REPO.as_uri(), name="flipflop")],
            )
        )
        yield client
    finally:
        await client.shutdown_session()
        await client.stop()


def open_document(
    client: LanguageClient, path: Path | str, text: str, version: int = 1
) -> str:
    """didOpen `text` as the document at `path` (a file path or a full URI); returns the URI."""
    uri = path if isinstance(path, str) else path.as_uri()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(
                uri=uri, language_id="cuda-cpp", version=version, text=text
            )
        )
    )
    return uri


def change_and_save(client: LanguageClient, uri: str, text: str, version: int) -> None:
    """Replace the whole buffer, then save it, as an editor does on `:w`."""
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    client.text_document_did_save(
        lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
    )


async def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = WAIT_S) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def diagnostics_for(
    client: RecordingClient, uri: str, version: int | None = None, after: int = 0
) -> lsp.PublishDiagnosticsParams:
    """The first diagnostics notification for `uri` (at `version`, when given) after index
    `after` of `client.published`."""

    def found() -> lsp.PublishDiagnosticsParams | None:
        for params in client.published[after:]:
            if params.uri == uri and (version is None or params.version == version):
                return params
        return None

    await wait_until(lambda: found() is not None, f"diagnostics for {uri} v{version}")
    result = found()
    assert result is not None
    return result


def apply_edits(text: str, edits: list[lsp.TextEdit]) -> str:
    """Apply LSP text edits (UTF-16 positions) the way an editor does: from the end backwards."""
    lines = text.splitlines(keepends=True)

    def offset(position: lsp.Position) -> int:
        before = sum(len(line) for line in lines[: position.line])
        line = lines[position.line] if position.line < len(lines) else ""
        units = 0
        for index, char in enumerate(line):
            if units >= position.character:
                return before + index
            units += 2 if ord(char) > 0xFFFF else 1
        return before + len(line.rstrip("\r\n")) if line else before

    spans = sorted(
        ((offset(e.range.start), offset(e.range.end), e.new_text) for e in edits),
        reverse=True,
    )
    for start, end, new_text in spans:
        text = text[:start] + new_text + text[end:]
    return text


def environment_without_nvcc(scratch: Path) -> tuple[list[str], dict[str, str]]:
    """A server command and environment in which no nvcc can be found anywhere.

    A fresh virtual environment whose site-packages links every package of ours except the
    `nvidia` CUDA wheels, and a PATH without the CUDA toolkit: what a user without CUDA has.
    """
    import sysconfig
    import venv

    site_packages = Path(sysconfig.get_paths()["purelib"])
    bare = scratch / "bare-venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(bare)
    python = bare / "bin" / "python"
    bare_site = Path(
        next(
            str(p)
            for p in (bare / "lib").glob("python*/site-packages")
            if p.is_dir()
        )
    )
    for entry in site_packages.iterdir():
        if entry.name.startswith(("nvidia", "__pycache__")) or (bare_site / entry.name).exists():
            continue
        (bare_site / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("FLIPFLOP_NVCC", "CUDACXX", "CUDA_HOME", "CUDA_PATH", "VIRTUAL_ENV")
    }
    env["PATH"] = "/usr/bin:/bin"
    return [str(python), "-m", "flipflop.lsp", "--stdio"], env


def big_attention_source(directory: Path) -> Path:
    """The corpus fp16/bf16 attention kernel for eight configurations: ~2 MB of PTX, seconds of
    nvcc and seconds of parsing and modelling afterwards."""
    instances = [
        f"template __global__ void decode_attention<{element}, {head_dim}, 8, 8>("
        f"const {element}*, const {element}*, const {element}*, const int*, {element}*, "
        "int, int, float);"
        for element in ("__half", "__nv_bfloat16")
        for head_dim in (128, 256, 384, 512)
    ]
    target = directory / "big_attention.cu"
    target.write_text(ATTENTION.read_text() + "\n" + "\n".join(instances) + "\n")
    return target


def descendants(pid: int) -> list[tuple[int, str]]:
    """(pid, command name) of every process below `pid`, from /proc."""
    children: dict[int, list[tuple[int, str]]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        parent = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(parent, []).append((int(entry.name), name))
    found: list[tuple[int, str]] = []
    waiting = [pid]
    while waiting:
        for child in children.get(waiting.pop(), []):
            found.append(child)
            waiting.append(child[0])
    return found
