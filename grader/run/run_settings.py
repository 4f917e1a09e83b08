"""What every grading process of a run is told: the limits, the isolation plan and where its folders are.

Made by the batch (batch.py), carried by the template (pool.py) to each worker (worker.py): its own module,
so that neither of those two imports the other.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from grader.run.template_boot import NO_GPU  # what a grading process is told of the GPUs before a job

if TYPE_CHECKING:   # the batch imports this before it starts the template: nothing heavy (the spec) on that path
    from grader.contain import isolation
    from grader.contain.limits import Limits


def gpu_environment(gpu: int | None) -> dict[str, str]:
    """What a grading process is told of the GPUs: none, or the one its job was given."""
    return NO_GPU if gpu is None else {"CUDA_VISIBLE_DEVICES": str(gpu)}


@dataclass(frozen=True)
class RunSettings:
    limits: Limits
    plan: isolation.Plan         # the layers every sandbox applies (isolation.probe)
    sandbox_root: str            # 0711: sandboxes can enter their own folder but list nothing
    trusted_root: str            # 0700: the trusted processes' scratch space
    gpus: tuple[int, ...] = ()   # a GPU run (--gpu): the GPUs the jobs are given, one each at a time; () on the CPU
    public_checks: bool = False  # run the handout's public checks too (--public-checks: Gradescope's runtime)
    # The forbidden-call rule's evidence in the handout's own files, by digest (source_rules.evidence_by_digest):
    # read once by the batch, while the template imports torch, instead of once per submission.
    known_sources: dict[str, list] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps({"limits": asdict(self.limits), "plan": self.plan.to_json(),
                           "sandbox_root": self.sandbox_root, "trusted_root": self.trusted_root,
                           "gpus": list(self.gpus), "public_checks": self.public_checks,
                           "known_sources": self.known_sources})

    @classmethod
    def from_json(cls, text: str) -> RunSettings:
        from grader.contain import isolation
        from grader.contain.limits import Limits

        data = json.loads(text)
        return cls(Limits(**data["limits"]), isolation.Plan.from_json(data["plan"]), data["sandbox_root"],
                   data["trusted_root"], tuple(int(gpu) for gpu in data.get("gpus", ())),
                   bool(data.get("public_checks", False)), dict(data.get("known_sources", {})))
