"""The recipe's rootfs as a Docker image, ``isobench/debian:<hash>``:
imported into Docker Engine once per recipe (``ensure_image``), described
for `isobench images` and the store (``image_info``), and old recipes'
images removed (``remove_old_images``)."""

from __future__ import annotations

import contextlib
import json
import os
import time
from typing import Any

from isobench.core.workspace import IMAGE_ROOT, LABEL
from isobench.images.definition import (
    DOCKER_CHANGES,
    IMAGE_REPO,
    image_dir,
    image_tag,
    kernel_paths,
    recipe_hash,
    rootfs_tar,
)
from isobench.images.rootfs import (
    DEFAULT_BUILD_TIMEOUT_S,
    ImageBuildError,
    Log,
    build_lock,
    ensure_rootfs,
    remove_tree,
)


def _find_image(client, tag: str):
    import docker.errors

    try:
        return client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None


def ensure_image(client, force: bool = False, log: Log = print, timeout_s: float = DEFAULT_BUILD_TIMEOUT_S) -> str:
    """Return the tag of the current recipe's image in Docker Engine,
    building the rootfs and importing it only if needed. force rebuilds the
    rootfs (fresh package updates) and re-imports it."""
    h = recipe_hash()
    tag = image_tag(h)
    if not force and _find_image(client, tag) is not None:
        return tag
    with build_lock():
        if not force and _find_image(client, tag) is not None:  # built meanwhile
            return tag
        ensure_rootfs(force=force, log=log, timeout_s=timeout_s)
        old = _find_image(client, tag)
        info = _read_image_json(h)
        tools = " ".join(f"{n}={v}" for n, v in sorted((info.get("tool_versions") or {}).items()) if v)
        changes = DOCKER_CHANGES + [f'LABEL {LABEL}.recipe="{h}"', f'LABEL {LABEL}.tools="{tools}"']
        log(f"image {h}: importing rootfs.tar as {tag}")
        started = time.monotonic()
        result = client.api.import_image_from_file(rootfs_tar(h), repository=IMAGE_REPO, tag=h, changes=changes)
        _raise_on_stream_error(result)
        new = _find_image(client, tag)
        if new is None:
            raise ImageBuildError(f"docker import reported success but {tag} is missing: {result!r}")
        if old is not None and old.id != new.id:
            _remove_quietly(client, old.id)
        log(f"image {h}: imported in {time.monotonic() - started:.0f} s")
    return tag


def _raise_on_stream_error(result) -> None:
    """docker import answers 200 with a JSON stream that may carry an error."""
    text = result if isinstance(result, str) else json.dumps(result)
    for line in text.splitlines():
        with contextlib.suppress(ValueError):
            msg = json.loads(line)
            if isinstance(msg, dict) and msg.get("error"):
                raise ImageBuildError(f"docker import: {msg['error']}")


def _remove_quietly(client, image_id: str) -> bool:
    import docker.errors

    try:
        client.images.remove(image_id, noprune=False)
        return True
    except docker.errors.APIError:  # still used by a container, or gone
        return False


def _read_image_json(h: str | None = None) -> dict:
    try:
        with open(os.path.join(image_dir(h), "image.json"), encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return {}


def image_info(client=None) -> dict:
    """Facts about the current recipe's image, for `isobench images` and for
    the store: tag, hash, files, sizes, kernel, tool versions, and (given a
    client) the Docker image's id, size and creation time."""
    h = recipe_hash()
    built = _read_image_json(h)
    kernel = kernel_paths(h)
    info: dict[str, Any] = {
        "tag": image_tag(h),
        "hash": h,
        "dir": image_dir(h),
        "rootfs_tar": rootfs_tar(h) if os.path.isfile(rootfs_tar(h)) else None,
        "rootfs_bytes": built.get("rootfs_bytes"),
        "tar_bytes": built.get("tar_bytes"),
        "built_at": built.get("built_at"),
        "build_s": built.get("build_s"),
        "kernel": kernel[0] if kernel else None,
        "initrd": kernel[1] if kernel else None,
        "kernel_version": built.get("kernel_version"),
        "tool_versions": built.get("tool_versions") or {},
        "docker_image_id": None,
        "docker_size_bytes": None,
        "docker_created": None,
    }
    if client is not None:
        img = _find_image(client, info["tag"])
        if img is not None:
            info["docker_image_id"] = img.id
            info["docker_size_bytes"] = img.attrs.get("Size")
            info["docker_created"] = img.attrs.get("Created")
    return info


def remove_old_images(client, files: bool = False) -> list[str]:
    """Remove isobench images of other recipes (those still used by a
    container are kept) and, if files, their IMAGE_ROOT/<hash> directories.
    Returns what was removed."""
    current = recipe_hash()
    removed: list[str] = []
    for img in client.images.list(name=IMAGE_REPO):
        tags = [t for t in img.tags if t.startswith(IMAGE_REPO + ":")]
        if any(t == image_tag(current) for t in tags):
            continue
        if _remove_quietly(client, img.id):
            removed.extend(tags or [img.id])
    if files and os.path.isdir(IMAGE_ROOT):
        with build_lock():
            for name in os.listdir(IMAGE_ROOT):
                path = os.path.join(IMAGE_ROOT, name)
                if name != current and len(name) == 12 and os.path.isdir(path):
                    remove_tree(path)
                    removed.append(path)
    return removed
