"""What one batch run is asked to do: built once by the grade command (as Limits is), read by batch.grade_all.

    run = batch.grade_all(Request(("class/",), "out", workers=2, limits=Limits(...)))
"""
from __future__ import annotations

import datetime
import pathlib
from dataclasses import dataclass, field

from grader.contain.limits import Limits
from grader.run.submissions import MetadataReader


@dataclass(frozen=True)
class Request:
    paths: tuple[str, ...]                 # submissions, folders of them, Gradescope exports
    out: pathlib.Path                      # results/<slug>.json each, and grades.csv
    workers: int = 1                       # submissions graded at once
    limits: Limits = field(default_factory=Limits)
    keep: str | None = None                # a folder that gets, per submission, its trusted-side pytest log and its
    #                                        sandboxes' output
    private: tuple[str, ...] = ()          # the grader's own files and folders that no sandbox may read
    force: tuple[str, ...] = ()            # submission or results file names graded again (KeyError: no such one)
    regrade: bool = False                  # earlier results go to out/earlier/<time>/, all is graded again, and
    #                                        changes.csv says what changed
    repeat: int = 1                        # gradings in all (out/repeat-N/); repeat.csv lists what differed
    due: datetime.datetime | None = None   # the due date where an export's metadata names none (the late column)
    exports: bool = True                   # a path may be a Gradescope export (False: none is)
    shard: tuple[int, int] | None = None   # (i, n): grade only shard i of n (submissions.shard_of) into an out/ the
    #                                        shards share, and write no grades.csv: a run without a shard writes it
    #                                        once every shard has finished (it finds all graded, grades nothing)
    gpus: tuple[int, ...] = ()             # a GPU run: each job gets one of these, which no running job has
    read_metadata: MetadataReader | None = None   # how an export's metadata is read (the instructor's command
    #                                               gives it; without it an export is refused)
    public_checks: bool = False            # run the handout's public checks too, as entries worth no points
    staging: str | None = None             # a private folder (0700) for extracted export zips, which the caller
    #                                        removes after the class reports; None: the run's own, removed at its end

    def __post_init__(self):
        object.__setattr__(self, "out", pathlib.Path(self.out))
        for name in ("paths", "private", "force"):   # the command's lists, frozen
            object.__setattr__(self, name, tuple(map(str, getattr(self, name))))
        if self.gpus and self.workers > len(self.gpus):
            raise ValueError(f"{self.workers} workers for {len(self.gpus)} GPU(s): one submission per GPU at a time")
