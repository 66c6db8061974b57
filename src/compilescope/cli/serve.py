"""`compilescope serve [DIR]`: a local run hub (in the manner of tlhub and tlparse --serve).

Lists every run under DIR (default ./compilescope_traces/, where `compilescope run`
writes), newest first, with its headline figures; renders a run's report when it
is first opened and keeps it (re-rendered when the log has grown: a run still being
written is followed); compares any two runs (the `diff` page).

Safety: binds 127.0.0.1 only, on a free port, and every URL carries a random
token; requests with another Host header are refused (DNS rebinding), only GET
and HEAD exist, and files are served only from the hub's own cache of rendered
reports, by names the hub made. Runs are read, never written.
Needs the `serve` extra: pip install 'compilescope[serve]'.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from urllib.parse import quote

from ..errors import CompilescopeError
from ..ingest.discover import find_logs, holds_several_ranks, is_trace_log
from ..runner import DEFAULT_TRACE_ROOT, run_has_ended
from .usage import require_within

LIVE_SECONDS = 30.0  # a run whose log changed this recently is shown as live, and the list refreshes itself
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]


@dataclass(frozen=True)
class Run:
    name: str  # the entry's name in DIR (a directory, or a log file directly in DIR)
    path: str
    logs: tuple[str, ...]
    mtime: float  # newest log's modification time
    size: int  # all logs' bytes
    # `compilescope run` said the program that wrote its newest log has ended, and no other is going on there
    # (runner.run_has_ended): nothing is being written, whatever the logs' times say
    ended: bool = False

    @property
    def fingerprint(self) -> str:
        return f"{self.size}-{int(self.mtime * 1000)}"

    @property
    def source(self) -> str:
        """What to read: the newest of its logs (never a link), or the directory when it holds several ranks."""
        return self.path if holds_several_ranks(list(self.logs)) else self.logs[-1]

    @property
    def live(self) -> bool:
        """Still being written: its log changed moments ago, and no report of `compilescope run` says it ended (a run
        that ended seconds ago is not live: its list would refresh every 5 s for nothing)."""
        return not self.ended and time.time() - self.mtime < LIVE_SECONDS


def list_runs(root: str) -> list[Run]:
    """Runs under root, newest first: each directory holding logs, and each log file directly in root."""
    try:
        names = os.listdir(root)
    except OSError as exc:
        raise CompilescopeError(f"cannot read {root}: {exc.strerror}") from None
    runs = []
    for name in names:
        path = os.path.join(root, name)
        try:
            if os.path.islink(path):
                continue  # a link could lead anywhere: only what is really under root is a run
            if os.path.isdir(path):
                logs = [p for p in find_logs(path) if not os.path.islink(p)]
            elif is_trace_log(path):  # (discover's rule: a program's printed .txt beside the logs is no run)
                logs = [path] if os.path.getsize(path) > 0 else []
            else:
                continue
            if not logs:
                continue
            stats = [os.stat(p) for p in logs]
        except (OSError, CompilescopeError):
            continue  # vanished or unreadable while listing: not a run (yet)
        newest, newest_log = max(zip((s.st_mtime for s in stats), logs))
        runs.append(Run(name, path, tuple(logs), newest, sum(s.st_size for s in stats),
                        ended=os.path.isdir(path) and run_has_ended(path, newest_log)))
    runs.sort(key=lambda r: (-r.mtime, r.name))
    return runs


class Hub:
    """The runs, their facts and their rendered reports (in a private cache directory)."""

    def __init__(self, root: str, cache_dir: str):
        self.root = os.path.abspath(root)
        self.cache_dir = cache_dir
        self._lock = threading.Lock()
        self._run_locks: dict[str, threading.Lock] = {}
        self._facts: dict[tuple[str, str], dict] = {}
        self._rendered: dict[str, tuple[str, str]] = {}  # run name -> (fingerprint, report directory)
        self._slots: dict[str, str] = {}  # run name -> its cache directory name (never derived from the name itself)

    def runs(self) -> list[Run]:
        return list_runs(self.root)

    def run(self, name: str) -> Run | None:
        return next((r for r in self.runs() if r.name == name), None)

    def _run_lock(self, name: str) -> threading.Lock:
        with self._lock:
            return self._run_locks.setdefault(name, threading.Lock())

    def facts(self, run: Run) -> dict:
        """{rank: RunFacts} of a run, read once per version of its logs."""
        from .diff import read_side

        key = (run.name, run.fingerprint)
        with self._run_lock(run.name):
            if key not in self._facts:
                facts = read_side(run.source)
                with self._lock:  # one version per run: a live run's older versions are dropped
                    for stale in [k for k in self._facts if k[0] == run.name]:
                        del self._facts[stale]
                    self._facts[key] = facts
            return self._facts[key]

    def report_dir(self, run: Run) -> str:
        """The run's rendered report, rendered now if it never was or its logs changed since."""
        from . import main as cli_main

        with self._run_lock(run.name):
            done = self._rendered.get(run.name)
            if done and done[0] == run.fingerprint:
                return done[1]
            with self._lock:
                slot = self._slots.setdefault(run.name, f"run{len(self._slots)}")
            out = os.path.join(self.cache_dir, slot, run.fingerprint)
            code = cli_main([run.source, "-o", out, "--overwrite", "--no-browser"])
            if code != 0 or not os.path.isfile(os.path.join(out, "index.html")):
                raise CompilescopeError(f"{run.name}: the report could not be written (exit status {code})")
            if done:
                shutil.rmtree(done[1], ignore_errors=True)
            self._rendered[run.name] = (run.fingerprint, out)
            return out


