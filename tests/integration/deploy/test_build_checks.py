"""What `outbox fc build` refuses, with real tools: pip's own refusal of a dependency that has
no wheel for Function Compute's python3.10 (named, with what to do), a native library that
needs a newer glibc than the runtime's (readelf), an entry point that does not import in a
clean interpreter, and an output folder that holds the project."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from firestore_outbox.deploy.build import FC_PLATFORMS, FC_PYTHON, build
from firestore_outbox.deploy.checks import (
    FC_GLIBC,
    glibc_versions_needed,
    import_failures,
    too_new_for_glibc,
)
from firestore_outbox.deploy.requirements import BuildFailed, pip

# A system library of this (newer) Debian's, if it has one that needs more than glibc 2.28.
SYSTEM_LIBRARIES = (
    "/usr/lib/x86_64-linux-gnu/libcurl.so.4",
    "/usr/lib/x86_64-linux-gnu/libssl.so.3",
)


def test_a_dependency_without_a_python310_wheel_is_named_with_what_to_do(tmp_path: Path) -> None:
    links = tmp_path / "links"
    links.mkdir()
    # Only a wheel for another interpreter and platform: pip finds nothing it may install.
    (links / "nativeonly-1.0-cp311-cp311-linux_x86_64.whl").write_bytes(b"")
    platform = [f"--platform={p}" for p in FC_PLATFORMS]
    with pytest.raises(BuildFailed) as failed:
        pip(
            "install", "--target", str(tmp_path / "out"), *platform, "--python-version",
            FC_PYTHON, "--implementation", "cp", "--only-binary=:all:", "--no-index",
            "--find-links", str(links), "nativeonly==1.0",
        )  # fmt: skip
    message = str(failed.value)
    assert message.startswith("nativeonly==1.0 has no wheel for Function Compute's python3.10")
    assert "--find-links" in message and "No matching distribution found" in message


def test_a_native_library_needing_a_newer_glibc_is_named(tmp_path: Path) -> None:
    if shutil.which("readelf") is None:
        pytest.skip("no readelf (binutils) here")
    newer = [
        Path(p)
        for p in SYSTEM_LIBRARIES
        if Path(p).exists() and max(glibc_versions_needed(Path(p)), default=(0, 0)) > FC_GLIBC
    ]
    if not newer:
        pytest.skip("no system library here needs a glibc newer than 2.28")
    dependencies = tmp_path / "python"
    (dependencies / "somepkg.libs").mkdir(parents=True)
    shutil.copyfile(newer[0], dependencies / "somepkg.libs" / newer[0].name)
    (dependencies / "somepkg.libs" / "notes.so.txt").write_text("not a library")
    found = too_new_for_glibc(dependencies)
    assert found is not None and list(found) == [f"somepkg.libs/{newer[0].name}"]
    assert found[f"somepkg.libs/{newer[0].name}"] > FC_GLIBC


def test_an_entry_point_that_does_not_import_is_reported(tmp_path: Path) -> None:
    package = tmp_path / "fc"
    (package / "python").mkdir(parents=True)
    (package / "index.py").write_text("import not_installed_anywhere\n")
    (package / "ok.py").write_text("def handler(event, context):\n    return {}\nvalue = 1\n")
    entries = ["index.handler", "ok.handler", "ok.value"]
    failures = import_failures(sys.executable, package, package / "python", entries)
    assert failures == [
        "index.handler: ModuleNotFoundError: No module named 'not_installed_anywhere'",
        "ok.value: not callable",
    ]
    assert not list(package.rglob("__pycache__"))  # nothing written into the package


def test_the_output_may_not_hold_the_project(tmp_path: Path) -> None:
    (tmp_path / "index.py").write_text("")
    with pytest.raises(BuildFailed, match="refusing to replace"):
        build(tmp_path, source=tmp_path)
    with pytest.raises(BuildFailed, match="no requirements file at"):
        build(tmp_path / "build" / "fc", source=tmp_path, requirements=tmp_path / "missing.txt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.py"]


def test_only_a_previous_build_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("# the team's code\n")
    with pytest.raises(BuildFailed, match=r"it holds no build-info\.json of a build"):
        build(tmp_path / "app", source=tmp_path, requirements=tmp_path / "missing.txt")
    assert (tmp_path / "app" / "__init__.py").read_text() == "# the team's code\n"
