"""What a recording goes through before a model sees it, by protocol: one owner for the choice.

`protocol: reference` (the default) is the field's reference suite (NeuroAtlas; its user guide
and REFERENCE.md): each recording high-passed at 0.5 Hz and notched at its dataset's powerline
frequency (`line_freq`) before the model's resampling (pipeline/filters.py); BIOT's windows
each centred, then divided per channel by the recording's 95th percentile of |x| in µV
(`recording_q95`, computed once per recording over the whole filtered recording). The BCI
tasks (core/variants.BCI_TASKS) filter as the reference's BCI protocol does (`bci_filters`).

Deliberate differences are named options, off by default (`protocol_options: [...]`), each
with its reason in PROTOCOL_OPTIONS.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from embedprobe.core.config import lookup, resolve_roots
from embedprobe.core.errors import UsageError
from embedprobe.core.variants import BCI_TASKS, NO_FILTERING
from embedprobe.datasets.registry import entry_reader, entry_root, labelling_task_name
from embedprobe.pipeline.filters import FilterStep, describe

if TYPE_CHECKING:
    from embedprobe.models.registry import ModelSpec

PROTOCOLS = ("reference",)
# Named deviations from the reference: name -> why a user may want it.
PROTOCOL_OPTIONS = {
    "continuous_resampling": (
        "each recording's stretch resampled as one signal, then cut (the windows equal the "
        "whole recording's resampling) instead of each window resampled on its own: no "
        "resampling transient at a window's edges"),
    "window_percentile": (
        "BIOT: each window divided by its own 95th percentile of |x| (BIOT's paper loaders) "
        "instead of the recording's: a window's scale does not depend on the rest of the "
        "night, and no recording-wide pass is needed"),
}
# What became a BCI benchmark's variant: the option's fix names it.
MOVED_OPTIONS = {"no_filtering": "run the BCI benchmark's variant: --config "
                                 "variants=no_filtering (or no_filtering_token_flattening; its "
                                 "`variants:` in config/benchmarks.yaml lists those it can run)"}
HIGHPASS_HZ = 0.5  # the reference's common protocol (REFERENCE.md, its user guide)
RECORDING_Q95 = "recording_q95"
# The reference's REVE and ST-EEGFormer inputs (NeuroAtlas backbones/reve.py, steegformer.py,
# _prepare_input): each channel z-scored with its whole recording's mean and SD; REVE's then
# clipped at +-15 SD. A model entry asks for one as its scaling.
RECORDING_ZSCORE = "recording_zscore"
RECORDING_ZSCORE_CLIP15 = "recording_zscore_clip15"
RECORDING_NORMALISATIONS = (RECORDING_Q95, RECORDING_ZSCORE, RECORDING_ZSCORE_CLIP15)
# How windows reach the model's rate: each window on its own with scipy's resample_poly (the
# reference's model wrappers), a whole run with MNE's FFT resampling (its BCI loaders), or a
# recording's stretch as one signal (continuous_resampling).
EACH_WINDOW, WHOLE_MNE, CONTINUOUS = "each_window", "whole_mne", "continuous"


@dataclass(frozen=True)
class Preprocessing:
    """Everything between the recorded signal and the model's input besides resampling."""

    filters: tuple[FilterStep, ...] = ()
    # filter each recording whole (motor imagery: short runs, a filter reaching tens of
    # seconds); otherwise a stretch with the filters' reach on each side is filtered
    whole_recordings: bool = False
    centre_windows: bool = False  # each window's mean removed per channel (BIOT's wrapper)
    normalisation: str | None = None  # one of RECORDING_NORMALISATIONS, or None
    scaling: str = "none"  # the model's amplitude convention (preprocess.scale)
    # the recorded channels whose mean each of them loses before the filters (motor imagery:
    # every EEG channel of the recording, whichever the model reads)
    average_reference: tuple[str, ...] = ()
    resampling: str = EACH_WINDOW

    def key(self) -> dict:
        """The part of the embeddings' cache key these steps make."""
        return {"filters": describe(self.filters), "whole_recordings": self.whole_recordings,
                "centre_windows": self.centre_windows, "normalisation": self.normalisation,
                "scaling": self.scaling, "average_reference": list(self.average_reference),
                "resampling": self.resampling}