def create_app(hub: Hub, token: str):
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException
    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
    from starlette.routing import Route
    from starlette.staticfiles import StaticFiles

    from ..analyses.run_facts.analysis import run_headline
    from ..analyses.diff.analysis import diff_report
    from ..render.html.diff import diff_page
    from ..render.html.runs import RunRow, runs_page

    base = f"/{token}/"

    def authorised(request: Request) -> bool:
        return secrets.compare_digest(request.path_params.get("token", ""), token)

    def not_found(what: str = "not found") -> Response:
        return PlainTextResponse(what, status_code=404)

    def figures(run: Run) -> dict:
        return run_headline(hub.facts(run))

    async def home(request: Request) -> Response:
        if not authorised(request):
            return not_found()
        runs = await run_in_threadpool(hub.runs)
        rows = []
        for run in runs:
            try:
                rows.append(RunRow(run.name, run.mtime, run.live, await run_in_threadpool(figures, run)))
            except CompilescopeError as exc:
                rows.append(RunRow(run.name, run.mtime, run.live, None, str(exc)))
        html = runs_page(rows, hub.root, base)
        headers = {"Refresh": "5"} if any(r.live for r in runs) else {}
        return HTMLResponse(html, headers=headers)

    async def report(request: Request) -> Response:
        if not authorised(request):
            return not_found()
        run = await run_in_threadpool(hub.run, request.path_params["name"])
        if run is None:
            return not_found("no such run")
        rel = request.path_params.get("path") or "index.html"
        try:
            directory = await run_in_threadpool(hub.report_dir, run)
        except CompilescopeError as exc:
            return PlainTextResponse(str(exc), status_code=500)
        # StaticFiles confines the path to the report's directory (absolute paths, "..", links out of it) and
        # answers conditional requests; any file it will not serve is a 404 like every other.
        try:
            response = await StaticFiles(directory=directory).get_response(rel, request.scope)
        except HTTPException:
            return not_found()
        if run.live and rel.endswith(".html"):  # a live run's pages reload; the next load renders what it wrote since
            response.headers["Refresh"] = "10"
        return response

    async def report_root(request: Request) -> Response:
        if not authorised(request):  # the redirect names the token: only for who already has it
            return not_found()
        return RedirectResponse(f"{base}run/{quote(request.path_params['name'])}/report/index.html")

    async def compare(request: Request) -> Response:
        if not authorised(request):
            return not_found()
        name_a, name_b = request.query_params.get("a"), request.query_params.get("b")
        a = await run_in_threadpool(hub.run, name_a) if name_a else None
        b = await run_in_threadpool(hub.run, name_b) if name_b else None
        if a is None or b is None:  # a name missing from the query, or no such run
            return not_found("no such run")
        facts_a = await run_in_threadpool(hub.facts, a)
        facts_b = await run_in_threadpool(hub.facts, b)
        report = diff_report(a.name, b.name, facts_a, facts_b)
        return HTMLResponse(diff_page(report, f"{base}run/{quote(a.name)}/report/", f"{base}run/{quote(b.name)}/report/",
                                      root=base))

    routes = [
        Route("/{token}/", home, methods=["GET", "HEAD"]),
        Route("/{token}/index.html", home, methods=["GET", "HEAD"]),
        Route("/{token}/compare", compare, methods=["GET", "HEAD"]),
        Route("/{token}/run/{name}/report", report_root, methods=["GET", "HEAD"]),
        Route("/{token}/run/{name}/report/{path:path}", report, methods=["GET", "HEAD"]),
    ]
    return Starlette(routes=routes, middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=ALLOWED_HOSTS)])


