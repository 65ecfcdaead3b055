"""The image recipe: package list parsing and the content hash."""

import re

from isobench import images
from isobench.host import packages
from isobench.images import definition, rootfs, versions


def test_package_list_parsing_skips_comments_and_blanks(tmp_path):
    path = tmp_path / "packages.txt"
    path.write_text(
        "# a comment\n"
        "\n"
        "fio\n"
        "   pixz   # trailing comment\n"
        "\t\n"
        "#hpcc\n"
        "fio\n"  # duplicate
        "redis-server\n"
    )
    assert packages.read_package_list(path) == ["fio", "pixz", "redis-server"]


def test_shipped_package_lists():
    tools = images.tool_packages()
    for name in [
        "fio",
        "hpcc",
        "openmpi-bin",
        "pixz",
        "xz-utils",
        "redis-server",
        "mariadb-server",
        "sysbench",
        "iperf3",
        "sockperf",
        "qperf",
        "stress-ng",
        "qemu-guest-agent",
    ]:
        assert name in tools
    assert all(re.fullmatch(r"[a-z0-9][a-z0-9+.-]+", n) for n in tools)
    extra = images.image_only_packages()
    assert "linux-image-cloud-amd64" in extra and "docker.io" in extra
    assert not set(tools) & set(extra)


def test_recipe_hash_is_stable():
    h = images.recipe_hash()
    assert re.fullmatch(r"[0-9a-f]{12}", h)
    assert images.recipe_hash() == h
    assert images.recipe_hash(images.recipe()) == h
    assert images.image_tag() == f"{images.IMAGE_REPO}:{h}"
    assert images.IMAGE_REPO == "isobench/debian"


def test_recipe_hash_changes_with_package_list(monkeypatch):
    before = images.recipe_hash()
    tools = images.tool_packages()
    monkeypatch.setattr(packages, "tool_packages", lambda: tools + ["htop"])
    assert images.recipe_hash() != before
    # order in the file does not matter
    monkeypatch.setattr(packages, "tool_packages", lambda: list(reversed(tools)))
    assert images.recipe_hash() == before


def test_recipe_hash_changes_with_image_only_packages_and_version(monkeypatch):
    before = images.recipe_hash()
    extra = images.image_only_packages()
    monkeypatch.setattr(packages, "image_only_packages", lambda: extra + ["dbus"])
    changed = images.recipe_hash()
    assert changed != before
    monkeypatch.setattr(definition, "RECIPE_VERSION", images.RECIPE_VERSION + 1)
    assert images.recipe_hash() not in (before, changed)


def test_recipe_hash_changes_with_package_file(monkeypatch, tmp_path):
    before = images.recipe_hash()
    path = tmp_path / "base-packages.txt"
    path.write_text(packages.BASE_PACKAGES_FILE.read_text() + "\nhtop\n")
    monkeypatch.setattr(packages, "BASE_PACKAGES_FILE", path)
    assert images.recipe_hash() != before


def test_a_study_adding_packages_has_a_recipe_of_its_own_while_it_runs():
    before = images.recipe_hash()
    with images.study_packages(["fio", "p7zip-full", "cowsay", "p7zip-full"]) as added:
        assert added == ("cowsay", "p7zip-full")  # fio is isobench's own; sorted, once each
        assert images.recipe()["study_packages"] == ["cowsay", "p7zip-full"]
        h = images.recipe_hash()
        assert h != before and images.image_tag().endswith(h) and images.image_dir().endswith(h)
        with images.study_packages(["p7zip-full", "cowsay"]):  # the same set: the same image
            assert images.recipe_hash() == h
    assert images.recipe_hash() == before and "study_packages" not in images.recipe()
    # only isobench's own: its recipe, untouched
    with images.study_packages(["fio", "linux-image-cloud-amd64"]) as added:
        assert added == () and images.recipe_hash() == before


def test_recipe_is_bookworm_minbase_from_debian():
    r = images.recipe()
    assert r["suite"] == "bookworm" and r["variant"] == "minbase"
    assert any(s.endswith("bookworm-security main") for s in r["apt_sources"])
    assert "/isobench/data" in r["dirs"] and "/isobench/tmp" in r["dirs"]


def test_paths_under_image_root():
    h = images.recipe_hash()
    assert images.image_dir().endswith(h)
    assert images.rootfs_tar() == f"{images.image_dir()}/rootfs.tar"


def test_tool_versions_from_packages_tsv(monkeypatch, tmp_path):
    monkeypatch.setattr(definition, "IMAGE_ROOT", str(tmp_path))
    h = images.recipe_hash()
    (tmp_path / h).mkdir()
    (tmp_path / h / "packages.tsv").write_text("package\tversion\tarch\nfio\t3.33-3\tamd64\nlibc6\t2.36-9\tamd64\n")
    found = versions.tool_versions()
    assert found["fio"] == "3.33-3"
    assert found["hpcc"] is None
    assert "libc6" not in found


def test_mounts_under_parses_mountinfo():
    assert "/proc" in rootfs.mounts_under("/proc")
    assert rootfs.mounts_under("/nonexistent-isobench-dir") == []
