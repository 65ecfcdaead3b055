"""The one Debian root filesystem every environment runs its tools from
(docs/images.md): definition.py holds the recipe and its hash, rootfs.py
builds the files, dockerimage.py imports them into Docker Engine,
versions.py reads the tool versions. The package lists come from
isobench/packages.py (the workloads declare their tools)."""

from isobench.host.packages import image_only_packages, tool_packages
from isobench.images.definition import (
    DOCKER_CHANGES,
    IMAGE_REPO,
    IMAGE_STAMP,
    RECIPE_VERSION,
    image_dir,
    image_tag,
    kernel_paths,
    recipe,
    recipe_hash,
    rootfs_tar,
    study_packages,
)
from isobench.images.dockerimage import ensure_image, image_info, remove_old_images
from isobench.images.rootfs import ImageBuildError, build_lock, build_rootfs, ensure_rootfs
from isobench.images.versions import host_tool_versions, tool_versions

__all__ = [
    "DOCKER_CHANGES",
    "IMAGE_REPO",
    "IMAGE_STAMP",
    "RECIPE_VERSION",
    "ImageBuildError",
    "build_lock",
    "build_rootfs",
    "ensure_image",
    "ensure_rootfs",
    "host_tool_versions",
    "image_dir",
    "image_info",
    "image_only_packages",
    "image_tag",
    "kernel_paths",
    "recipe",
    "recipe_hash",
    "remove_old_images",
    "rootfs_tar",
    "study_packages",
    "tool_packages",
    "tool_versions",
]
