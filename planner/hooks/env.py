"""The run contract's names, as a training script sees them: the environment `run` and the
SLURM task set, and the keys of the progress file the script writes.

This is the one place the script side defines them; the executor's progress reader takes
the progress file's variable from here too. Standard library only: it is imported inside
the user's training script.
"""

from __future__ import annotations

ID = "CAMPAIGN_ID"
"""The campaign id every run id carries."""
RUN_ID = "CAMPAIGN_RUN_ID"
"""The run's id."""
RUN_KIND = "CAMPAIGN_RUN_KIND"
"""`train`, `robustness` or `embed`."""
SEED = "CAMPAIGN_SEED"
"""The run's seed (empty for an embedding shard)."""
CHECKPOINT_DIR = "CAMPAIGN_CHECKPOINT_DIR"
"""The run's checkpoint folder (absolute)."""
RESUME = "CAMPAIGN_RESUME"
"""Empty on a first start; the path to resume from once something exists there."""
RESUME_PATH = "CAMPAIGN_RESUME_PATH"
"""Always set: where the run saves the checkpoint the executor resumes it from."""
EXPORT = "CAMPAIGN_EXPORT"
"""The run's export name (absolute)."""
ATTEMPT = "CAMPAIGN_ATTEMPT"
"""Which start of the run this is, from 1."""
RUN_TOKEN = "CAMPAIGN_RUN_TOKEN"
"""The attempt's token: with the run id and the working directory, what proves to the next
executor that a live process is this attempt's launcher (a script leaves it as it is)."""
WORKDIR = "CAMPAIGN_WORKDIR"
"""The working directory every path of the plan resolves against."""
PLAN = "CAMPAIGN_PLAN"
"""The plan.toml being run."""
PROGRESS = "CAMPAIGN_PROGRESS"
"""The progress file the run writes (a small JSON object, see the keys below)."""
TRIAL = "CAMPAIGN_TRIAL"
"""`1` when the run is a trial of its command (`campaign-planner trial`)."""
TRIAL_STEPS = "CAMPAIGN_TRIAL_STEPS"
"""A trial's budget: the run may end itself cleanly after this many timed steps."""

STEP = "step"
"""Progress key: the global step reached (after a resume it continues from the
checkpoint's step)."""
PEAK_MEMORY = "peak_memory_bytes"
"""Progress key: the process's peak allocated memory on its device so far, where known."""
WARMUP = "warmup"
"""Progress key: true while the steps reported are warm-up that must not be timed; the
first report without it starts the timed part."""
CHECKPOINT_STEP = "checkpoint_step"
"""Progress key: the global step of the last checkpoint saved at the resume path."""
