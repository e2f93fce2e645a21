"""The campaign's fixed encoder: tokenizer, truncation, model, pooling and normalization.

Everything that changes a vector is set here once, from the plan, and fingerprinted:
the model's weights and tokenizer file by their SHA-256, the rest by value. Two backends
load a model (see `planner.corpus.backends`): `Encoder` here, the light built-in BERT, and
`planner.embed.st_encoder.STEncoder`, the folder's own sentence-transformers stack.
`load_encoder` builds the one the plan names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from planner.corpus.tokens import file_sha256, find_model_dir
from planner.embed.shared import DTYPES, fingerprint_of, model_folder, pick_device
from planner.errors import InputError

if TYPE_CHECKING:
    from planner.planfile.plan import EmbeddingPlan
    from planner.spec.embedding import Embedding


def load_encoder(e: EmbeddingPlan | Embedding, *, device: str | None = None,
                 dtype: str = "fp32") -> Any:
    """The encoder the plan (or preset) names (`builtin` or `sentence-transformers`), on
    `device`; `auto` picks the built-in BERT where it loads the folder."""
    from planner.corpus.backends import BUILTIN, ST, choose, install_hint, missing_package
    from planner.corpus.folder import read_folder

    folder = model_folder(e.model)
    backend = e.backend
    if backend == "auto":
        backend = choose("auto", read_folder(folder))
    missing = missing_package(backend)
    if missing is not None:
        raise InputError(f"the plan loads {e.model} with {backend}, which needs {missing}: "
                         f"{install_hint(backend)}", field="embedding.backend")
    if backend == ST:
        from planner.embed.st_encoder import STEncoder

        return STEncoder(folder, e.truncation_tokens, e.pooling, e.normalization,
                         prompt=e.prompt, dimensions=e.dimensions, device=device, dtype=dtype)
    assert backend == BUILTIN
    return Encoder(e.model, e.tokenizer, e.truncation_tokens, e.pooling, e.normalization,
                   device=device, dtype=dtype, prompt=e.prompt)


class Encoder:
    """Texts in, one float32 vector per text out, as the plan fixes it: the built-in BERT."""

    backend = "builtin"

    def __init__(self, model: str, tokenizer: str, truncation: int, pooling: str,
                 normalization: str, *, device: str | None = None, dtype: str = "fp32",
                 prompt: str = "", dimensions: int | None = None) -> None:
        import torch
        from tokenizers import Tokenizer

        from planner.embed.bert import load_bert

        folder = model_folder(model)
        tok_dir = find_model_dir(tokenizer)
        tok_file = tok_dir / "tokenizer.json" if tok_dir is not None else None
        if tok_file is None or not tok_file.is_file():
            raise InputError(f"no tokenizer.json found for {tokenizer!r}",
                             field="embedding.tokenizer")
        if dtype not in DTYPES:
            raise InputError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPES)}",
                             field="--dtype")
        self.device = pick_device(device)
        self.dtype: Literal["fp32", "bf16", "fp16"] = dtype  # type: ignore[assignment]
        self.pooling, self.normalization, self.truncation = pooling, normalization, truncation
        self.prompt = prompt
        from planner.corpus.folder import read_folder

        self.stack = read_folder(folder).stack()
        self.model_sha256 = file_sha256(folder / "model.safetensors")
        self.tokenizer_sha256 = file_sha256(tok_file)
        self.tok = Tokenizer.from_file(str(tok_file))
        self.tok.no_padding()
        self.tok.enable_truncation(max_length=truncation)
        net = load_bert(folder)
        positions = net.config["max_position_embeddings"]
        if truncation > positions:
            raise InputError(f"truncation {truncation} exceeds the model's {positions} "
                             "positions", field="embedding.truncation_tokens")
        self.pad_id = int(net.config.get("pad_token_id") or 0)
        native = int(net.config["hidden_size"])
        # Fewer dimensions than the model's keep the leading ones (then normalization),
        # as the sentence-transformers backend does.
        self.dim = int(dimensions or native)
        if self.dim > native:
            raise InputError(f"{self.dim} dimensions: the model outputs only {native}",
                             field="embedding.dimensions")
        torch_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16,
                       "fp16": torch.float16}[dtype]
        self.net = net.to(device=self.device, dtype=torch_dtype)
        if self.device == "cpu" and dtype == "fp32":
            from planner.embed.cpu_gemm import pack_linears

            pack_linears(self.net)

    def shape_model(self) -> Any:
        """The BERT with this model's shapes and random weights, built in the current device
        context (meta or fake tensors), for `corpus size`'s estimates."""
        from planner.embed.bert import Bert

        return Bert(self.net.config)

    def fingerprint(self, settings_fingerprint: str) -> str:
        """SHA-256 over the plan's settings, the files actually loaded, and the precision."""
        return fingerprint_of(settings_fingerprint, model_sha256=self.model_sha256,
                              tokenizer_sha256=self.tokenizer_sha256, dtype=self.dtype,
                              backend=self.backend, stack=self.stack, prompt=self.prompt)

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text (after the prompt), special tokens included, truncated."""
        if self.prompt:
            texts = [self.prompt + t for t in texts]
        return [e.ids for e in self.tok.encode_batch_fast(list(texts))]

    def encode_texts(self, texts: Sequence[str]) -> tuple[Any, list[int]]:
        """One batch: vectors [len(texts), dim] (float32 numpy) and each text's tokens."""
        ids = self.tokenize(texts)
        return self.encode_ids(ids), [len(t) for t in ids]

    def encode_ids(self, batch: Sequence[Sequence[int]]) -> Any:
        """One padded batch through the model: a float32 numpy array [len(batch), dim]."""
        import torch

        width = max(len(ids) for ids in batch)
        ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for i, row in enumerate(batch):
            ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
            mask[i, : len(row)] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        with torch.inference_mode():
            tokens = self.net(ids, mask).float()
            vectors = pool(tokens, mask, self.pooling)[:, : self.dim]
            if self.normalization == "l2":
                vectors = torch.nn.functional.normalize(vectors, p=2, dim=1)
        return vectors.cpu().numpy()

    def encode(self, texts: Sequence[str]) -> Any:
        """Texts as one batch: tokenize, then `encode_ids`."""
        return self.encode_ids(self.tokenize(texts))


def pool(tokens: Any, mask: Any, how: str) -> Any:
    """Token vectors [batch, seq, dim] to one vector per text, padding excluded."""
    import torch

    m = mask.unsqueeze(-1).to(tokens.dtype)
    if how == "mean":
        return (tokens * m).sum(1) / m.sum(1).clamp(min=1e-9)
    if how == "cls":
        return tokens[:, 0]
    if how == "max":
        return tokens.masked_fill(m == 0, float("-inf")).max(1).values
    if how == "last":
        last = mask.sum(1) - 1
        return tokens[torch.arange(tokens.shape[0], device=tokens.device), last]
    raise InputError(f"unknown pooling {how!r}", field="embedding.pooling")
