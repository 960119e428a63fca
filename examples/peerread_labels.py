"""Write a judge calibration set from PeerRead's aspect scores: one trace per paper (the paper
as the output to assess) and one label per human reviewer and aspect.

Usage::

    python examples/peerread_labels.py --peerread path/to/peerread --out-dir /tmp/calib
    agentgauge judge calibrate --suite examples/peerread_judges.toml \\
        --traces /tmp/calib/papers.jsonl --labels /tmp/calib/labels.jsonl --judge openai:gpt-4o-mini

The aspects become the metrics of ``examples/peerread_judges.toml``: ``CLARITY`` -> ``clarity``,
``ORIGINALITY`` -> ``originality``, ``SOUNDNESS_CORRECTNESS`` -> ``soundness``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from agentgauge.io.jsonl import write_traces
from agentgauge.review.loader import load_peerread
from agentgauge.review.pipeline import aspect_labels

ASPECTS = {"CLARITY": "clarity", "ORIGINALITY": "originality", "SOUNDNESS_CORRECTNESS": "soundness"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peerread", type=Path, required=True, help="PeerRead checkout")
    parser.add_argument("--out-dir", type=Path, required=True, help="folder to write into")
    args = parser.parse_args()
    traces, labels = aspect_labels(load_peerread(args.peerread).papers, ASPECTS)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    write_traces(traces, args.out_dir / "papers.jsonl")
    with (args.out_dir / "labels.jsonl").open("w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(label) + "\n" for label in labels)
    print(f"wrote {len(traces)} papers and {len(labels)} labels to {args.out_dir}")


if __name__ == "__main__":
    main()
