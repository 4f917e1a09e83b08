"""python -m autograder examples [DEST]

Writes a small, realistic class of submissions to DEST (default out/example-class), the input of
the README's main-job command `python -m autograder grade out/example-class --out out/gradebook`:

    alice.zip      a correct solution, zipped inside a top-level folder as people zip folders
    bob/           forgot to scale the scores by 1/sqrt(E)
    carol/         the untouched handout (nothing implemented)
    dave/          a correct solution written with einsum
    erin/          zeroes the masked weights after the softmax (rows no longer sum to 1)
    frank.zip      a syntax error in scaling.py: graded on what imports without it (Parts 3 and 4),
                   and the row says where
    grace.zip      not a zip at all (gets an `error` row)

They are generated from the reference solution and the bug zoo, so they never drift from the
assignment; being edits of one reference, alice, bob, dave, erin and frank are one family of the similarity
report (a real class's independent solutions are not flagged).
"""
from __future__ import annotations

import argparse
import pathlib
import shutil
import sys
import tempfile
import zipfile

from autograder.samples import write_submission
from autograder.zoo.bugs import BUGS
from autograder.zoo.variants import VARIANTS
from grader.paths import REPO

DEFAULT_DEST = REPO / "out" / "example-class"


def _sample(samples, name):
    return next(sample for sample in samples if sample.name == name).overrides


def zip_folder(folder: pathlib.Path, zip_path: pathlib.Path, top: str | None = None) -> pathlib.Path:
    """Zip folder's contents, under one top-level folder `top` when given."""
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                relative = path.relative_to(folder).as_posix()
                zf.write(path, f"{top}/{relative}" if top else relative)
    return zip_path


def write_examples(dest: pathlib.Path = DEFAULT_DEST) -> list[pathlib.Path]:
    dest = pathlib.Path(dest)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as scratch:
        scratch = pathlib.Path(scratch)
        zip_folder(write_submission(scratch / "alice"), dest / "alice.zip", top="alice-attention")
        broken = {"scaling.py": "def scaled_scores(q, k, scale=None)\n    return q @ k.T\n"}
        zip_folder(write_submission(scratch / "frank", overrides=broken), dest / "frank.zip")
    write_submission(dest / "bob", overrides=_sample(BUGS, "no-scale"))
    write_submission(dest / "carol", solution=False)
    write_submission(dest / "dave", overrides=_sample(VARIANTS, "einsum-scores"))
    write_submission(dest / "erin", overrides=_sample(BUGS, "mask-after-softmax"))
    (dest / "grace.zip").write_bytes(b"this is not a zip file\n")
    return sorted(dest.iterdir())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder examples", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dest", nargs="?", type=pathlib.Path, default=DEFAULT_DEST)
    args = parser.parse_args(argv)
    written = write_examples(args.dest)
    print(f"wrote {len(written)} example submissions to {args.dest}:")
    for path in written:
        print(f"  {path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
