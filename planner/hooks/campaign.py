"""`Campaign`: a training loop's side of the run contract, in a few calls.

    campaign = Campaign()
    start = load(campaign.resume) if campaign.resume else 0   # None on a first start
    for step in campaign.steps(start, total):                # refuses 0 over a checkpoint
        train_one_step()
        if (step + 1) % 100 == 0:
            with campaign.checkpoint(step + 1) as path:      # lands at CAMPAIGN_RESUME_PATH
                save(path)
        campaign.step(step + 1)                              # progress, every few seconds

Run by hand, with no CAMPAIGN_* variable, it resumes from nothing, reports nothing, keeps
checkpoints only where `default_save` says, and never stops early.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping

from planner.hooks import env
from planner.hooks.files import CampaignError, move_into_place, point_at, temporary, warn
from planner.hooks.progress import EVERY_S, ProgressFile

TRIAL_MIN_S = 1.0
"""Least time a trial's timed steps take before the run ends itself: the trial reads the
progress file every tenth of a second, and steps faster than that need a few of its reads
to be timed at all (until then the trial's own stop ends the run)."""
RESUME_HINT = ("load it before training (a Trainer: trainer.train(resume_from_checkpoint="
               "campaign_resume()); Lightning: trainer.fit(..., ckpt_path=campaign_resume()); "
               "a loop: campaign.steps(<the checkpoint's step>, ...))")


def campaign_resume(environ: Mapping[str, str] | None = None) -> str | None:
    """The checkpoint to resume from (`CAMPAIGN_RESUME`), or None on a first start or when
    the script runs by hand."""
    return (os.environ if environ is None else environ).get(env.RESUME) or None


def _count(text: str | None, name: str) -> int | None:
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        warn(f"{name}={text!r} is not a whole number of steps: ignored")
        return None
    return value if value >= 0 else None


class Campaign:
    """Where to resume from and save to, the progress report, and a trial's stop."""

    def __init__(self, *, every: float = EVERY_S, warmup_steps: int = 1,
                 default_save: str | None = None, environ: Mapping[str, str] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """`every`: seconds between progress writes (a trial reports every step);
        `warmup_steps`: steps after the start that a trial does not time (at least 1: the
        first step carries start-up and lazy initialisation; more for compilation),
        reported with `warmup`; `default_save`: where `checkpoint` saves when the script
        runs by hand (None: nowhere)."""
        e = os.environ if environ is None else environ
        self.run_id = e.get(env.RUN_ID) or None
        """The run's id; None when run by hand."""
        self.kind = e.get(env.RUN_KIND) or None
        """`train`, `robustness` (an evaluation, handed the checkpoint it evaluates) or
        `embed`; None when run by hand."""
        self.resume = campaign_resume(e)
        """The checkpoint to load before training; None on a first start."""
        self.save_path = e.get(env.RESUME_PATH) or default_save
        """Where each checkpoint goes (`CAMPAIGN_RESUME_PATH`)."""
        self.checkpoint_dir = e.get(env.CHECKPOINT_DIR) or None
        """The run's checkpoint folder; None when run by hand."""
        self.trial = e.get(env.TRIAL) == "1"
        """Whether this is a trial: nothing is saved, and it stops after `trial_steps`."""
        self.trial_steps = _count(e.get(env.TRIAL_STEPS), env.TRIAL_STEPS) if self.trial \
            else None
        """Timed steps a trial runs before stopping itself."""
        self.warmup_steps = max(int(warmup_steps), 1)
        # A trial times steps from the reports' write times: each step is reported.
        self.progress = ProgressFile(e.get(env.PROGRESS) or None, 0.0 if self.trial else every,
                                     clock)
        self.start: int | None = None
        """The global step training started from (known at the first report)."""
        self.timed_from: int | None = None
        """The step whose report started the timed part."""
        self.timed_at = 0.0
        self.clock = clock
        self.stop = False
        """True once a trial's budget is met: end training now, without saving."""

    def begin(self, start: int) -> None:
        """Training starts at global step `start`. With a checkpoint to resume from, a start
        at 0 is an error: the run would silently throw its checkpoint away."""
        # An evaluation reads its run's checkpoint: starting at 0 is what it does.
        if self.resume and start == 0 and self.kind in (None, "train"):
            raise CampaignError(f"{env.RESUME}={self.resume} holds this run's checkpoint, but "
                                f"training starts from step 0: {RESUME_HINT}")
        self.start = start

    def steps(self, start: int, total: int) -> Iterator[int]:
        """The steps from `start` to `total` (a range), checked by `begin`, ending early
        once a trial's budget is met; the last report is written when it ends."""
        self.begin(start)
        try:
            for i in range(start, total):
                if self.stop:
                    return
                yield i
        finally:
            self.finish()

    def step(self, n: int) -> bool:
        """Report that global step `n` is done; True once a trial should stop. The first
        report of a run that did not call `begin` takes `n - 1` as its start."""
        if self.start is None:
            self.begin(max(n - 1, 0))
        assert self.start is not None
        warm = n < self.start + self.warmup_steps
        now = self.progress.step is None
        if not warm and self.timed_from is None:
            self.timed_from, now = n, True  # the timed part starts after this step
            self.timed_at = self.clock()
        if (self.trial_steps is not None and self.timed_from is not None
                and n - self.timed_from >= self.trial_steps and not self.stop
                and self.clock() - self.timed_at >= TRIAL_MIN_S):
            self.stop, now = True, True
        self.progress.report(n, warmup=warm, now=now)
        return self.stop

    @contextlib.contextmanager
    def checkpoint(self, step: int, *, writer: bool = True) -> Iterator[str]:
        """A temporary path beside the resume path to save the checkpoint of `step` to; once
        the block ends it replaces the resume path with one rename, and the progress file
        says `checkpoint_step`. In a trial, or by hand with no `default_save`, the path is a
        scratch file removed afterwards. `writer=False` on processes that do not write
        (other ranks of a distributed run)."""
        keep = self.save_path is not None and not self.trial
        if keep:
            assert self.save_path is not None
            os.makedirs(os.path.dirname(os.path.abspath(self.save_path)), exist_ok=True)
            tmp = temporary(self.save_path)
        else:
            fd, tmp = tempfile.mkstemp(prefix="campaign-checkpoint-")
            os.close(fd)
        try:
            yield tmp
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        if not keep or not writer:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            return
        assert self.save_path is not None
        move_into_place(tmp, self.save_path)
        self.progress.checkpointed(step)

    def saved_folder(self, folder: str, step: int) -> None:
        """A framework saved the checkpoint of `step` as `folder`: the resume path becomes a
        link to it, swapped in whole (nothing in a trial or by hand)."""
        if self.save_path is None or self.trial:
            return
        point_at(folder, self.save_path)
        self.progress.checkpointed(step)

    def finish(self) -> None:
        """Write the last step reported, whatever the time since the last write."""
        self.progress.flush()
