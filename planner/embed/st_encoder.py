"""The model-faithful backend: the folder's own sentence-transformers module stack.

The folder is loaded by sentence-transformers itself (Transformer of any architecture
transformers knows, Pooling in every mode, Dense, Normalize, the folder's max_seq_length),
offline: from the folder alone, never from the network, never running a repository's code.
Each of the plan's batches goes through the same two steps `SentenceTransformer.encode`
takes per batch (`preprocess`, then the module stack), so the vectors are the model's own;
only the batches differ, which are the plan's length-grouped token-budget batches.

Where the preset opted out of a folder setting (`differs_from_model`), the preset wins:
its pooling replaces the Pooling module's mode, its normalization replaces the Normalize
module, its truncation replaces max_seq_length, its dimensions keep the leading ones.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from planner.corpus.folder import PRESET_POOLING, read_folder, weights_sha256
from planner.embed.shared import DTYPES, fingerprint_of, pick_device
from planner.errors import InputError

ST_POOLING = {v: k for k, v in PRESET_POOLING.items()}


def _offline() -> None:
    # Set before transformers is first imported: it reads them once.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


def tokenizer_sha256(folder: Path) -> str:
    """SHA-256 of the folder's tokenizer.json (empty when it has none)."""
    from planner.corpus.tokens import file_sha256

    path = folder / "tokenizer.json"
    return file_sha256(path) if path.is_file() else ""


class STEncoder:
    """Texts in, one float32 vector per text out, through the folder's module stack."""

    backend = "sentence-transformers"

    def __init__(self, folder: Path, truncation: int, pooling: str, normalization: str, *,
                 prompt: str = "", dimensions: int | None = None, device: str | None = None,
                 dtype: str = "fp32") -> None:
        _offline()
        import torch
        import transformers
        from sentence_transformers import SentenceTransformer

        # Load reports about heads an encoder does not use (a BERT pooler) are noise here.
        transformers.logging.set_verbosity_error()

        if dtype not in DTYPES:
            raise InputError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPES)}",
                             field="--dtype")
        described = read_folder(folder)
        self.device = pick_device(device)
        self.dtype: Literal["fp32", "bf16", "fp16"] = dtype  # type: ignore[assignment]
        self.truncation, self.prompt, self.normalization = truncation, prompt, normalization
        self.model_sha256 = weights_sha256(folder)
        self.tokenizer_sha256 = tokenizer_sha256(folder)
        try:
            model = SentenceTransformer(str(folder), device=self.device, local_files_only=True,
                                        trust_remote_code=False)
        except (OSError, ValueError, KeyError, ImportError) as exc:
            raise InputError(f"sentence-transformers cannot load it: "
                             f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                             file=folder, field="embedding.model") from None
        torch_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16,
                       "fp16": torch.float16}[dtype]
        self.model = model.to(dtype=torch_dtype).eval()
        if self.device == "cpu" and dtype == "fp32":
            from planner.embed.cpu_gemm import pack_linears

            pack_linears(self.model)
        limit = self.model.max_seq_length
        if described.positions and truncation > described.positions:
            raise InputError(f"truncation {truncation} exceeds the model's "
                             f"{described.positions} positions",
                             field="embedding.truncation_tokens")
        if limit is None or truncation != limit:
            self.model.max_seq_length = truncation
        self._set_pooling(pooling)
        # Normalization is applied here, after the stack, so a preset that differs from
        # the folder can have its way; the Normalize module computes the same thing.
        self.modules = [m for m in self.model.children()
                        if type(m).__name__ != "Normalize"]
        size: Any = getattr(self.model, "get_embedding_dimension", None) or getattr(
            self.model, "get_sentence_embedding_dimension", None)
        native = (size() if size is not None else None) or described.dim
        self.dim = int(dimensions or native)
        if self.dim > native:
            raise InputError(f"{self.dim} dimensions: the model outputs only {native}",
                             field="embedding.dimensions")
        self.stack = described.stack()
        tok: Any = self.model.tokenizer
        self.pad_id = int(getattr(tok, "pad_token_id", None) or 0)
        self._pad_left = getattr(tok, "padding_side", "right") == "left"
        # What preprocess adds besides the token ids (modality, the prompt's length for a
        # pooling that leaves the prompt out): the same for every batch of this campaign.
        self._extra = {k: v for k, v in self.model.preprocess(
            ["x"], prompt=self.prompt or None).items() if not hasattr(v, "shape")}

    def _set_pooling(self, pooling: str) -> None:
        wanted = ST_POOLING.get(pooling, pooling)
        for m in self.model.children():
            mode: Any = getattr(m, "pooling_mode", None)
            if type(m).__name__ == "Pooling" and mode is not None:
                modes = (mode,) if isinstance(mode, str) else tuple(mode)
                if "+".join(modes) != wanted:
                    setattr(m, "pooling_mode", wanted)  # noqa: B010

    def fingerprint(self, settings_fingerprint: str) -> str:
        """SHA-256 over the plan's settings, the files loaded, the stack and the precision."""
        return fingerprint_of(settings_fingerprint, model_sha256=self.model_sha256,
                              tokenizer_sha256=self.tokenizer_sha256, dtype=self.dtype,
                              backend=self.backend, stack=self.stack, prompt=self.prompt)

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text (after the prompt), special tokens included, truncated."""
        features = self.model.preprocess(list(texts), prompt=self.prompt or None)
        ids, mask = features["input_ids"], features["attention_mask"].bool()
        return [row[m].tolist() for row, m in zip(ids, mask, strict=True)]

    def encode_ids(self, batch: Sequence[Sequence[int]]) -> Any:
        """Token ids (from `tokenize`), padded into one batch, through the stack: a float32
        numpy array [len(batch), dim]. `corpus size` probes memory and speed with it."""
        import torch

        width = max(len(ids) for ids in batch)
        ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for i, row in enumerate(batch):
            cut = slice(width - len(row), width) if self._pad_left else slice(0, len(row))
            ids[i, cut] = torch.tensor(row, dtype=torch.long)
            mask[i, cut] = 1
        return self._run({"input_ids": ids, "attention_mask": mask, **self._extra})

    def encode(self, texts: Sequence[str]) -> Any:
        """Texts as one batch: the vectors of `encode_texts`."""
        return self.encode_texts(texts)[0]

    @property
    def net(self) -> Any:
        """The stack as a module of (ids, mask), for `corpus size`'s workloads."""
        from planner.embed.st_sizing import StackNet

        return StackNet(self)

    def shape_model(self) -> Any:
        """The transformer with the folder's shapes and random weights, built in the current
        device context (meta or fake tensors), for `corpus size`'s estimates."""
        from planner.embed.st_sizing import ShapeNet

        transformer: Any = self.model[0]
        return ShapeNet(transformer.auto_model.config)

    def _run(self, features: dict[str, Any]) -> Any:
        import torch
        from sentence_transformers.util import batch_to_device

        features = batch_to_device(features, torch.device(self.device))
        with torch.inference_mode():
            for module in self.modules:
                features = module(features)
            vectors = features["sentence_embedding"][:, : self.dim].float()
            if self.normalization == "l2":
                vectors = torch.nn.functional.normalize(vectors, p=2, dim=1)
        return vectors.cpu().numpy()

    def encode_texts(self, texts: Sequence[str]) -> tuple[Any, list[int]]:
        """One batch through the stack: vectors [len(texts), dim] (float32 numpy) and each
        text's tokens, prompt included."""
        features = self.model.preprocess(list(texts), prompt=self.prompt or None)
        lengths = [int(n) for n in features["attention_mask"].sum(1).tolist()]
        return self._run(features), lengths
