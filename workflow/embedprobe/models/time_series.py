"""Univariate time-series foundation models (Chronos, MOMENT) as frozen EEG encoders.

They take one series at a time. As the reference suite does (NeuroAtlas
backbones/ts_foundation_base.py, UnivariateTimeSeriesBackbone), a window of C channels becomes
C series embedded in one pass, and the window's vector is the mean of its channels' vectors.

Chronos (backbones/chronos.py there) runs through its own package, chronos-forecasting: its
tokenizer (MeanScaleUniformBins: each series divided by its mean |x|, cut into 4,094 uniform
bins over [-15, 15], an EOS token appended) keeps the last `context_length` (512) values of a
longer series, and the series' vector is the mean over every token of the T5 encoder's last
hidden state, EOS included (`ChronosModel.encode`, then `.mean(dim=1)`).

MOMENT's package (momentfm) cannot be installed beside the runtime pins; its architecture is
built from transformers, which the same extra brings (models/moment_encoder.py).

The package is an optional extra (envs/requirements-time-series.txt): without it the family is
reported "package missing" with its install line (`package_missing`) before anything is built.
This module imports neither torch nor the package (the Snakefile reads the model table); the
encoders themselves are models/chronos_encoder.py and models/moment_encoder.py.
"""

from __future__ import annotations

import importlib.util

from embedprobe.core.errors import ModelError

INSTALL_LINE = ("bash scripts/install.sh .venv --time-series   # or: .venv/bin/pip install "
                "-r envs/requirements-time-series.txt -c envs/requirements.txt")
EXTRA_REQUIREMENTS = "envs/requirements-time-series.txt"
# architecture -> (the module it imports, the pip package that provides it)
PACKAGES = {"Chronos": ("chronos", "chronos-forecasting"),
            # momentfm itself cannot be installed beside the runtime pins (it pins
            # huggingface-hub 0.24.0 and transformers 4.33.3): MOMENT is built from transformers
            # (models/moment_encoder.py)
            "MOMENT": ("transformers", "transformers")}
# every module the extra's code imports -> the distribution pinned for it in the extra's file
EXTRA_MODULES = {"chronos": "chronos-forecasting", "transformers": "transformers"}

# amazon/chronos-t5-tiny's config.json (the T5 settings and its `chronos_config`): the random
# init is this architecture with seeded random weights.
CHRONOS_T5_TINY = {
    "d_model": 256, "d_ff": 1024, "d_kv": 64, "num_heads": 4, "num_layers": 4,
    "num_decoder_layers": 4, "vocab_size": 4096, "relative_attention_num_buckets": 32,
    "relative_attention_max_distance": 128, "feed_forward_proj": "relu",
    "dropout_rate": 0.1, "layer_norm_epsilon": 1e-6, "pad_token_id": 0, "eos_token_id": 1,
    "decoder_start_token_id": 0, "tie_word_embeddings": True,
    "chronos_config": {
        "tokenizer_class": "MeanScaleUniformBins",
        "tokenizer_kwargs": {"low_limit": -15.0, "high_limit": 15.0},
        "n_tokens": 4096, "n_special_tokens": 2, "pad_token_id": 0, "eos_token_id": 1,
        "use_eos_token": True, "model_type": "seq2seq", "context_length": 512,
        "prediction_length": 64, "num_samples": 20, "temperature": 1.0, "top_k": 50,
        "top_p": 1.0,
    },
}


def package_missing(architecture: str) -> str:
    """Why the family's package cannot be imported ('' when it can, or the family needs none)."""
    if architecture not in PACKAGES:
        return ""
    module, package = PACKAGES[architecture]
    if importlib.util.find_spec(module) is not None:
        return ""
    return f"package missing: {package} ({architecture} needs it: the optional time-series extra)"


def require_package(architecture: str) -> None:
    missing = package_missing(architecture)
    if missing:
        raise ModelError(missing, fix=INSTALL_LINE)


# AutonLab/MOMENT-1-small's config.json, what a build reads of it: the patch, and the T5 encoder
# it was initialised from (google/flan-t5-small's config). The random init is this architecture
# with seeded random weights.
MOMENT_1_SMALL = {
    "patch_len": 8, "patch_stride_len": 8, "seq_len": 512, "d_model": None,
    "t5_config": {
        "d_model": 512, "d_ff": 1024, "d_kv": 64, "num_heads": 6, "num_layers": 8,
        "num_decoder_layers": 8, "vocab_size": 32128, "relative_attention_num_buckets": 32,
        "relative_attention_max_distance": 128, "feed_forward_proj": "gated-gelu",
        "dropout_rate": 0.1, "layer_norm_epsilon": 1e-6, "pad_token_id": 0, "eos_token_id": 1,
        "decoder_start_token_id": 0, "tie_word_embeddings": False, "is_encoder_decoder": True,
        "model_type": "t5",
    },
}
