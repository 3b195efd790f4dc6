"""A Bonn EEG look-alike: one text file per 23.6 s clip, laid out as the five zips unpack.

    <root>/Z/Z001.txt ...   <root>/O/O001.txt ...   <root>/N/N001.TXT ... (upper case, as n.zip)
    <root>/F/F001.txt ...   <root>/S/S001.txt ...   <root>/MANIFEST.tsv (written last)

Each file holds 4097 integer samples (microvolts), one per line, CRLF line ends, no header: the
distributed files' format (datasets/bonn/reader.py). Settings (the dataset's `generator:`
entry): clips_per_set (100, as the real sets), sets (the five, Z O N F S), seed (0).

Signals, each clip with its own random traits (every clip is its own subject), band-limited to
the recordings' 0.53-40 Hz:
  Z  1/f background (25-45 uV RMS), a little alpha and beta (eyes open)
  O  the same background with strong waxing and waning alpha, 8.5-11 Hz (eyes closed)
  N  steeper 1/f intracranial background (45-80 uV RMS) with theta
  F  as N, a little larger (50-90 uV), with 0-3 interictal spikes
  S  an intracranial background under rhythmic spike-and-wave discharges (a sharp spike and a
     slow wave per cycle, 3-8 Hz drifting by up to 10%, 3.5-5 x the background's RMS) over the
     whole clip: the ictal signature is 3-5 x the amplitude and a harmonic spectrum, so it
     survives per-window scaling. All clips have the same length: no class shows in it.
The same settings write the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.fft

from embedprobe.core.errors import UsageError
from embedprobe.datasets.bonn import reader as bonn
from embedprobe.datasets.synth.files import start_rewrite, with_defaults, write_manifest

DEFAULTS = {"clips_per_set": bonn.CLIPS_PER_SET, "sets": list(bonn.SETS), "seed": 0}
STREAM = 7  # the look-alikes of one seed draw different signals
BAND_HZ = (0.53, 40.0)  # the recordings' band-pass
LINE_END = b"\r\n"


@dataclass(frozen=True)
class ClipPlan:
    set: str  # "Z" ... "S"
    number: int  # 1-based

    @property
    def recording(self) -> str:
        return f"{self.set}{self.number:03d}"

    @property
    def relative(self) -> str:
        """The file under root, as the reader finds it."""
        return f"{self.set}/{bonn.clip_name(self.set, self.number)}"

    @property
    def label(self) -> str:
        return "ictal" if self.set in bonn.ICTAL_SETS else "non_ictal"


def settings_of(settings: dict) -> dict:
    out = with_defaults(settings, DEFAULTS, "Bonn")
    if not 1 <= int(out["clips_per_set"]) <= bonn.CLIPS_PER_SET:
        raise UsageError(f"clips_per_set={out['clips_per_set']}: a Bonn set holds clips "
                         f"001-{bonn.CLIPS_PER_SET}", fix=f"choose 1..{bonn.CLIPS_PER_SET}")
    sets = list(out["sets"])
    if not sets or len(set(sets)) != len(sets) or set(sets) - set(bonn.SETS):
        raise UsageError(f"sets={out['sets']}: the Bonn sets are {', '.join(bonn.SETS)}, "
                         "each once", fix="list some of Z, O, N, F, S")
    return out | {"sets": [s for s in bonn.SETS if s in sets]}


def plan(settings: dict) -> list[ClipPlan]:
    """Every clip's set and number (its label follows from the set), in the reader's order."""
    s = settings_of(settings)
    clips = [ClipPlan(letter, n) for letter in s["sets"]
             for n in range(1, int(s["clips_per_set"]) + 1)]
    return sorted(clips, key=lambda c: c.recording)


# ------------------------------------------------------------------------------ the signals


def _shaped_noise(rng, shape) -> np.ndarray:
    """Gaussian noise of one clip whose amplitude spectrum is shape(freqs), RMS 1."""
    freqs = scipy.fft.rfftfreq(bonn.N_SAMPLES, 1 / bonn.SFREQ)
    spectrum = rng.standard_normal(len(freqs)) + 1j * rng.standard_normal(len(freqs))
    out = scipy.fft.irfft(spectrum * shape(freqs), bonn.N_SAMPLES)
    return out / max(float(out.std()), 1e-12)


def _one_over_f(exponent: float):
    """Amplitude spectrum of 1/f^exponent power, from 0.5 Hz."""
    return lambda f: np.where(f >= 0.5, np.maximum(f, 0.5) ** (-exponent / 2), 0.0)


def _bump(centre: float, width: float):
    return lambda f: np.exp(-0.5 * ((f - centre) / width) ** 2)


def _envelope(rng, depth: float) -> np.ndarray:
    """A slow 0..1 waxing and waning (below 0.5 Hz), 1 - depth at its lowest."""
    slow = _shaped_noise(rng, lambda f: (f > 0) & (f < 0.5))
    span = slow.max() - slow.min()
    return 1 - depth + depth * (slow - slow.min()) / max(float(span), 1e-12)


def _spike_and_wave(phase: np.ndarray) -> np.ndarray:
    """Per cycle (phase in cycles) a sharp negative spike then a broad positive wave; zero mean,
    unit RMS over a cycle."""
    def cycle(p):
        return -np.exp(-((p - 0.1) / 0.035) ** 2) + 0.6 * np.exp(-((p - 0.5) / 0.17) ** 2)

    grid = cycle(np.linspace(0, 1, 2048, endpoint=False))
    return (cycle(np.mod(phase, 1.0)) - grid.mean()) / grid.std()


def _background(rng, rms: tuple[float, float], exponent: tuple[float, float]) -> np.ndarray:
    return rng.uniform(*rms) * _shaped_noise(rng, _one_over_f(rng.uniform(*exponent)))


def _rhythm(rng, centre: tuple[float, float], width: float, share: tuple[float, float],
            level: float, depth: float) -> np.ndarray:
    """A narrow band rhythm (alpha, theta, beta) of `share` x `level` RMS that waxes and wanes."""
    band = _shaped_noise(rng, _bump(rng.uniform(*centre), width))
    return rng.uniform(*share) * level * band * _envelope(rng, depth)


def _interictal_spikes(rng, level: float, count: int) -> np.ndarray:
    out = np.zeros(bonn.N_SAMPLES)
    t = np.arange(-40, 41) / bonn.SFREQ
    for at in rng.integers(50, bonn.N_SAMPLES - 50, count):
        width = rng.uniform(0.012, 0.025)
        wave = -np.exp(-(t / width) ** 2) + 0.35 * np.exp(-((t - 0.09) / 0.05) ** 2)
        out[at - 40: at + 41] += rng.uniform(3, 5) * level * wave
    return out


def _seizure(rng, level: float) -> np.ndarray:
    """Rhythmic spike-and-wave over the clip: 3-8 Hz drifting by up to 10%, waxing and waning."""
    rate = rng.uniform(3, 8) * (1 + 0.1 * np.clip(_shaped_noise(rng, lambda f: f < 0.3), -1, 1))
    phase = np.cumsum(rate) / bonn.SFREQ + rng.uniform()
    return rng.uniform(3.5, 5) * level * _spike_and_wave(phase) * _envelope(rng, 0.3)


def _band_pass(signal: np.ndarray) -> np.ndarray:
    freqs = scipy.fft.rfftfreq(len(signal), 1 / bonn.SFREQ)
    keep = (freqs >= BAND_HZ[0]) & (freqs <= BAND_HZ[1])
    return scipy.fft.irfft(scipy.fft.rfft(signal) * keep, len(signal))


def synthesize(clip: ClipPlan, seed: int) -> np.ndarray:
    """The clip's 4097 samples in microvolts, rounded to integers (as the files hold them)."""
    rng = np.random.default_rng([seed, STREAM, bonn.SETS.index(clip.set), clip.number])
    if clip.set in ("Z", "O"):  # surface
        x = _background(rng, (25, 45), (0.8, 1.2))
        level = float(x.std())
        alpha = ((0.1, 0.25), 0.7) if clip.set == "Z" else ((0.6, 0.9), 0.6)
        x += _rhythm(rng, (8.5, 11), 0.6, alpha[0], level, alpha[1])
        x += _rhythm(rng, (16, 24), 3.0, (0.05, 0.15), level, 0.5)
    else:  # intracranial
        x = _background(rng, (50, 90) if clip.set == "F" else (45, 80), (1.4, 1.9))
        level = float(x.std())
        x += _rhythm(rng, (4.5, 7), 1.0, (0.2, 0.4), level, 0.5)
        if clip.set == "F":
            x += _interictal_spikes(rng, level, int(rng.integers(0, 4)))
        if clip.set == "S":
            x += _seizure(rng, level)
    return np.round(_band_pass(x))


def clip_bytes(samples: np.ndarray) -> bytes:
    return b"".join(b"%d" % v + LINE_END for v in samples.astype(np.int64))


def write_lookalike(root: Path, settings: dict) -> list[Path]:
    """Write the look-alike under root; the files written, MANIFEST.tsv last."""
    s = settings_of(settings)
    root = Path(root)
    clips = plan(s)
    start_rewrite(root, (c.relative for c in clips), "*.[tT][xX][tT]", "Bonn clip text")
    files = []
    for letter in s["sets"]:  # the sets in the paper's order, as the zips come
        for clip in (c for c in clips if c.set == letter):
            path = root / clip.relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(clip_bytes(synthesize(clip, s["seed"])))
            files.append(path)
    return [*files, write_manifest(root, files)]