def protocol_options(config: dict) -> tuple[str, ...]:
    """The run's named deviations, checked."""
    name = config["protocol"]
    if name not in PROTOCOLS:
        raise UsageError(f"protocol: {name!r} is not one of {', '.join(PROTOCOLS)}",
                         fix="set protocol: reference (deviations are protocol_options)")
    options = tuple(config["protocol_options"])
    moved = [o for o in options if o in MOVED_OPTIONS]
    if moved:
        raise UsageError(f"protocol_options: {moved[0]!r} is a BCI variant now, chosen per "
                         "benchmark", fix=MOVED_OPTIONS[moved[0]])
    unknown = [o for o in options if o not in PROTOCOL_OPTIONS]
    if unknown:
        raise UsageError(f"protocol_options: unknown {', '.join(map(repr, unknown))}",
                         fix=f"use any of {', '.join(PROTOCOL_OPTIONS)} (or none)")
    return options


def entry_line_freq(dataset: str, entry: dict) -> float:
    """line_freq of a dataset's config entry."""
    if "line_freq" not in entry:
        raise UsageError(f"dataset '{dataset}' has no line_freq (the powerline frequency the "
                         f"reference protocol notches)",
                         fix=f"add `line_freq: 50` (Europe, most of Asia) or `line_freq: 60` "
                             f"(the Americas) to datasets.{dataset} in config/datasets.yaml")
    return float(entry["line_freq"])


def preprocessing(config: dict, dataset: str, spec: ModelSpec) -> Preprocessing:
    """The steps (dataset, model) windows go through under the run's protocol."""
    return entry_preprocessing(config, dataset, lookup(config, "datasets", dataset), spec)


def entry_preprocessing(config: dict, dataset: str, entry: dict, spec: ModelSpec
                        ) -> Preprocessing:
    """preprocessing of a dataset's config entry."""
    options = protocol_options(config)
    task = labelling_task_name(entry)
    if task in BCI_TASKS:
        steps = Preprocessing(entry_bci_filters(dataset, entry, spec, task),
                              whole_recordings=True,
                              average_reference=entry_average_reference(config, entry),
                              resampling=WHOLE_MNE)
    else:
        steps = Preprocessing((FilterStep("highpass", (HIGHPASS_HZ,)),
                               FilterStep("notch", (entry_line_freq(dataset, entry),))))
    if "continuous_resampling" in options:
        steps = replace(steps, resampling=CONTINUOUS)
    if spec.scaling == "percentile95" and task in BCI_TASKS:
        # the reference's BIOT wrapper: a BCI trial divided by its own 95th percentile
        return replace(steps, centre_windows=True, scaling=spec.scaling)
    if spec.scaling == "percentile95" and "window_percentile" not in options:
        return replace(steps, centre_windows=True, normalisation=RECORDING_Q95)
    if spec.scaling in (RECORDING_ZSCORE, RECORDING_ZSCORE_CLIP15):
        return replace(steps, normalisation=spec.scaling)
    return replace(steps, scaling=spec.scaling)


def bci_filters(config: dict, dataset: str, spec: ModelSpec,
                task: str = "motor_imagery") -> tuple[FilterStep, ...]:
    return entry_bci_filters(dataset, lookup(config, "datasets", dataset), spec, task)


def entry_bci_filters(dataset: str, entry: dict, spec: ModelSpec,
                      task: str = "motor_imagery") -> tuple[FilterStep, ...]:
    """A BCI task's filters over whole runs at the recorded rate, as the reference prepares a
    trial for the model's family: MNE's FIR notch at the family's notch frequency and its
    harmonics below Nyquist, then MNE's FIR band-pass at the task's confound band
    (CONFOUND_BANDS; the model's `bci_filtering: none`, the no_filtering variants: the
    family's own band). The reference's common average reference is not a filter of the
    model's inputs: `bci_average_reference`."""
    form = bci_format(spec)
    notch = form.notch_hz if form.notch_hz is not None else entry_line_freq(dataset, entry)
    if spec.bci_filtering == NO_FILTERING:
        band = form.band_hz
    else:
        low, high = CONFOUND_BANDS[task]
        band = (form.band_hz[0] if low is None else low, high)
    if band[1] is None:  # SSVEP: the stimulus harmonics stay in
        return (FilterStep("mne_notch", (notch,)), FilterStep("mne_highpass", band[:1]))
    return (FilterStep("mne_notch", (notch,)), FilterStep("mne_bandpass", band))