class ServeCommand:
    """Serve a local run hub: every run under DIR, its report, and a diff between any two (127.0.0.1 only)."""

    name = "serve"

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("dir", nargs="?", default=DEFAULT_TRACE_ROOT,
                            help=f"the directory of runs (default: ./{DEFAULT_TRACE_ROOT}/, where `compilescope run` writes)")
        parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
        parser.add_argument("--no-browser", action="store_true", help="do not open the hub in a browser")

    def run(self, args: argparse.Namespace) -> int:
        require_within("--port", args.port, 0, 65535)  # (bind() raises OverflowError beyond: not an OSError)
        try:
            import uvicorn
        except ImportError:
            raise CompilescopeError("serve needs its extra: pip install 'compilescope[serve]'") from None
        if os.path.exists(args.dir) and not os.path.isdir(args.dir):
            raise CompilescopeError(f"{args.dir}: not a directory (name the directory of runs)")
        if not os.path.isdir(args.dir):
            raise CompilescopeError(f"{args.dir}: no such directory (run `compilescope run ...` first, or name one)")
        token = secrets.token_urlsafe(24)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", args.port))
            sock.listen(128)  # before the URL is printed: a client may connect at once (the server accepts soon after)
        except OSError as exc:
            sock.close()
            other_port = " (leave out --port for a free one)" if args.port else ""
            raise CompilescopeError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror}{other_port}") from None
        port = sock.getsockname()[1]
        cache_dir = tempfile.mkdtemp(prefix="compilescope_serve_")
        try:
            app = create_app(Hub(args.dir, cache_dir), token)
            url = f"http://127.0.0.1:{port}/{token}/"
            print(f"compilescope hub for {os.path.abspath(args.dir)}: {url}", flush=True)
            print("(Ctrl-C stops it)", file=sys.stderr, flush=True)
            if not args.no_browser and not os.environ.get("CI"):
                import webbrowser  # here: only an interactive serve needs it

                threading.Timer(0.5, webbrowser.open, [url]).start()
            server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
            # uvicorn stops gracefully on SIGTERM, then raises the signal again with the handler it found: with
            # Python's default that kills the process before the finally below removes the rendered reports.
            signal.signal(signal.SIGTERM, _exit_on_sigterm)
            server.run(sockets=[sock])
        finally:
            sock.close()
            shutil.rmtree(cache_dir, ignore_errors=True)
        return 0


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # the shell's status for death by that signal, after the cleanup has run
