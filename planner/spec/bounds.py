"""Upper bounds on the numbers an input file may hold.

Every number is finite (inf and nan are refused by the models' base class) and below a
bound far past any real campaign, so arithmetic on it stays exact enough and fast, and no
date or duration built from it overflows. docs/presets.md ("Bounds on input") lists them.
"""

from __future__ import annotations

HOURS = 87_600.0
"""Hours of a window, a stack check or a safety margin: ten years."""
MINUTES = 525_600.0
"""Minutes of a per-run overhead (startup, one evaluation, one checkpoint write): a year."""
STEPS = 10**12
"""Optimizer steps, or steps between evaluations or checkpoints."""
BATCH = 10**7
"""Samples in a micro-batch, micro-batches accumulated, documents per batch."""
EFFECTIVE_BATCH = 10**12
"""Samples per optimizer step."""
GIB = 1_000_000.0
"""GiB of a memory margin or of memory per sample."""
PRICE = 1_000_000.0
"""Price of one card-hour."""
FIGURE = 1e12
"""A figure's value (seconds per step, GiB, tokens per second)."""
MEASURED_SECONDS = 1e7
"""Seconds of one measured step (four months): figures scaled from it across cards stay
far below FIGURE."""
PARAMS = 10**15
"""Parameters of a model, or tokens of one step."""
FLOPS = 1e30
"""FLOPs of one step."""
TOKENS = 10**9
"""Tokens of a document, or of a truncation."""
TOKEN_BUDGET = 10**10
"""Padded tokens per batch."""
DOCUMENTS = 10**12
"""Documents in a corpus or a shard."""
VERSIONS = 1000
"""Representation versions of an embedding campaign."""
EMBEDDING_RUNS = 100_000
"""Runs of an embedding campaign: versions × cards."""
CARD_GIB = 100_000.0
"""GiB of one card's memory, nominal or usable, or of its CUDA context (the largest cards
hold a few hundred)."""
RATE_MIN = 1e-3
"""Least non-zero rate a card may have, in its unit (TFLOPS, GB/s, W): smaller, and the
times and ratios computed from it overflow."""
TFLOPS = 1e6
"""TFLOPS of one card, in any precision."""
BANDWIDTH_GBPS = 1e6
"""GB/s of one card's memory, host link or NVLink."""
WATTS = 1e6
"""Board power of one card."""
SEED_LIMIT = 2**63
"""Seeds are signed 64-bit integers: -SEED_LIMIT <= seed < SEED_LIMIT, in a preset and in
the plan read back alike."""
VERSION_DIGITS = r"^\d{1,4}\.\d{1,4}$"
"""A CUDA (or compute-capability) version: at most four digits a part."""