@dataclass(frozen=True)
class BCIFormat:
    """A family's BCI input in the reference (its dataio/bci_formats.py `Format`)."""

    band_hz: tuple[float, float]  # the model's own band: the no_filtering variants
    rate: float  # the rate the trials are resampled to
    notch_hz: float | None  # None: the dataset's powerline frequency (`line_freq`)


# The reference's formats (src/neuroatlas/extensions/datasets/dataio/bci_formats.py FORMATS,
# FAMILY_FORMAT, DEFAULT_FORMAT; its user guide, docs/guide/benchmarks.md "BCI variants").
BCI_FORMATS = {
    "labram": BCIFormat((0.1, 75.0), 200.0, 50.0),  # every family not listed below
    "bendr": BCIFormat((0.5, 70.0), 256.0, None),
    "steegformer": BCIFormat((0.1, 64.0), 128.0, None),
}
BCI_FAMILY_FORMAT = {"eegpt": "bendr", "steegformer": "steegformer", "sleepfm": "steegformer",
                     # not in the reference, which has no BENDR, LUNA or Signal-JEPA wrapper:
                     # the format at each model's own rate (BENDR and LUNA 256 Hz, Signal-JEPA
                     # 128 Hz)
                     "bendr": "bendr", "luna": "bendr", "signal_jepa": "steegformer"}
# Confound filtering by BCI task, the default variant (moabb_loader.py CONFOUND_FILTERING; its
# guide, "BCI variants"): (low, high) in place of the format's band; None low: the format's
# own high-pass, None high: no low-pass. Motor imagery 4-40 Hz, its trial from 1 s after the
# cue (the dataset's trial_offset_seconds, not a filter); ERP 0.5-40 Hz; SSVEP a high-pass
# alone, so the stimulus harmonics stay in; cognitive 4-40 Hz.
MI_CONFOUND_BAND_HZ = (4.0, 40.0)
CONFOUND_BANDS = {"motor_imagery": MI_CONFOUND_BAND_HZ, "bci_erp": (0.5, 40.0),
                  "bci_ssvep": (None, None), "bci_cognitive": (4.0, 40.0)}


def bci_format(spec: ModelSpec) -> BCIFormat:
    """The family's BCI format; its rate must be the model's, where our windows are made."""
    form = BCI_FORMATS[BCI_FAMILY_FORMAT.get(spec.family.lower(), "labram")]
    if float(spec.sfreq) != form.rate:
        raise UsageError(
            f"model family '{spec.family}' runs at {spec.sfreq:g} Hz, but the reference "
            f"prepares its BCI trials at {form.rate:g} Hz",
            fix="name the family's BCI format in BCI_FAMILY_FORMAT "
                "(workflow/embedprobe/pipeline/protocol.py)")
    return form


def bci_average_reference(config: dict, dataset: str) -> tuple[str, ...]:
    """The recorded channels whose mean the reference subtracts from each EEG channel (its
    set_eeg_reference(ref_channels="average", ch_type="eeg") after picking the recording's EEG
    channels, before any model's channel selection): every EEG channel of the dataset's
    format, whichever of them the model reads (BIOT reads 18 of BNCI 2014-001's 22)."""
    return entry_average_reference(config, lookup(config, "datasets", dataset))


def entry_average_reference(config: dict, entry: dict) -> tuple[str, ...]:
    """bci_average_reference of a dataset's config entry: its format's EEG channels, or where
    they differ by dataset (format moabb: each MOABB class has its own) what the reader finds
    in the dataset's files (`eeg_channels(entry, root)`)."""
    reader = entry_reader(entry)
    if hasattr(reader, "eeg_channels"):
        return tuple(reader.eeg_channels(entry, entry_root(resolve_roots(config), entry)))
    return tuple(getattr(reader, "EEG_CHANNELS", reader.CHANNELS))
