"""The FlipFlop language server: thin handlers around `flipflop.pipeline` and `convert`.

State lives on the server object: settings, the latest outcome per open document, an outcome
cache keyed by content hash, and one cancel event per document so the newest save wins.
Analyses run in worker processes (`workers`), never in the process that answers requests.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from flipflop import __version__
from flipflop.gpu.profiles import list_profiles
from flipflop.lsp import convert
from flipflop.lsp.session import Focus, Outcome, OutcomeCache, content_key
from flipflop.lsp.settings import Settings, parse_settings
from flipflop.lsp.workers import AnalysisWorkers
from flipflop.results import KernelReport, LaunchReport
from flipflop.source.model import Range

CUSTOM_CHART = "flipflop/kernelChart"
CUSTOM_ANALYZE = "flipflop/analyzeDocument"
CUSTOM_PROFILES = "flipflop/profiles"


@dataclass(frozen=True)
class DocumentState:
    uri: str
    version: int | None
    outcome: Outcome
    lines: tuple[str, ...]
    diagnostics: tuple[lsp.Diagnostic, ...]


class FlipflopServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("flipflop", __version__)
        self.settings = Settings()
        self.documents: dict[str, DocumentState] = {}
        self.cache = OutcomeCache()
        self.workers = AnalysisWorkers()
        self.generations: dict[str, int] = {}
        self.cancels: dict[str, threading.Event] = {}
        self.shown_failures: set[str] = set()
        self.large_notices: set[str] = set()
        self.known_gpus = frozenset(p.id for p in list_profiles())
        # Per document, the line the person last looked at: an edit, a hover, the range the
        # editor asked inlay hints for. Its kernels are analysed first.
        self.focus: dict[str, int] = {}

    # ------------------------------------------------------------------ settings

    def apply_settings(self, raw: Any) -> None:
        settings, problems = parse_settings(raw, self.settings, self.known_gpus)
        self.settings = settings
        for problem in problems:
            self.window_show_message(
                lsp.ShowMessageParams(type=lsp.MessageType.Warning, message=problem)
            )
            self.log(problem, lsp.MessageType.Warning)

    def log(self, message: str, kind: lsp.MessageType = lsp.MessageType.Info) -> None:
        self.window_log_message(lsp.LogMessageParams(type=kind, message=message))

    async def refresh_settings(self) -> None:
        capabilities = self.client_capabilities.workspace
        if capabilities is None or not capabilities.configuration:
            return
        try:
            values = await self.workspace_configuration_async(
                lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section="flipflop")])
            )
        except Exception as error:  # a client that fails the request keeps the old settings
            self.log(f"workspace/configuration failed: {error}", lsp.MessageType.Warning)
            return
        if values:
            self.apply_settings(values[0])

    # ------------------------------------------------------------------ analysis

    async def analyse(self, uri: str, delay_s: float = 0.0, force: bool = False) -> None:
        """Analyse the document's current text; a newer call for the same document wins."""
        generation = self.generations.get(uri, 0) + 1
        self.generations[uri] = generation
        previous = self.cancels.pop(uri, None)
        if previous is not None:
            previous.set()
        if delay_s > 0:
            await asyncio.sleep(delay_s)
            if self.generations.get(uri) != generation:
                return
        document = self.workspace.get_text_document(uri)
        version = document.version  # the document object follows edits made meanwhile
        try:
            text = document.source
        except OSError as error:  # a save of a document that was never opened and is gone
            self.log(f"cannot read {uri}: {error}", lsp.MessageType.Warning)
            return
        settings = self.settings
        path = _document_path(uri)
        if len(text.encode("utf-8", "surrogatepass")) > settings.maxFileSize:
            self._skip_large(uri, path, settings.maxFileSize)
            self._publish(uri, version, Outcome(None, ()), text)
            return
        key = content_key(path, text, settings)
        cached = None if force else self.cache.get(key)
        if cached is not None:
            self._publish(uri, version, cached, text)
            return
        cancel = threading.Event()
        self.cancels[uri] = cancel
        token = await self._begin_progress(path.name)
        loop = asyncio.get_running_loop()

        def progress(done: int, total: int) -> None:
            if token is not None and total > 1:
                loop.call_soon_threadsafe(self._report_progress, token, done, total)

        def early(outcome: Outcome) -> None:
            def publish() -> None:
                if self.generations.get(uri) == generation and not cancel.is_set():
                    self._publish(uri, version, outcome, text)

            loop.call_soon_threadsafe(publish)

        focus = Focus(self.focus.get(uri), progress, early)
        try:
            outcome = await loop.run_in_executor(
                None, self.workers.run, uri, path, text, settings, cancel, focus
            )
        finally:
            self._end_progress(token)
            if self.cancels.get(uri) is cancel:
                del self.cancels[uri]
        if outcome.cancelled:
            self.log(f"stopped the analysis of {path.name} version {version}: superseded")
            return
        if self.generations.get(uri) != generation:
            return
        self.cache.put(key, outcome)
        if outcome.log:
            self.log(outcome.log, lsp.MessageType.Error)
        if outcome.failure and outcome.failure not in self.shown_failures:
            self.shown_failures.add(outcome.failure)
            self.window_show_message(
                lsp.ShowMessageParams(type=lsp.MessageType.Error, message=outcome.failure)
            )
        self._publish(uri, version, outcome, text)

    def _skip_large(self, uri: str, path: Path, limit: int) -> None:
        notice = (
            f"FlipFlop skipped {path.name}: it is larger than flipflop.maxFileSize"
            f" ({limit} bytes); raise the setting to analyse it"
        )
        self.log(notice)
        if uri not in self.large_notices:
            self.large_notices.add(uri)
            self.window_show_message(
                lsp.ShowMessageParams(type=lsp.MessageType.Info, message=notice)
            )

    def _publish(self, uri: str, version: int | None, outcome: Outcome, text: str) -> None:
        lines = text.splitlines()
        diagnostics = tuple(convert.to_diagnostic(f, lines, version) for f in outcome.findings)
        self.documents[uri] = DocumentState(uri, version, outcome, tuple(lines), diagnostics)
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=list(diagnostics))
        )

    async def _begin_progress(self, name: str) -> str | None:
        window = self.client_capabilities.window
        if window is None or not window.work_done_progress:
            return None
        token = f"flipflop-{uuid.uuid4()}"
        try:
            await self.work_done_progress.create_async(token)
        except Exception:  # progress is a nicety; analysis goes on without it
            return None
        self.work_done_progress.begin(
            token, lsp.WorkDoneProgressBegin(title="FlipFlop", message=f"compiling {name}")
        )
        return token

    def _report_progress(self, token: str, done: int, total: int) -> None:
        self.work_done_progress.report(
            token,
            lsp.WorkDoneProgressReport(
                message=f"{done} of {total} kernels", percentage=done * 100 // total
            ),
        )

    def _end_progress(self, token: str | None) -> None:
        if token is not None:
            self.work_done_progress.end(token, lsp.WorkDoneProgressEnd(message="done"))

    def forget(self, uri: str) -> None:
        self.generations[uri] = self.generations.get(uri, 0) + 1
        cancel = self.cancels.pop(uri, None)
        if cancel is not None:
            cancel.set()
        self.documents.pop(uri, None)
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )

    # ------------------------------------------------------------------ lookups

    def launch_at(
        self, uri: str, position: lsp.Position
    ) -> tuple[KernelReport, LaunchReport] | None:
        """The kernel and launch under the cursor: a launch site, or a kernel's name/body."""
        state = self.documents.get(uri)
        result = state.outcome.result if state is not None else None
        if result is None:
            return None
        for kernel in result.kernels:
            for launch in kernel.launches:
                if launch.site is not None and _contains(launch.site.range, position):
                    return kernel, launch
        for kernel in result.kernels:
            source_kernel = kernel.source_kernel
            if source_kernel is not None and (
                _contains(source_kernel.name_range, position)
                or _contains(source_kernel.range, position)
            ):
                return kernel, kernel.primary
        return None


