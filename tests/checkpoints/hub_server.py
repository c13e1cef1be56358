"""A loopback Hugging Face Hub: the part of its HTTP API that `huggingface_hub` 2.4 uses to
download a model, served from memory by the standard library on 127.0.0.1.

- `GET /api/models/<repo>/revision/<revision>`: model info (`id`, `sha`, `siblings`).
- `GET /api/models/<repo>/tree/<revision>`: the file tree (`type`, `path`, `size`, `oid`).
- `HEAD`/`GET /<repo>/resolve/<revision>/<file>`: a file, with `ETag` and `X-Repo-Commit`.

Errors carry the Hub's `X-Error-Code` (`RepoNotFound`, `RevisionNotFound`, `EntryNotFound`),
from which `huggingface_hub` raises its typed errors. Every request is recorded.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import re
import threading
import urllib.parse

# A repo: revision (branch or tag) -> file path -> contents.
Repo = dict[str, dict[str, bytes]]

_API = re.compile(
    r"/api/models/(?P<repo>[^/]+(?:/[^/]+)?)/(?P<kind>revision|tree)/(?P<revision>[^/]+)"
)
_RESOLVE = re.compile(r"/(?P<repo>[^/]+(?:/[^/]+)?)/resolve/(?P<revision>[^/]+)/(?P<path>.+)")


def commit_hash(repo_id: str, revision: str) -> str:
    """The fake 40-hex commit a revision of a repo points to."""
    return hashlib.sha1(f"{repo_id}@{revision}".encode()).hexdigest()


def sha1(body: bytes) -> str:
    return hashlib.sha1(body).hexdigest()


class FakeHub:
    """Repos served by a `LoopbackHub`; tests add and remove them freely."""

    def __init__(self):
        self.repos: dict[str, Repo] = {}
        self.requests: list[tuple[str, str]] = []

    def add(self, repo_id: str, files: dict[str, bytes], revision: str = "main") -> None:
        self.repos.setdefault(repo_id, {})[revision] = files

    def files_at(self, repo_id: str, revision: str) -> tuple[str, dict[str, bytes]] | None:
        """The commit and files of a repo at a branch, tag or commit hash."""
        for name, files in self.repos[repo_id].items():
            if revision in (name, commit_hash(repo_id, name)):
                return commit_hash(repo_id, name), files
        return None

    def downloaded(self) -> list[str]:
        """The files fetched with GET (not HEAD), in order."""
        return [path for method, path in self.requests if method == "GET" and "/resolve/" in path]


class _Handler(http.server.BaseHTTPRequestHandler):
    hub: FakeHub

    def log_message(self, *args) -> None:  # quiet test output
        pass

    def do_HEAD(self) -> None:
        self._respond(send_body=False)

    def do_GET(self) -> None:
        self._respond(send_body=True)

    def _error(self, code: str) -> None:
        body = json.dumps({"error": code}).encode()
        self.send_response(404)
        self.send_header("X-Error-Code", code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _send(self, body: bytes, headers: dict[str, str], send_body: bool) -> None:
        self.send_response(200)
        for name, value in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(name, value)
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def _respond(self, send_body: bool) -> None:
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        self.hub.requests.append((self.command, path))
        match = _API.fullmatch(path) or _RESOLVE.fullmatch(path)
        if match is None or match["repo"] not in self.hub.repos:
            self._error("RepoNotFound")
            return
        found = self.hub.files_at(match["repo"], match["revision"])
        if found is None:
            self._error("RevisionNotFound")
            return
        commit, files = found
        if "path" in match.groupdict():
            if match["path"] not in files:
                self._error("EntryNotFound")
                return
            body = files[match["path"]]
            headers = {
                "ETag": f'"{sha1(body)}"',
                "X-Repo-Commit": commit,
                "Content-Type": "application/octet-stream",
            }
            self._send(body, headers, send_body)
            return
        if match["kind"] == "revision":
            info = {
                "id": match["repo"],
                "sha": commit,
                "private": False,
                "siblings": [{"rfilename": name} for name in sorted(files)],
            }
        else:
            info = [
                {
                    "type": "file",
                    "path": name,
                    "size": len(body),
                    "oid": hashlib.sha1(body).hexdigest(),
                }
                for name, body in sorted(files.items())
            ]
        self._send(json.dumps(info).encode(), {"Content-Type": "application/json"}, send_body)


class LoopbackHub:
    """A `FakeHub` served over HTTP on 127.0.0.1 (a free port) from a daemon thread."""

    def __init__(self, hub: FakeHub):
        handler = type("Handler", (_Handler,), {"hub": hub})
        self.hub = hub
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
