"""The model a training campaign trains, at its real size: what the analytic tier computes on.

The measurement section (`[ablation.measure]`) is often a small stand-in, sized so that
measuring takes minutes; its FLOPs say nothing about the real step. `[ablation.model]`
describes the real model, in one of two ways:

- the reference transformer at its real size: any of `d_model`, `layers`, `heads`,
  `seq_len`, `vocab`, `ffn_mult`, over the measurement section's values (the factors of
  each configuration apply on top, as when measuring);
- any model: `params` (weights used in matrix products) and `tokens_per_sample`; a step
  then costs 6 · params · tokens (Kaplan et al. 2020), a third more with activation
  checkpointing, and no memory figure is derived.
"""

from typing import Self

from pydantic import Field, model_validator

from planner.spec.base import Strict

SIZES = ("d_model", "layers", "heads", "seq_len", "vocab", "ffn_mult")


class ModelSize(Strict):
    """The trained model at its real size, for the analytic tier."""

    params: int | None = Field(default=None, ge=1)
    """Parameters used in matrix products (embedding lookups excluded), for a model that is
    not the reference transformer."""
    tokens_per_sample: int | None = Field(default=None, ge=1)
    """Tokens (or positions) one sample carries through the model, with `params`."""
    d_model: int | None = Field(default=None, ge=8)
    """Reference transformer at real size: hidden size."""
    layers: int | None = Field(default=None, ge=1)
    """Reference transformer at real size: blocks."""
    heads: int | None = Field(default=None, ge=1)
    """Reference transformer at real size: attention heads."""
    seq_len: int | None = Field(default=None, ge=2)
    """Reference transformer at real size: tokens per sample."""
    vocab: int | None = Field(default=None, ge=2)
    """Reference transformer at real size: vocabulary."""
    ffn_mult: float | None = Field(default=None, gt=0)
    """Reference transformer at real size: MLP hidden size over d_model."""

    @model_validator(mode="after")
    def _one_form(self) -> Self:
        sizes = {k: v for k in SIZES if (v := getattr(self, k)) is not None}
        if self.params is not None:
            if sizes:
                raise ValueError("@params: give `params` and `tokens_per_sample`, or the "
                                 "reference sizes, not both")
            if self.tokens_per_sample is None:
                raise ValueError("@tokens_per_sample: `params` needs `tokens_per_sample`")
        elif self.tokens_per_sample is not None:
            raise ValueError("@params: `tokens_per_sample` needs `params`")
        elif not sizes:
            raise ValueError("@params: give `params` and `tokens_per_sample`, or the sizes of "
                             "the reference transformer")
        return self

    def sizes(self) -> dict[str, int | float]:
        """The reference sizes given."""
        return {k: v for k in SIZES if (v := getattr(self, k)) is not None}