def _contains(range_: Range, position: lsp.Position) -> bool:
    start, end = range_.start, range_.end
    after_start = (position.line, position.character) >= (start.line, start.character)
    before_end = (position.line, position.character) <= (end.line, end.character)
    return after_start and before_end


def _document_path(uri: str) -> Path:
    path = to_fs_path(uri) if uri.startswith("file:") else None
    if path:
        return Path(path)
    # An untitled buffer: compile it as if it lived in the working directory.
    return Path.cwd() / "untitled.cu"


def create_server() -> FlipflopServer:
    server = FlipflopServer()

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: FlipflopServer, params: lsp.InitializeParams) -> None:
        """Settings given up front in initializationOptions (a `flipflop` section or flat)."""
        options = params.initialization_options
        if isinstance(options, dict):
            ls.apply_settings(options.get("flipflop", options))

    @server.feature(lsp.INITIALIZED)
    async def initialized(ls: FlipflopServer, params: lsp.InitializedParams) -> None:
        """Start a worker, fetch the workspace settings, then analyse what is already open."""
        ls.workers.warm_up()
        before = ls.settings
        await ls.refresh_settings()
        for uri in list(ls.workspace.text_documents):
            # a document opened meanwhile is being analysed with the settings from before
            if uri not in ls.generations or ls.settings != before:
                await ls.analyse(uri)

    @server.feature(lsp.SHUTDOWN)
    def shutdown(ls: FlipflopServer, params: None) -> None:
        """Stop the analysis workers before the editor's exit."""
        ls.workers.close()

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(
        ls: FlipflopServer, params: lsp.DidChangeConfigurationParams
    ) -> None:
        """New settings re-analyse every open document."""
        settings = params.settings
        if isinstance(settings, dict) and "flipflop" in settings:
            ls.apply_settings(settings["flipflop"])
        await ls.refresh_settings()
        for uri in list(ls.documents):
            await ls.analyse(uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: FlipflopServer, params: lsp.DidOpenTextDocumentParams) -> None:
        """Analyse a document when it opens."""
        await ls.analyse(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: FlipflopServer, params: lsp.DidSaveTextDocumentParams) -> None:
        """Analyse on save; the newest save cancels older runs."""
        await ls.analyse(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: FlipflopServer, params: lsp.DidChangeTextDocumentParams) -> None:
        """Analyse unsaved edits only when a debounce is configured."""
        edited = [c.range for c in params.content_changes if isinstance(
            c, lsp.TextDocumentContentChangePartial)]
        if edited:
            ls.focus[params.text_document.uri] = edited[-1].start.line
        if ls.settings.debounceMs > 0:
            await ls.analyse(params.text_document.uri, delay_s=ls.settings.debounceMs / 1000)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: FlipflopServer, params: lsp.DidCloseTextDocumentParams) -> None:
        """Closing a document clears its diagnostics."""
        ls.forget(params.text_document.uri)

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]),
    )
    def code_action(
        ls: FlipflopServer, params: lsp.CodeActionParams
    ) -> list[lsp.CodeAction] | None:
        """Quick fixes carried in the diagnostics' data."""
        actions = [
            action
            for diagnostic in params.context.diagnostics
            for action in convert.code_actions(params.text_document.uri, diagnostic)
        ]
        return actions or None

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(ls: FlipflopServer, params: lsp.HoverParams) -> lsp.Hover | None:
        """The Pareto table and energy drivers of the kernel or launch under the cursor."""
        ls.focus[params.text_document.uri] = params.position.line
        found = ls.launch_at(params.text_document.uri, params.position)
        state = ls.documents.get(params.text_document.uri)
        if found is None or state is None or state.outcome.result is None:
            return None
        kernel, launch = found
        markdown = convert.hover_markdown(state.outcome.result, kernel, launch)
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=markdown))

    @server.feature(lsp.TEXT_DOCUMENT_INLAY_HINT, lsp.InlayHintOptions(resolve_provider=False))
    def inlay_hints(ls: FlipflopServer, params: lsp.InlayHintParams) -> list[lsp.InlayHint]:
        """Predicted energy, time and power after each launch."""
        # Editors ask for the visible range: its middle is where the person is looking.
        middle = (params.range.start.line + params.range.end.line) // 2
        ls.focus.setdefault(params.text_document.uri, middle)
        state = ls.documents.get(params.text_document.uri)
        if not ls.settings.inlayHints or state is None or state.outcome.result is None:
            return []
        first, last = params.range.start.line, params.range.end.line
        hints = (
            convert.inlay_hint(launch)
            for kernel in state.outcome.result.kernels
            for launch in kernel.launches
        )
        return [h for h in hints if h is not None and first <= h.position.line <= last]

    @server.feature(lsp.TEXT_DOCUMENT_CODE_LENS, lsp.CodeLensOptions(resolve_provider=False))
    def code_lenses(ls: FlipflopServer, params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
        """The energy-optimal shape above each kernel."""
        uri = params.text_document.uri
        state = ls.documents.get(uri)
        if not ls.settings.codeLens or state is None or state.outcome.result is None:
            return []
        result = state.outcome.result
        lenses = (convert.code_lens(uri, result, kernel) for kernel in result.kernels)
        return [lens for lens in lenses if lens is not None]

    @server.feature(CUSTOM_CHART)
    def kernel_chart(ls: FlipflopServer, params: Any) -> dict[str, Any] | None:
        """Every configuration of the kernel under the cursor, for the chart view."""
        uri, position = _uri_and_position(params)
        if uri is None or position is None:
            return None
        found = ls.launch_at(uri, position)
        state = ls.documents.get(uri)
        if found is None or state is None or state.outcome.result is None:
            state_result = state.outcome.result if state is not None else None
            if state_result is None or not state_result.kernels:
                return None
            kernel = state_result.kernels[0]
            return convert.chart_payload(state_result, kernel, kernel.primary)
        return convert.chart_payload(state.outcome.result, *found)

    @server.feature(CUSTOM_ANALYZE)
    async def analyze_document(ls: FlipflopServer, params: Any) -> dict[str, int] | None:
        """Analyse a document now, bypassing the cache."""
        uri, _ = _uri_and_position(params)
        if uri is None or uri not in ls.workspace.text_documents:
            return None
        await ls.analyse(uri, force=True)
        state = ls.documents.get(uri)
        result = state.outcome.result if state is not None else None
        return {
            "kernels": len(result.kernels) if result is not None else 0,
            "diagnostics": len(state.diagnostics) if state is not None else 0,
        }

    @server.feature(CUSTOM_PROFILES)
    def profiles(ls: FlipflopServer, params: Any) -> list[dict[str, str]]:
        """The GPU profiles the server knows, for the client's picker."""
        return [{"id": p.id, "name": p.name, "arch": p.arch} for p in list_profiles()]

    return server


def _uri_and_position(params: Any) -> tuple[str | None, lsp.Position | None]:
    """Read `{textDocument: {uri}, position: {line, character}}` from a custom request."""
    def field(obj: Any, name: str) -> Any:
        return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)

    document = field(params, "textDocument") or field(params, "text_document")
    uri = field(document, "uri") if document is not None else None
    raw = field(params, "position")
    position = None
    if raw is not None:
        line, character = field(raw, "line"), field(raw, "character")
        if isinstance(line, int) and isinstance(character, int):
            position = lsp.Position(line=line, character=character)
    return (uri if isinstance(uri, str) else None), position
