"""A training script's side of the run contract: one import, no heavy library.

    from planner.hooks import Campaign, campaign_resume            # a plain loop
    from planner.hooks import CampaignCallback                     # Hugging Face Trainer
    from planner.hooks import CampaignLightningCallback            # Lightning

Importing this package loads neither torch, transformers nor lightning: the callbacks
import their framework when first named. `planner.hooks.env` names the environment and
the progress file's keys.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from planner.hooks.campaign import Campaign, campaign_resume
from planner.hooks.files import CampaignError

if TYPE_CHECKING:
    from planner.hooks.lightning_callback import CampaignLightningCallback
    from planner.hooks.trainer import CampaignCallback

__all__ = ["Campaign", "CampaignCallback", "CampaignError", "CampaignLightningCallback",
           "campaign_resume"]


def __getattr__(name: str) -> Any:
    if name == "CampaignCallback":
        from planner.hooks.trainer import CampaignCallback

        return CampaignCallback
    if name == "CampaignLightningCallback":
        from planner.hooks.lightning_callback import CampaignLightningCallback

        return CampaignLightningCallback
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
