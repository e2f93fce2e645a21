"""`reference = "hf"`: a transformers model built from its config with random weights
(`from_config`: nothing is downloaded), as a workload the measuring code steps like any other.

A training campaign steps the model's language-model head: `AutoModelForCausalLM`, or
`AutoModelForMaskedLM` for an encoder (a config with `is_decoder = false` that has one),
the loss computed by the model from labels equal to the inputs. An embedding campaign runs
the bare `AutoModel` forward and mean-pools the last hidden state. No attention mask is
passed: every sample is as long as the longest the run sees, so a mask would be all ones,
which transformers skips anyway (and checking that it is needs the values, which neither
the meta device nor fake tensors have).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from planner.errors import InputError
from planner.measure.base import MeasureUnavailable
from planner.measure.hf_config import HfSettings, make_config
from planner.measure.workloads import Batch, Builder, Workload, model_flops_only, optimizer_for


class LanguageModelStep(nn.Module):
    """A transformers language model whose forward is the training loss."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.inner(input_ids=ids, labels=labels).loss  # type: ignore[no-any-return]


class EncoderPass(nn.Module):
    """A transformers encoder's forward, mean-pooled and normalized as embeddings are."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        hidden = self.inner(input_ids=ids).last_hidden_state
        return F.normalize(hidden.mean(dim=1), dim=-1)


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """transformers' advice about configs and kernels is not the user's concern here."""
    from transformers.utils import logging

    level = logging.get_verbosity()
    logging.set_verbosity_error()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.set_verbosity(level)


def _auto_class(config: Any, encoder: bool) -> Any:
    import transformers as tf

    if encoder:
        return tf.AutoModel
    cls = type(config)
    causal, masked = cls in tf.MODEL_FOR_CAUSAL_LM_MAPPING, cls in tf.MODEL_FOR_MASKED_LM_MAPPING
    if masked and (not causal or getattr(config, "is_decoder", None) is False):
        return tf.AutoModelForMaskedLM
    if causal:
        return tf.AutoModelForCausalLM
    return None


def build_model(s: HfSettings, device: torch.device, *, encoder: bool) -> nn.Module:
    """The transformers model of `s` on `device`, random fp32 weights."""
    config = make_config(s.model_type, s.fields, s.origins, s.where)
    auto = _auto_class(config, encoder)
    if auto is None:
        raise InputError(f"{type(config).__name__} has no language-model head in "
                         "transformers to train (causal or masked): measure it with a "
                         "factory", file=s.where.file, field=s.where.field)
    kwargs: dict[str, Any] = {"dtype": torch.float32}
    if s.attn_implementation is not None:
        kwargs["attn_implementation"] = s.attn_implementation
    try:
        with torch.device(device):
            model = auto.from_config(config, **kwargs)
    except ImportError as exc:  # a kernel whose package (or device) this machine lacks
        raise MeasureUnavailable(f"transformers cannot build attn_implementation "
                                 f"{s.attn_implementation!r} here: {exc}".splitlines()[0]
                                 ) from None
    except (ValueError, TypeError, KeyError, AssertionError, RuntimeError) as exc:
        if isinstance(exc, torch.OutOfMemoryError):
            raise
        at = s.where
        if s.attn_implementation is not None and "attn_implementation" in str(exc):
            at = s.origins.get("attn_implementation", at)
        raise InputError(f"transformers cannot build {type(config).__name__} from it: "
                         f"{type(exc).__name__}: {exc}".splitlines()[0], file=at.file,
                         field=at.field) from None
    if s.checkpointing and not encoder and not model_flops_only():
        if not model.supports_gradient_checkpointing:
            at = s.where
            raise InputError(f"{type(model).__name__} does not support gradient "
                             "checkpointing", file=at.file, field=at.field)
        # transformers 5 renamed it; the older name stays for the versions before.
        enable = getattr(model, "activation_checkpointing_enable", None)
        if enable is not None:
            enable(activation_checkpointing_kwargs={"use_reentrant": False})
        else:
            model.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={"use_reentrant": False})
    return model.eval() if encoder else model.train()


class HfBuild:
    """Builds the transformers model of `s` on a device (see `planner.measure.hf_config`)."""

    fake_tensors = True
    """FLOPs are counted on fake tensors, never on `meta` (see `planner.measure.flops`)."""

    def __init__(self, s: HfSettings, *, encoder: bool) -> None:
        self.s, self.encoder = s, encoder

    def __call__(self, device: torch.device) -> Workload:
        s, encoder = self.s, self.encoder
        with _quiet_transformers():
            model = build_model(s, device, encoder=encoder)
        step: nn.Module = EncoderPass(model) if encoder else LanguageModelStep(model)
        trainable = [p for p in model.parameters() if p.requires_grad]
        opt = None if encoder else optimizer_for(s.optimizer, trainable)

        def make_batch(micro_batch: int) -> Batch:
            ids = torch.randint(0, s.vocab, (micro_batch, s.seq_len), device=device)
            return (ids,) if encoder else (ids, ids)

        return Workload(model=step, optimizer=opt, make_batch=make_batch)


def hf_builder(s: HfSettings, *, encoder: bool) -> Builder:
    """A builder of the transformers model of `s`."""
    return HfBuild(s, encoder=encoder)
