"""The team's requirements as `outbox fc build` reads them: paths from the file's folder,
nested files inlined, the library's extras added, a missing library named."""

from __future__ import annotations

from pathlib import Path

import pytest

from firestore_outbox.deploy.requirements import BuildFailed, Requirements, is_direct


def test_requirements_are_read_with_nested_files_and_paths_from_their_folder(
    tmp_path: Path,
) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "base.txt").write_text("requests>=2.31  # http\n--extra-index-url https://x/\n")
    (tmp_path / "requirements.txt").write_text(
        "# ours\n-r base.txt\n\n./lib[fc]\n-e ./lib\nfirestore-outbox[kafka]==0.7.0\n"
    )
    read = Requirements.read(tmp_path / "requirements.txt")
    lib = str((tmp_path / "lib").resolve())
    assert read.lines == ("requests>=2.31", f"{lib}[fc]", lib, "firestore-outbox[kafka]==0.7.0")
    assert read.options == ("--extra-index-url", "https://x/")
    assert read.names() == {"requests", "firestore-outbox"}


@pytest.mark.parametrize(
    ("line", "direct"),
    [
        ("firestore-outbox==0.7.0", False),
        ("firestore-outbox[fc]>=0.7; python_version>='3.10'", False),
        ("firestore-outbox[fc] @ git+https://github.com/o/r@v0.7.0", True),
        ("/dist/firestore_outbox-0.7.0-py3-none-any.whl", True),
        ("./vendor/lib", True),
        ("https://example.com/lib-1.0.tar.gz", True),
    ],
)
def test_direct_references_are_told_from_names(line: str, direct: bool) -> None:
    assert is_direct(line) is direct


def test_the_librarys_extras_are_merged_once() -> None:
    read = Requirements(("requests", "Firestore_Outbox[kafka]==0.7.0 ; python_version>'3'"))
    merged = read.with_extras("firestore-outbox", ("fc", "crypto", "kafka"))
    assert merged.lines[1] == "Firestore_Outbox[kafka,fc,crypto]==0.7.0 ; python_version>'3'"


def test_requirements_without_the_library_say_what_to_add() -> None:
    with pytest.raises(BuildFailed, match="the requirements name no firestore-outbox"):
        Requirements(("requests",)).with_extras("firestore-outbox", ("fc",))
