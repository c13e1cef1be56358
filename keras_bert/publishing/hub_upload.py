"""`push_to_hub`: a saved checkpoint directory uploaded to a Hugging Face Hub repository in one
commit, through `huggingface_hub`.

The repository is created if it is missing; a branch (`revision`) is created from `main` if it is
missing. Files already at the revision are never replaced silently: the push refuses, unless
asked to replace them, and then deletes the old files in the same commit. The commit names the
revision's commit it follows (`parent_commit`), so a push that races another fails instead of
overwriting it. The token is the one `huggingface_hub` finds (`HF_TOKEN`, or the token file of
`hf auth login`); without one the push stops before any request. `HF_ENDPOINT` names the Hub.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from keras_bert.checkpoints.hub import hub_settings
from keras_bert.errors import PublishError

DEFAULT_REVISION = "main"
# Every new Hub repository holds it from its first commit.
_REPOSITORY_FILES = (".gitattributes",)


@dataclasses.dataclass(frozen=True)
class Push:
    """Where a push went.

    Args:
        repo_id: the repository.
        revision: the branch committed to.
        commit: the new commit's id.
        commit_url: its address on the Hub.
        replaced: the files of the revision the commit replaced or deleted.
    """

    repo_id: str
    revision: str
    commit: str
    commit_url: str
    replaced: tuple[str, ...] = ()


def push_token(repo_id: str) -> str:
    """The token a push to `repo_id` sends, after checking the id; asks the Hub nothing.

    Raises:
        PublishError: `repo_id` is not a Hub model id (`name` or `org/name`), or
            `huggingface_hub` finds no token.

    Example:
    >>> push_token("org/sentiment/minilm")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    keras_bert.errors.PublishError: 'org/sentiment/minilm' is not a Hub repository id: ...
    """
    from huggingface_hub import get_token
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError:
        raise PublishError(
            f"{repo_id!r} is not a Hub repository id: 'name' or 'org/name', of letters, digits, "
            "'-', '_' and '.' (96 at most, no '--' or '..')."
        ) from None
    token = get_token()
    if token is None:
        raise PublishError(
            f"No Hugging Face token to push to {repo_id}: set HF_TOKEN or run `hf auth login`."
        )
    return token


def _revision_files(api, repo_id: str, revision: str) -> tuple[str, list[str], bool]:
    """The commit `revision` points to, its files, and whether the branch is new: created
    from `main` when the repository has none of that name."""
    from huggingface_hub.errors import RevisionNotFoundError

    try:
        info = api.model_info(repo_id, revision=revision, files_metadata=False)
        created = False
    except RevisionNotFoundError:
        api.create_branch(repo_id, branch=revision)
        info = api.model_info(repo_id, revision=revision, files_metadata=False)
        created = True
    return info.sha, [sibling.rfilename for sibling in info.siblings or ()], created


def push_to_hub(
    directory: str | os.PathLike,
    repo_id: str,
    private: bool = False,
    revision: str | None = None,
    replace: bool = False,
    commit_message: str = "Upload a model saved by keras_bert",
) -> Push:
    """Uploads every file of a checkpoint directory (`save_checkpoint`'s) to a Hub model
    repository, in one commit.

    Args:
        directory: the saved checkpoint.
        repo_id: the repository, `org/name` (or `name` in the token's own namespace); created
            if it is missing (`private` then).
        private: create a missing repository as private.
        revision: the branch to commit to (default `main`), created from `main` if missing.
        replace: replace the model a revision holds already (its files not in `directory` are
            deleted in the same commit); without it such a push is refused.
        commit_message: the commit's summary.

    Raises:
        PublishError: a malformed `repo_id`, no token, a revision that holds files already
            (without `replace`), or the Hub's refusal (its message).

    Example (against a Hub at `HF_ENDPOINT`, with a token):
        push_to_hub("runs/sentiment/hf", "org/sentiment-minilm", private=True)
    """
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi
    from huggingface_hub.errors import HfHubHTTPError

    token = push_token(repo_id)
    files = sorted(path.name for path in Path(directory).iterdir() if path.is_file())
    revision = revision or DEFAULT_REVISION
    api = HfApi(endpoint=hub_settings()["endpoint"], token=token)
    try:
        api.create_repo(repo_id, private=private, exist_ok=True)
        parent_commit, present, created = _revision_files(api, repo_id, revision)
        # A new branch holds `main`'s files: they are replaced, `main` is not.
        held = [] if created else sorted(set(present) - set(_REPOSITORY_FILES))
        stale = sorted(set(present) - set(_REPOSITORY_FILES) - set(files))
        if held and not replace:
            raise PublishError(
                f"{repo_id}@{revision} already holds {', '.join(held[:6])} (commit "
                f"{parent_commit[:12]}): push to another revision, or replace them (--replace)."
            )
        operations = [
            CommitOperationAdd(path_in_repo=name, path_or_fileobj=Path(directory) / name)
            for name in files
        ] + [CommitOperationDelete(path_in_repo=name) for name in stale]
        commit = api.create_commit(
            repo_id,
            operations,
            commit_message=commit_message,
            revision=revision,
            parent_commit=parent_commit,
        )
    except HfHubHTTPError as error:
        message = str(error).splitlines()[0]
        raise PublishError(f"The Hub refused the push to {repo_id}@{revision}: {message}") from None
    return Push(repo_id, revision, commit.oid, commit.commit_url, tuple(held))
