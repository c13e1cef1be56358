"""A loopback Hugging Face Hub: the part of its HTTP API that `huggingface_hub` 2.4 uses to
download a model and to upload one, served from memory by the standard library on 127.0.0.1.

- `GET /api/models/<repo>/revision/<revision>`: model info (`id`, `sha`, `siblings`).
- `GET /api/models/<repo>/tree/<revision>`: the file tree (`type`, `path`, `size`, `oid`).
- `HEAD`/`GET /<repo>/resolve/<revision>/<file>`: a file, with `ETag` and `X-Repo-Commit`.

Uploads, each with a token (`Authorization: Bearer ...`, else 401):

- `POST /api/repos/create`: a repo whose `main` holds `.gitattributes` (409 if it exists).
- `POST /api/validate-yaml`: a model card's metadata, always valid.
- `POST /api/models/<repo>/preupload/<revision>`: every file uploaded inline ("regular").
- `POST /api/models/<repo>/commit/<revision>`: one commit of added and deleted files (ndjson),
  refused with 412 when its `parentCommit` is not the branch's head.
- `POST /api/models/<repo>/branch/<branch>`: a branch from `main`'s head (409 if it exists).

Errors carry the Hub's `X-Error-Code` (`RepoNotFound`, `RevisionNotFound`, `EntryNotFound`),
from which `huggingface_hub` raises its typed errors. Every request is recorded, and every
commit (`FakeHub.commits`).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import http.server
import json
import re
import threading
import urllib.parse
from pathlib import Path

# A repo: revision (branch or tag) -> file path -> contents.
Repo = dict[str, dict[str, bytes]]

_API = re.compile(
    r"/api/models/(?P<repo>[^/]+(?:/[^/]+)?)/(?P<kind>revision|tree)/(?P<revision>[^/]+)"
)
_RESOLVE = re.compile(r"/(?P<repo>[^/]+(?:/[^/]+)?)/resolve/(?P<revision>[^/]+)/(?P<path>.+)")
_UPLOAD = re.compile(
    r"/api/models/(?P<repo>[^/]+(?:/[^/]+)?)/(?P<kind>preupload|commit|branch)/(?P<revision>[^/]+)"
)
# What a new repo's first commit holds.
NEW_REPO_FILES = {".gitattributes": b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n"}


def sha1(body: bytes) -> str:
    return hashlib.sha1(body).hexdigest()


def commit_hash(repo_id: str, revision: str, files: dict[str, bytes] | None = None) -> str:
    """The fake 40-hex commit a revision of a repo points to: one per set of files, as on the
    Hub, whose clients cache a commit's file listing for good (`huggingface_hub`'s tree cache)."""
    digest = hashlib.sha1(f"{repo_id}@{revision}".encode())
    for name, body in sorted((files or {}).items()):
        digest.update(f"{name}:{sha1(body)}".encode())
    return digest.hexdigest()


@dataclasses.dataclass
class Commit:
    """A commit made through the loopback Hub."""

    repo_id: str
    revision: str
    summary: str
    added: list[str]
    deleted: list[str]
    oid: str


class FakeHub:
    """Repos served by a `LoopbackHub`; tests add and remove them freely."""

    def __init__(self):
        self.repos: dict[str, Repo] = {}
        self.requests: list[tuple[str, str]] = []
        self.commits: list[Commit] = []
        self.private: set[str] = set()
        # The head of each branch that commits moved: (repo, branch) -> commit.
        self.heads: dict[tuple[str, str], str] = {}

    def add(self, repo_id: str, files: dict[str, bytes], revision: str = "main") -> None:
        """Adds (or replaces) a revision of a repo, at the commit of its files."""
        self.repos.setdefault(repo_id, {})[revision] = files
        self.heads[(repo_id, revision)] = commit_hash(repo_id, revision, files)

    def head(self, repo_id: str, revision: str) -> str:
        return self.heads.get((repo_id, revision), commit_hash(repo_id, revision))

    def files_at(self, repo_id: str, revision: str) -> tuple[str, dict[str, bytes]] | None:
        """The commit and files of a repo at a branch, tag or commit hash."""
        for name, files in self.repos[repo_id].items():
            if revision in (name, self.head(repo_id, name)):
                return self.head(repo_id, name), files
        return None

    def commit(self, repo_id: str, revision: str, lines: list[dict]) -> Commit:
        """Applies the operations of a commit's ndjson lines to a branch."""
        files = dict(self.repos[repo_id][revision])
        header = next(line["value"] for line in lines if line["key"] == "header")
        added, deleted = [], []
        for line in lines:
            if line["key"] == "file":
                files[line["value"]["path"]] = base64.b64decode(line["value"]["content"])
                added.append(line["value"]["path"])
            elif line["key"] == "deletedFile":
                files.pop(line["value"]["path"])
                deleted.append(line["value"]["path"])
        oid = sha1(json.dumps([self.head(repo_id, revision), lines]).encode())
        self.repos[repo_id][revision] = files
        self.heads[(repo_id, revision)] = oid
        commit = Commit(repo_id, revision, header["summary"], added, deleted, oid)
        self.commits.append(commit)
        return commit

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

    def do_POST(self) -> None:
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        self.hub.requests.append(("POST", path))
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if not self.headers.get("Authorization", "").startswith("Bearer "):
            self._error("Unauthorized", 401)
            return
        if path == "/api/validate-yaml":
            self._send_json({"errors": [], "warnings": []})
        elif path == "/api/repos/create":
            self._create_repo(json.loads(body))
        elif (match := _UPLOAD.fullmatch(path)) is None or match["repo"] not in self.hub.repos:
            self._error("RepoNotFound")
        elif match["kind"] == "branch":
            self._create_branch(match["repo"], match["revision"])
        elif match["revision"] not in self.hub.repos[match["repo"]]:
            self._error("RevisionNotFound")
        elif match["kind"] == "preupload":
            files = json.loads(body)["files"]
            self._send_json(
                {
                    "files": [
                        {"path": file["path"], "uploadMode": "regular", "shouldIgnore": False}
                        for file in files
                    ]
                }
            )
        else:
            self._commit(match["repo"], match["revision"], body)

    def _create_repo(self, request: dict) -> None:
        parts = [request.get("organization"), request["name"]]
        repo_id = "/".join(part for part in parts if part)
        url = f"http://{self.headers['Host']}/{repo_id}"
        if repo_id in self.hub.repos:
            self._send_json({"error": "You already created this model repo", "url": url}, 409)
            return
        self.hub.add(repo_id, dict(NEW_REPO_FILES))
        if request.get("visibility") == "private" or request.get("private"):
            self.hub.private.add(repo_id)
        self._send_json({"url": url, "name": repo_id})

    def _create_branch(self, repo_id: str, branch: str) -> None:
        if branch in self.hub.repos[repo_id]:
            self._send_json({"error": f"Branch {branch} already exists"}, 409)
            return
        self.hub.add(repo_id, dict(self.hub.repos[repo_id]["main"]), branch)
        self._send_json({})

    def _commit(self, repo_id: str, revision: str, body: bytes) -> None:
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        header = next(line["value"] for line in lines if line["key"] == "header")
        parent = header.get("parentCommit")
        if parent is not None and parent != self.hub.head(repo_id, revision):
            self._send_json({"error": f"{revision} moved on from {parent}"}, 412)
            return
        commit = self.hub.commit(repo_id, revision, lines)
        url = f"http://{self.headers['Host']}/{repo_id}/commit/{commit.oid}"
        self._send_json({"commitUrl": url, "commitOid": commit.oid, "pullRequestUrl": None})

    def _send_json(self, value, status: int = 200, headers: dict[str, str] | None = None) -> None:
        headers = {"Content-Type": "application/json", **(headers or {})}
        self._send(json.dumps(value).encode(), headers, send_body=True, status=status)

    def _error(self, code: str, status: int = 404) -> None:
        self._send_json({"error": code}, status, {"X-Error-Code": code})

    def _send(
        self, body: bytes, headers: dict[str, str], send_body: bool, status: int = 200
    ) -> None:
        self.send_response(status)
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
                "private": match["repo"] in self.hub.private,
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


def use_hub(monkeypatch, url: str, home: Path) -> None:
    """Points `huggingface_hub` at `url` with its cache under `home`, online, no token (neither
    `HF_TOKEN` nor a token file)."""
    from huggingface_hub import constants

    monkeypatch.setenv("HF_ENDPOINT", url)
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    for name in ("HF_HUB_CACHE", "HF_HUB_OFFLINE", "HF_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(home / "token"))
